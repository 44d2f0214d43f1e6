"""Recording outcomes: result rows, retries and fencing (tuna.jobs.recording)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from tests.support.seed import (
    KERNEL,
    expire_leases,
    job_row,
    seed,
)
from tuna.backends import CompileOutcome, EvalOutcome, FindResult, KernelBinary, PerfResult
from tuna.db.enums import JobState
from tuna.db.models import FindDb, JobKernel, KernelCache, PerfDb
from tuna.jobs import (
    JobFilter,
    LostLease,
    Phase,
    claim_jobs,
    reap_expired,
    record_and_claim,
    record_outcome,
    record_outcomes,
    reset_jobs,
)

S = JobState


def count(db, model) -> int:
    with db.session() as s:
        return s.execute(select(func.count()).select_from(model)).scalar_one()


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
    from tuna.jobs import recording

    sd = seed(db, configs=2, solvers=["NoopDirect"])
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")

    def broken_claim(*_args, **_kw):
        raise RuntimeError("the claim half failed")

    monkeypatch.setattr(recording, "claim_in_transaction", broken_claim)
    with pytest.raises(RuntimeError, match="claim half"):
        record_and_claim(db, "w", [(job, CompileOutcome())], sd.session, Phase.COMPILE)
    row = job_row(db, job.id)
    assert (row.state, row.lease_owner) == (S.COMPILE_START, "w")  # the record rolled back
    monkeypatch.undo()
    rec, _ = record_and_claim(db, "w", [(job, CompileOutcome())], sd.session, Phase.COMPILE)
    assert rec.states == {job.id: S.COMPILED}
