"""The result rows of a completed phase: ``tuna/jobs/results.py``, on both databases.

What matters here is the kernel a find/perf row links: the one the evaluate phase named as
the chosen solution's, and only when it is one of the job's own compiled kernels.
"""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import select

from tests.jobs.seed import seed
from tuna.backends import CompileOutcome, EvalOutcome, FindResult, KernelBinary, PerfResult
from tuna.db import Database
from tuna.db.models import FindDb, KernelCache, PerfDb
from tuna.jobs import JobFilter, Phase, claim_jobs, record_outcome, requeue_jobs
from tuna.jobs.results import kernel_identity
from tuna.jobs.states import ClaimedJob

S0 = KernelBinary("conv1x1u_stride2.s", " -Wa,-defsym,k_mult=16", b"\x7fELF k16")
S1 = KernelBinary("conv1x1u_stride2.s", " -Wa,-defsym,k_mult=8", b"\x7fELF k8")
S2 = KernelBinary("conv1x1u_stride2.s", " -Wa,-defsym,k_mult=4", b"\x7fELF k4")
ELSEWHERE = KernelBinary("conv3x3.s", " -DX", b"\x7fELF 3x3")
FIND = FindResult(0.5, 0, "miopenConvolutionFwdAlgoDirect", "p")


def compiled_jobs(db: Database, *kernel_sets: tuple[KernelBinary, ...]) -> list[ClaimedJob]:
    """One job per kernel set (tunable solver), compiled with it and claimed for evaluation."""
    sd = seed(db, configs=len(kernel_sets), solvers=["NoopTunable"])
    jobs = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=len(kernel_sets))
    for job, kernels in zip(jobs, kernel_sets, strict=True):
        record_outcome(db, "w", job, CompileOutcome(kernels=kernels))
    return claim_jobs(db, sd.session, Phase.EVAL, owner="w", limit=len(kernel_sets))


def evaluate(db: Database, job: ClaimedJob, kernels: tuple[KernelBinary, ...]) -> None:
    outcome = EvalOutcome(perf=PerfResult("p"), find=FIND, kernels=kernels)
    record_outcome(db, "w", job, outcome)


def links(db: Database, job: ClaimedJob) -> tuple[tuple[int | None, ...], tuple[int | None, ...]]:
    """((find job, find kernel), (perf job, perf kernel)) of the job's config."""
    with db.session() as s:
        find = s.execute(select(FindDb.job, FindDb.kernel).where(FindDb.config == job.config))
        perf = s.execute(select(PerfDb.job, PerfDb.kernel).where(PerfDb.config == job.config))
        return tuple(find.one()), tuple(perf.one())


def kernel_id(db: Database, kernel: KernelBinary) -> int:
    with db.session() as s:
        q = select(KernelCache.id).where(KernelCache.identity == kernel_identity(kernel))
        return s.execute(q).scalar_one()


def test_the_named_kernel_of_a_tunable_job_is_linked_from_its_rows(db):
    [job] = compiled_jobs(db, (S0, S1, S2))
    evaluate(db, job, (S1,))
    winner = kernel_id(db, S1)
    assert links(db, job) == ((job.id, winner), (job.id, winner))
    assert winner not in (kernel_id(db, S0), kernel_id(db, S2))


@pytest.mark.parametrize(
    ("named", "warned"),
    [
        ((), False),  # the backend does not say
        ((S0, S2), False),  # a solution of two kernels: one column cannot hold them
        ((KernelBinary(S0.name, S0.args, S0.binary + b"!"),), True),  # not what it compiled
    ],
    ids=["unnamed", "two kernels", "not compiled"],
)
def test_no_kernel_is_linked_where_one_column_cannot_say_it(db, caplog, named, warned):
    [job] = compiled_jobs(db, (S0, S1, S2))
    with caplog.at_level(logging.WARNING, logger="tuna.jobs.results"):
        evaluate(db, job, named)
    assert links(db, job) == ((job.id, None), (job.id, None))
    assert (f"job {job.id}: the evaluate phase named 1 kernel(s)" in caplog.text) is warned


def test_a_kernel_another_job_compiled_is_not_linked(db):
    mine, other = compiled_jobs(db, (S0,), (ELSEWHERE,))
    evaluate(db, mine, (ELSEWHERE,))  # in the kernel cache, but not this job's
    evaluate(db, other, (ELSEWHERE,))
    assert links(db, mine) == ((mine.id, None), (mine.id, None))
    assert links(db, other) == ((other.id, kernel_id(db, ELSEWHERE)),) * 2


def test_a_row_written_again_without_a_named_kernel_drops_the_old_link(db):
    [job] = compiled_jobs(db, (S0, S1))
    evaluate(db, job, (S0,))
    assert links(db, job)[0] == (job.id, kernel_id(db, S0))
    requeue_jobs(db, JobFilter(session=job.session))
    [again] = claim_jobs(db, job.session, Phase.EVAL, owner="w")
    evaluate(db, again, ())
    assert links(db, job) == ((job.id, None), (job.id, None))
