"""The reaper and the operators' reset and requeue (tuna.jobs.requeue)."""

from __future__ import annotations

import pytest

from tests.support.seed import (
    KERNEL,
    expire_leases,
    job_row,
    seed,
)
from tuna.backends import CompileOutcome, EvalOutcome, FindResult
from tuna.db.enums import JobState
from tuna.jobs import (
    IllegalTransition,
    JobFilter,
    Phase,
    claim_jobs,
    reap_expired,
    record_outcome,
    requeue_jobs,
    reset_jobs,
)

S = JobState


def test_the_reaper_returns_expired_jobs_to_their_stable_state(db):
    sd = seed(db, configs=3, solvers=["NoopDirect"])
    c, e, keep = claim_jobs(db, sd.session, Phase.COMPILE, owner="host:1:ab", limit=3)
    record_outcome(db, "host:1:ab", e, CompileOutcome())
    [e] = claim_jobs(db, sd.session, Phase.EVAL, owner="host:1:ab")
    expire_leases(db, [c.id, e.id])
    reaped = reap_expired(db)
    assert sorted(reaped.returned) == sorted([c.id, e.id]) and reaped.errored == []
    rc, re_, rk = (job_row(db, j.id) for j in (c, e, keep))
    assert (rc.state, rc.retries, rc.lease_owner, rc.attempt) == (S.NEW, 1, None, 1)
    assert (re_.state, re_.retries, re_.attempt) == (S.COMPILED, 1, 2)
    assert rc.reason == "lease expired; last owner host:1:ab"
    assert (rk.state, rk.lease_owner) == (S.COMPILE_START, "host:1:ab")
    assert len(reap_expired(db)) == 0


def test_the_reaper_errors_a_job_past_the_retry_cap(db):
    sd = seed(db, configs=1, solvers=["NoopDirect"])
    for tries in (1, 2):
        [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner=f"h:{tries}:x")
        expire_leases(db)
        reaped = reap_expired(db, max_retries=1)
    assert reaped.errored == [job.id]
    row = job_row(db, job.id)
    assert (row.state, row.retries, row.attempt) == (S.ERRORED, 2, 2)
    assert row.reason == "lease expired; last owner h:2:x (gave up after 2 tries)"


def _errored(db, sd, reasons):
    for reason in reasons:
        [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
        record_outcome(db, "w", job, CompileOutcome.failed(reason), max_retries=0)


def test_reset_filters_by_reason_substring_and_keeps_the_fence(db):
    sd = seed(db, configs=3, solvers=["NoopDirect"])
    _errored(db, sd, ["100% timeout", "segfault", "another 100% timeout"])
    n = reset_jobs(db, JobFilter(session=sd.session, reason="100% t"))
    assert n == 2
    rows = [job_row(db, j) for j in sd.jobs]
    assert [(r.state, r.retries, r.attempt, r.reason) for r in rows] == [
        (S.NEW, 0, 1, None),
        (S.ERRORED, 1, 1, "segfault (gave up after 1 try)"),
        (S.NEW, 0, 1, None),
    ]
    assert reset_jobs(db, JobFilter(session=sd.session, reason="100% t")) == 0


def test_reset_filters_by_label_and_session(db):
    a = seed(db, configs=1, solvers=["NoopDirect"], label="x")
    b = seed(db, configs=1, solvers=["NoopDirect"], label="y")
    for sd in (a, b):
        _errored(db, sd, ["bad"])
    assert reset_jobs(db, JobFilter(label="y")) == 1
    assert job_row(db, a.jobs[0]).state is S.ERRORED
    assert job_row(db, b.jobs[0]).state is S.NEW


def test_operators_refuse_in_flight_states_before_writing(db):
    sd = seed(db, configs=2, solvers=["NoopDirect"])
    _errored(db, sd, ["bad"])
    claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    with pytest.raises(IllegalTransition, match="compile_start -> new"):
        reset_jobs(db, JobFilter(session=sd.session, states=(S.ERRORED, S.COMPILE_START)))
    with pytest.raises(IllegalTransition, match="new -> compiled"):
        requeue_jobs(db, JobFilter(session=sd.session, states=(S.NEW,)))
    assert job_row(db, sd.jobs[0]).state is S.ERRORED


def test_requeue_sends_evaluated_and_eval_errored_jobs_back_to_compiled(db):
    sd = seed(db, configs=3, solvers=["NoopDirect"])
    _errored(db, sd, ["cc failed"])  # job 0: errored in compile
    for _ in range(2):
        [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
        record_outcome(db, "w", job, CompileOutcome(kernels=(KERNEL,), payload="P"))
    a, b = claim_jobs(db, sd.session, Phase.EVAL, owner="w", limit=2)
    record_outcome(db, "w", a, EvalOutcome(find=FindResult(1.0, 0, "direct")))
    record_outcome(db, "w", b, EvalOutcome.failed("wrong"), max_retries=0)
    assert requeue_jobs(db, JobFilter(session=sd.session)) == 2
    rows = [job_row(db, j) for j in sd.jobs]
    assert [r.state for r in rows] == [S.ERRORED, S.COMPILED, S.COMPILED]
    assert all(r.result == "P" and r.eval_end is None and r.retries == 0 for r in rows[1:])
    assert [j.attempt for j in claim_jobs(db, sd.session, Phase.EVAL, owner="w", limit=5)] == [3, 3]
