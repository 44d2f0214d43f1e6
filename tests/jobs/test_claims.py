"""Claims, lease heartbeats and releases (tuna.jobs.claims)."""

from __future__ import annotations

from sqlalchemy import text

from tests.support.seed import (
    KERNEL,
    expire_leases,
    force_state,
    job_row,
    seed,
)
from tuna.backends import CompileOutcome
from tuna.db.enums import JobState, JobStep
from tuna.jobs import (
    Phase,
    claim_jobs,
    extend_leases,
    reap_expired,
    record_outcome,
    release_jobs,
)
from tuna.jobs.status import count_jobs

S = JobState


def db_now(db):
    with db.session() as s:
        if db.is_sqlite:
            return s.execute(text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')")).scalar_one()
        return s.execute(text("SELECT NOW(6)")).scalar_one()


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


def test_release_hands_jobs_back_without_a_retry(db):
    sd = seed(db, configs=2, solvers=["NoopDirect"])
    jobs = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=2)
    assert release_jobs(db, "other", jobs) == []
    assert sorted(release_jobs(db, "w", jobs)) == sorted(sd.jobs)
    row = job_row(db, jobs[0].id)
    assert (row.state, row.retries, row.attempt, row.lease_owner) == (S.NEW, 0, 1, None)
    again = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=2)
    assert {j.attempt for j in again} == {2}


def test_an_evaluation_of_one_step_claims_that_steps_jobs_and_search_runs_only(db):
    """Issue #24: go_fish --run_find's workers leave the compiled perf jobs alone (and count
    only what they may claim to know they are drained); a search's runs go to any step."""
    sd = seed(db, configs=3, solvers=["NoopDirect", "NoopTunable"])
    for i, job_id in enumerate(sd.jobs):
        force_state(db, job_id, "compiled", step=["find", "find", "run"][i] if i < 3 else "perf")
    compiled = [S.COMPILED]
    assert count_jobs(db, sd.session, compiled) == {S.COMPILED: 6}
    assert count_jobs(db, sd.session, compiled, [JobStep.FIND, JobStep.RUN]) == {S.COMPILED: 3}
    assert count_jobs(db, sd.session, compiled, [JobStep.PERF]) == {S.COMPILED: 3}
    found = claim_jobs(db, sd.session, Phase.EVAL, owner="w", limit=10, step=JobStep.FIND)
    assert sorted(j.id for j in found) == sd.jobs[:3]
    assert claim_jobs(db, sd.session, Phase.EVAL, owner="w", limit=10, step=JobStep.FIND) == []
    perf = claim_jobs(db, sd.session, Phase.EVAL, owner="w", limit=10, step=JobStep.PERF)
    assert sorted(j.id for j in perf) == sd.jobs[3:]
