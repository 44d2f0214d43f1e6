from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from tests.support.seed import (
    ALL_NOOP_SOLVERS,
    expire_leases,
    force_state,
    job_row,
    seed,
)
from tuna.backends import CompileOutcome, EvalOutcome, FindResult, KernelBinary, PerfResult
from tuna.db.enums import JobState
from tuna.db.models import FindDb, JobKernel, KernelCache, PerfDb
from tuna.jobs import (
    TRANSITIONS,
    IllegalTransition,
    JobFilter,
    LostLease,
    Phase,
    claim_jobs,
    compare_and_set,
    extend_leases,
    job_counts,
    reap_expired,
    record_and_claim,
    record_outcome,
    record_outcomes,
    release_jobs,
    requeue_jobs,
    reset_jobs,
)

S = JobState
ALL_PAIRS = list(itertools.product(JobState, JobState))
KERNEL = KernelBinary("k", "-DX", b"\x7fELF kernel bytes")


def count(db, model) -> int:
    with db.session() as s:
        return s.execute(select(func.count()).select_from(model)).scalar_one()


def db_now(db):
    with db.session() as s:
        if db.is_sqlite:
            return s.execute(text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")).scalar_one()
        return s.execute(text("SELECT NOW(6)")).scalar_one()


# --- the transition table -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frm", "to"), ALL_PAIRS, ids=[f"{a.value}->{b.value}" for a, b in ALL_PAIRS]
)
def test_every_state_pair_is_allowed_or_refused(lite, frm, to):
    job = seed(lite, configs=1, solvers=["NoopDirect"]).jobs[0]
    force_state(lite, job, frm.value)
    with lite.session() as s:
        if (frm, to) in TRANSITIONS:
            assert compare_and_set(s, [job], from_state=frm, to_state=to) == 1
        else:
            with pytest.raises(IllegalTransition, match=f"{frm.value} -> {to.value}"):
                compare_and_set(s, [job], from_state=frm, to_state=to)
    assert job_row(lite, job).state is (to if (frm, to) in TRANSITIONS else frm)


def test_the_table_is_the_documented_machine():
    # Stable states are only left by a claim or an operator; running states only by a worker.
    for (frm, to), event in TRANSITIONS.items():
        if frm in (S.COMPILE_START, S.EVAL_START):
            assert event in ("complete", "retry", "give_up", "not_applicable")
        elif to in (S.COMPILE_START, S.EVAL_START):
            assert event == "claim"
        else:
            assert event in ("reset", "requeue")
    assert {to for (frm, to) in TRANSITIONS if frm is S.NEW} == {S.COMPILE_START}
    assert {to for (frm, to) in TRANSITIONS if frm is S.COMPILE_START} == {
        S.COMPILED,
        S.EVALUATED,  # a search's build: compile-phase work only
        S.NEW,
        S.ERRORED,
        S.NOT_APPLICABLE,
    }
    assert {to for (frm, to) in TRANSITIONS if frm is S.EVAL_START} == {
        S.EVALUATED,
        S.COMPILED,
        S.ERRORED,
        S.NOT_APPLICABLE,
    }


def test_a_wrong_from_state_changes_nothing(lite):
    job = seed(lite, configs=1, solvers=["NoopDirect"]).jobs[0]
    with lite.session() as s:
        assert compare_and_set(s, [job], from_state=S.COMPILED, to_state=S.EVAL_START) == 0
    assert job_row(lite, job).state is S.NEW


def test_nothing_outside_the_state_machine_assigns_job_state():
    # A line that names another table's state (a search's, in its JSON listing) says so
    # with a trailing ``# not job.state``.
    root = Path(__file__).resolve().parents[2] / "tuna"
    pattern = re.compile(r"\.state\s*=[^=]|values\([^)]*\bstate\s*=|[\"']state[\"']\s*:")
    offenders = [
        f"{p.relative_to(root)}:{n}"
        for p in root.rglob("*.py")
        if p != root / "jobs" / "states.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line) and "# not job.state" not in line
    ]
    assert offenders == []


# --- claims ---------------------------------------------------------------------------------------


def test_claim_takes_lowest_priority_then_id_and_starts_a_lease(db):
    sd = seed(db, configs=3, solvers=["NoopDirect", "NoopTunable"], priorities=[5, 5, 1, 1, 0, 9])
    before = db_now(db)
    jobs = claim_jobs(db, sd.session, Phase.COMPILE, owner="w1", limit=3, lease_seconds=30, gpu=2)
    assert [j.id for j in jobs] == [sd.jobs[4], sd.jobs[2], sd.jobs[3]]
    assert all(j.attempt == 1 and j.phase is Phase.COMPILE for j in jobs)
    row = job_row(db, jobs[0].id)
    assert (row.state, row.attempt, row.lease_owner, row.gpu) == (S.COMPILE_START, 1, "w1", 2)
    assert row.compile_start is not None and row.compile_end is None
    # The lease runs on the database clock: about 30 s after the claim.
    assert 29 <= (row.lease_expires - row.compile_start).total_seconds() <= 31
    assert str(row.compile_start) >= str(before)[:19]
    # Claimed rows are skipped by the next claim.
    more = claim_jobs(db, sd.session, Phase.COMPILE, owner="w2", limit=10)
    assert {j.id for j in more} == set(sd.jobs) - {j.id for j in jobs}
    assert claim_jobs(db, sd.session, Phase.COMPILE, owner="w3", limit=10) == []


def test_eval_claims_read_compiled_jobs_and_carry_the_compile_payload(db):
    sd = seed(db, configs=2, solvers=["NoopDirect"])
    jobs = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=1)
    record_outcome(db, "w", jobs[0], CompileOutcome(payload="P", kernels=(KERNEL,)))
    evals = claim_jobs(db, sd.session, Phase.EVAL, owner="w", limit=5)
    assert [(j.id, j.attempt, j.payload) for j in evals] == [(jobs[0].id, 2, "P")]
    assert job_row(db, jobs[0].id).state is S.EVAL_START


def test_claims_only_read_their_session(db):
    a = seed(db, configs=1, solvers=["NoopDirect"])
    b = seed(db, configs=1, solvers=["NoopDirect"])
    assert [j.id for j in claim_jobs(db, b.session, Phase.COMPILE, owner="w", limit=5)] == b.jobs
    assert job_row(db, a.jobs[0]).state is S.NEW


# --- recording outcomes ---------------------------------------------------------------------------


def test_compile_stores_identical_kernels_once_and_links_every_job(db):
    sd = seed(db, configs=3, solvers=["NoopDirect"])
    jobs = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=3)
    rec = record_outcomes(
        db, "w", [(j, CompileOutcome(kernels=(KERNEL,), payload=str(j.id))) for j in jobs]
    )
    assert rec.lost == [] and set(rec.states.values()) == {S.COMPILED}
    assert count(db, KernelCache) == 1
    assert count(db, JobKernel) == 3
    row = job_row(db, jobs[0].id)
    assert (row.state, row.result, row.lease_owner, row.lease_expires) == (
        S.COMPILED,
        str(jobs[0].id),
        None,
        None,
    )
    assert row.compile_end >= row.compile_start
    with db.session() as s:
        kc = s.execute(select(KernelCache)).scalar_one()
    assert (kc.kernel_name, kc.kernel_args, kc.uncompressed_size) == (
        "k",
        "-DX",
        len(KERNEL.binary),
    )


def test_recompiling_replaces_the_jobs_kernel_links(db):
    sd = seed(db, configs=1, solvers=["NoopDirect"])
    other = KernelBinary("k2", "", b"other")
    for kernels in ((KERNEL,), (KERNEL, other)):
        [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
        record_outcome(db, "w", job, CompileOutcome(kernels=kernels))
        reset_jobs(db, JobFilter(session=sd.session, states=(S.COMPILED,)))
    assert count(db, JobKernel) == 2 and count(db, KernelCache) == 2


def test_eval_upserts_perf_and_find_rows_with_the_job(db):
    sd = seed(db, configs=1, solvers=["NoopTunable"])
    for params, time_ms in (("2x8", 1.5), ("4x16", 0.5)):
        [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
        record_outcome(db, "w", job, CompileOutcome(kernels=(KERNEL,)))
        [job] = claim_jobs(db, sd.session, Phase.EVAL, owner="w")
        outcome = EvalOutcome(
            perf=PerfResult(params), find=FindResult(time_ms, 64, "implicit_gemm", params)
        )
        assert record_outcome(db, "w", job, outcome) is S.EVALUATED
        reset_jobs(db, JobFilter(session=sd.session, states=(S.EVALUATED,)))
    with db.session() as s:
        perf = s.execute(select(PerfDb)).scalar_one()
        find = s.execute(select(FindDb)).scalar_one()
    assert (perf.params, perf.job, perf.config, perf.solver) == (
        "4x16",
        sd.jobs[0],
        sd.configs[0],
        sd.solvers["NoopTunable"],
    )
    assert (find.time_ms, find.workspace, find.algorithm, find.params) == (
        0.5,
        64,
        "implicit_gemm",
        "4x16",
    )


def test_a_failure_is_retried_then_errored_with_its_reason(db):
    sd = seed(db, configs=1, solvers=["NoopDirect"])
    for tries in (1, 2, 3):
        [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
        state = record_outcome(db, "w", job, CompileOutcome.failed("cc: boom"), max_retries=2)
        row = job_row(db, job.id)
        assert (row.retries, row.attempt, row.lease_owner) == (tries, tries, None)
        if tries < 3:
            assert state is S.NEW and row.reason == "cc: boom"
        else:
            assert state is S.ERRORED and row.reason == "cc: boom (gave up after 3 tries)"
    assert count(db, KernelCache) == 0


def test_an_eval_failure_returns_to_compiled_and_keeps_the_compile(db):
    sd = seed(db, configs=1, solvers=["NoopDirect"])
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    record_outcome(db, "w", job, CompileOutcome(kernels=(KERNEL,), payload="P"))
    [job] = claim_jobs(db, sd.session, Phase.EVAL, owner="w")
    assert record_outcome(db, "w", job, EvalOutcome.failed("wrong result")) is S.COMPILED
    row = job_row(db, job.id)
    assert (row.result, row.retries, row.reason) == ("P", 1, "wrong result")
    assert row.compile_end is not None and row.eval_end is None
    assert count(db, JobKernel) == 1 and count(db, FindDb) == 0


def test_completing_a_phase_clears_its_retries(db):
    sd = seed(db, configs=1, solvers=["NoopDirect"])
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    record_outcome(db, "w", job, CompileOutcome.failed("flaky"))
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    record_outcome(db, "w", job, CompileOutcome())
    row = job_row(db, job.id)
    assert (row.state, row.retries, row.reason, row.attempt) == (S.COMPILED, 0, None, 2)


def test_not_applicable_is_final_with_its_reason(db):
    sd = seed(db, configs=1, solvers=["NoopGemm1x1"])
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    state = record_outcome(db, "w", job, CompileOutcome.inapplicable("filter is not 1x1"))
    assert state is S.NOT_APPLICABLE
    assert job_row(db, job.id).reason == "filter is not 1x1"


# --- fencing --------------------------------------------------------------------------------------


def test_a_stale_attempt_writes_nothing_and_loses_its_lease(db):
    sd = seed(db, configs=1, solvers=["NoopTunable"])
    [old] = claim_jobs(db, sd.session, Phase.COMPILE, owner="old", lease_seconds=30)
    expire_leases(db)
    reap_expired(db)
    [new] = claim_jobs(db, sd.session, Phase.COMPILE, owner="new", lease_seconds=30)
    assert (old.id, old.attempt, new.attempt) == (new.id, 1, 2)
    with pytest.raises(LostLease, match=f"job {old.id}: lease lost by old"):
        record_outcome(db, "old", old, CompileOutcome(kernels=(KERNEL,), payload="stale"))
    row = job_row(db, old.id)
    assert (row.state, row.attempt, row.lease_owner, row.result) == (
        S.COMPILE_START,
        2,
        "new",
        None,
    )
    assert count(db, KernelCache) == 0 and count(db, JobKernel) == 0
    # The current holder's write still goes through.
    assert record_outcome(db, "new", new, CompileOutcome(kernels=(KERNEL,))) is S.COMPILED


def test_a_late_write_after_the_reaper_is_rejected(db):
    sd = seed(db, configs=1, solvers=["NoopTunable"])
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", lease_seconds=30)
    record_outcome(db, "w", job, CompileOutcome(kernels=(KERNEL,)))
    [job] = claim_jobs(db, sd.session, Phase.EVAL, owner="w", lease_seconds=30)
    expire_leases(db)
    assert reap_expired(db).returned == [job.id]
    late = EvalOutcome(perf=PerfResult("1x8"), find=FindResult(1.0, 0, "gemm"))
    with pytest.raises(LostLease):
        record_outcome(db, "w", job, late)
    row = job_row(db, job.id)
    assert (row.state, row.retries) == (S.COMPILED, 1)
    assert count(db, PerfDb) == 0 and count(db, FindDb) == 0


def test_a_batch_records_the_jobs_still_held_and_drops_the_lost_one(db):
    sd = seed(db, configs=2, solvers=["NoopDirect"])
    a, b = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=2)
    expire_leases(db, [b.id])
    reap_expired(db)
    rec = record_outcomes(
        db, "w", [(a, CompileOutcome(kernels=(KERNEL,))), (b, CompileOutcome(kernels=(KERNEL,)))]
    )
    assert (rec.states, rec.lost) == ({a.id: S.COMPILED}, [b.id])
    assert count(db, JobKernel) == 1


def test_an_expired_but_unreaped_lease_still_records(db):
    sd = seed(db, configs=1, solvers=["NoopDirect"])
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    expire_leases(db)
    assert record_outcome(db, "w", job, CompileOutcome()) is S.COMPILED


def test_record_and_claim_records_then_claims_in_one_transaction(db):
    sd = seed(db, configs=3, solvers=["NoopDirect"])
    [first] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    rec, [second] = record_and_claim(
        db, "w", [(first, CompileOutcome(kernels=(KERNEL,)))], sd.session, Phase.COMPILE
    )
    assert (rec.states, rec.lost) == ({first.id: S.COMPILED}, [])
    assert (second.id, second.attempt) == (sd.jobs[1], 1)
    assert count(db, JobKernel) == 1
    assert job_row(db, second.id).lease_owner == "w"
    # a failure goes back to new in the same transaction, and may be claimed again at once
    rec, [third] = record_and_claim(
        db, "w", [(second, CompileOutcome.failed("boom"))], sd.session, Phase.COMPILE, limit=1
    )
    assert rec.states == {second.id: S.NEW}
    assert third.id == second.id and third.attempt == 2  # lowest id first, a new fence
    rec, none = record_and_claim(db, "w", [], sd.session, Phase.COMPILE, limit=5)
    assert rec.states == {} and [j.id for j in none] == [sd.jobs[2]]


def test_record_and_claim_fences_the_record_like_record_outcomes(db):
    sd = seed(db, configs=2, solvers=["NoopDirect"])
    [old] = claim_jobs(db, sd.session, Phase.COMPILE, owner="old", lease_seconds=30)
    expire_leases(db)
    reap_expired(db)
    [new] = claim_jobs(db, sd.session, Phase.COMPILE, owner="new")
    rec, claimed = record_and_claim(
        db, "old", [(old, CompileOutcome(kernels=(KERNEL,), payload="stale"))], sd.session,
        Phase.COMPILE,
    )  # fmt: skip
    assert (rec.states, rec.lost) == ({}, [old.id])
    assert [j.id for j in claimed] == [sd.jobs[1]]  # the claim half still claims
    row = job_row(db, old.id)
    assert (row.state, row.lease_owner, row.result) == (S.COMPILE_START, "new", None)
    assert count(db, JobKernel) == 0 and new.attempt == 2


def test_record_and_claim_commits_or_rolls_back_both_halves(db, monkeypatch):
    from tuna.jobs import states

    sd = seed(db, configs=2, solvers=["NoopDirect"])
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")

    def broken_claim(*_args, **_kw):
        raise RuntimeError("the claim half failed")

    monkeypatch.setattr(states, "_claim", broken_claim)
    with pytest.raises(RuntimeError, match="claim half"):
        record_and_claim(db, "w", [(job, CompileOutcome())], sd.session, Phase.COMPILE)
    row = job_row(db, job.id)
    assert (row.state, row.lease_owner) == (S.COMPILE_START, "w")  # the record rolled back
    monkeypatch.undo()
    rec, _ = record_and_claim(db, "w", [(job, CompileOutcome())], sd.session, Phase.COMPILE)
    assert rec.states == {job.id: S.COMPILED}


# --- leases and the reaper ------------------------------------------------------------------------


def test_heartbeats_extend_held_leases_and_report_lost_ones(db):
    sd = seed(db, configs=2, solvers=["NoopDirect"])
    a, b = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=2, lease_seconds=5)
    expire_leases(db, [b.id])
    reap_expired(db)
    assert extend_leases(db, "w", [a, b], lease_seconds=600) == [b.id]
    row = job_row(db, a.id)
    assert (row.lease_expires - row.compile_start).total_seconds() > 500
    # Another owner, or a stale attempt, extends nothing.
    assert extend_leases(db, "intruder", [a], lease_seconds=600) == [a.id]


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


def test_release_hands_jobs_back_without_a_retry(db):
    sd = seed(db, configs=2, solvers=["NoopDirect"])
    jobs = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=2)
    assert release_jobs(db, "other", jobs) == []
    assert sorted(release_jobs(db, "w", jobs)) == sorted(sd.jobs)
    row = job_row(db, jobs[0].id)
    assert (row.state, row.retries, row.attempt, row.lease_owner) == (S.NEW, 0, 1, None)
    again = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=2)
    assert {j.attempt for j in again} == {2}


# --- operators ------------------------------------------------------------------------------------


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


def test_job_counts_by_state_with_failure_reasons(db):
    sd = seed(db, configs=4, solvers=["NoopDirect"])
    _errored(db, sd, ["x", "x"])
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    record_outcome(db, "w", job, CompileOutcome.inapplicable("not 1x1"))
    claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    expire_leases(db)
    c = job_counts(db, sd.session)
    assert c.total == 4 and c.expired == 1
    assert {k: v for k, v in c.by_state.items() if v} == {
        S.ERRORED: 2,
        S.NOT_APPLICABLE: 1,
        S.COMPILE_START: 1,
    }
    assert c.reasons == [
        (S.ERRORED, "x (gave up after 1 try)", 2),
        (S.NOT_APPLICABLE, "not 1x1", 1),
    ]


def test_seeded_noop_jobs_cover_every_solver(lite):
    sd = seed(lite, configs=2, solvers=ALL_NOOP_SOLVERS)
    assert len(sd.jobs) == 8
