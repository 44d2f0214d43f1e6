"""The result rows of a completed phase: ``tuna/jobs/results.py``, on both databases.

What matters here is which of a job's compiled kernels are chosen (``job_kernel.chosen``):
all the kernels the evaluate phase named as the chosen solution's, only when they are the
job's own, and moved when a re-evaluation chooses differently. The ``kernel`` column of
the find/perf rows still names the chosen kernel when there is exactly one.
"""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import select

from tests.support.seed import seed
from tuna.backends import CompileOutcome, EvalOutcome, FindResult, KernelBinary, PerfResult
from tuna.db import Database
from tuna.db.enums import JobState, JobStep
from tuna.db.models import FindDb, JobKernel, KernelCache, PerfDb
from tuna.jobs import JobFilter, Phase, claim_jobs, record_outcome, requeue_jobs, reset_jobs
from tuna.jobs.results import kernel_identity
from tuna.jobs.values import ClaimedJob

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


def chosen(db: Database, job: ClaimedJob) -> set[int]:
    """The ``kernel_cache`` ids of the job's chosen kernels."""
    with db.session() as s:
        q = select(JobKernel.kernel).where(JobKernel.job == job.id, JobKernel.chosen)
        return set(s.scalars(q))


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
    assert chosen(db, job) == {winner}


def test_every_kernel_of_a_solution_of_several_is_chosen_and_no_other(db):
    [job] = compiled_jobs(db, (S0, S1, S2))
    evaluate(db, job, (S0, S2))
    assert chosen(db, job) == {kernel_id(db, S0), kernel_id(db, S2)}
    assert links(db, job) == ((job.id, None), (job.id, None))  # one column cannot say it


def test_a_re_evaluation_that_chooses_differently_moves_the_choice(db):
    [job] = compiled_jobs(db, (S0, S1, S2))
    evaluate(db, job, (S0, S1))
    requeue_jobs(db, JobFilter(session=job.session))
    [again] = claim_jobs(db, job.session, Phase.EVAL, owner="w")
    evaluate(db, again, (S1, S2))
    assert chosen(db, job) == {kernel_id(db, S1), kernel_id(db, S2)}


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
    assert chosen(db, job) == (set() if warned or not named else {kernel_id(db, k) for k in named})
    assert (f"job {job.id}: the evaluate phase named 1 kernel(s)" in caplog.text) is warned


def test_a_solution_naming_one_kernel_the_job_lacks_chooses_none_of_it(db, caplog):
    [job] = compiled_jobs(db, (S0, S1, S2))
    with caplog.at_level(logging.WARNING, logger="tuna.jobs.results"):
        evaluate(db, job, (S0, ELSEWHERE))  # half a solution would be a broken kernel db
    assert chosen(db, job) == set()
    assert f"job {job.id}: the evaluate phase named 1 kernel(s)" in caplog.text


def test_a_kernel_another_job_compiled_is_not_linked(db):
    mine, other = compiled_jobs(db, (S0,), (ELSEWHERE,))
    evaluate(db, mine, (ELSEWHERE,))  # in the kernel cache, but not this job's
    evaluate(db, other, (ELSEWHERE,))
    assert links(db, mine) == ((mine.id, None), (mine.id, None))
    assert links(db, other) == ((other.id, kernel_id(db, ELSEWHERE)),) * 2
    assert (chosen(db, mine), chosen(db, other)) == (set(), {kernel_id(db, ELSEWHERE)})


def test_a_row_written_again_without_a_named_kernel_drops_the_old_link(db):
    [job] = compiled_jobs(db, (S0, S1))
    evaluate(db, job, (S0,))
    assert links(db, job)[0] == (job.id, kernel_id(db, S0))
    requeue_jobs(db, JobFilter(session=job.session))
    [again] = claim_jobs(db, job.session, Phase.EVAL, owner="w")
    evaluate(db, again, ())
    assert links(db, job) == ((job.id, None), (job.id, None))
    assert chosen(db, job) == set()


def test_a_recompile_chooses_nothing_until_evaluated(db):
    [job] = compiled_jobs(db, (S0, S1))
    evaluate(db, job, (S0,))
    reset_jobs(db, JobFilter(session=job.session, states=(JobState.EVALUATED,)))
    [again] = claim_jobs(db, job.session, Phase.COMPILE, owner="w")
    record_outcome(db, "w", again, CompileOutcome(kernels=(S0, S1)))
    assert chosen(db, job) == set()


def test_a_batch_of_distinct_payloads_and_a_lost_job_is_recorded_in_one_transaction(db):
    """Compile outcomes with a payload each share one transaction (one prebuilt UPDATE run
    for every row); a job taken away meanwhile is lost alone, the others keep their rows."""
    from tuna.db.models import Job
    from tuna.jobs import record_outcomes

    sd = seed(db, configs=5, solvers=["NoopTunable"])
    jobs = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=5)
    with db.session() as s:  # the last job moved on to another claim (a newer attempt)
        s.execute(
            Job.__table__.update().where(Job.id == jobs[-1].id).values(attempt=Job.attempt + 1)
        )
    outcomes = [(j, CompileOutcome(kernels=(S0,), payload=f"payload {j.id}")) for j in jobs]
    rec = record_outcomes(db, "w", outcomes)
    assert rec.lost == [jobs[-1].id]
    assert set(rec.states) == {j.id for j in jobs[:-1]}
    with db.session() as s:
        rows = dict(s.execute(select(Job.id, Job.result).where(Job.session == sd.session)).all())
        linked = set(s.execute(select(JobKernel.job)).scalars())
    assert rows == {j.id: f"payload {j.id}" for j in jobs[:-1]} | {jobs[-1].id: None}
    assert linked == {j.id for j in jobs[:-1]}


# --- the stored winner is the best measured (issue #24) ----------------------------------------


def stored(db: Database, config: int | None) -> tuple[tuple[float, str | None, int | None], str]:
    """((find time, find params, find job), perf params) of ``config``."""
    with db.session() as s:
        find = s.execute(
            select(FindDb.time_ms, FindDb.params, FindDb.job).where(FindDb.config == config)
        ).one()
        perf = s.execute(select(PerfDb.params).where(PerfDb.config == config)).scalar_one()
    return tuple(find), perf  # type: ignore[return-value]


def timed(params: str, time_ms: float, *kernels: KernelBinary) -> EvalOutcome:
    find = FindResult(time_ms, 0, "miopenConvolutionFwdAlgoDirect", params)
    return EvalOutcome(perf=PerfResult(params), find=find, kernels=kernels)


def test_a_slower_evaluation_keeps_the_faster_stored_winner_and_a_faster_one_replaces_it(db):
    """Two searches (or two evaluations) of one (session, config, solver) each write the
    find/perf rows when they end: the stored winner is the fastest, whatever the order."""
    [job] = compiled_jobs(db, (S0, S1, S2))
    record_outcome(db, "w", job, timed("fast", 0.5, S0))
    requeue_jobs(db, JobFilter(session=job.session))
    [again] = claim_jobs(db, job.session, Phase.EVAL, owner="w")
    record_outcome(db, "w", again, timed("slow", 1.5, S1))  # ends last, measured slower
    assert stored(db, job.config) == ((0.5, "fast", job.id), "fast")
    assert links(db, job) == ((job.id, kernel_id(db, S0)),) * 2  # the kernel of the winner
    requeue_jobs(db, JobFilter(session=job.session))
    [third] = claim_jobs(db, job.session, Phase.EVAL, owner="w")
    record_outcome(db, "w", third, timed("faster", 0.25, S2))
    assert stored(db, job.config) == ((0.25, "faster", job.id), "faster")
    assert links(db, job) == ((job.id, kernel_id(db, S2)),) * 2


def test_one_batch_with_two_results_of_a_key_stores_the_faster(db):
    from tuna.jobs.results import write_eval_results

    sd = seed(db, configs=1, solvers=["NoopTunable"])
    base = ClaimedJob(
        sd.jobs[0],
        1,
        Phase.EVAL,
        sd.session,
        sd.configs[0],
        sd.solvers["NoopTunable"],
        JobStep.PERF,
    )
    with db.transaction() as conn:
        write_eval_results(conn, [(base, timed("fast", 0.5)), (base, timed("slow", 0.7))])
    assert stored(db, sd.configs[0]) == ((0.5, "fast", base.id), "fast")


def test_concurrent_writers_of_one_key_store_the_fastest(db):
    """Writers of one (session, config, solver) in overlapping transactions, in every order a
    seeded shuffle gives (on MariaDB they interleave for real: each holds its transaction
    open a while after its write): the row that stays is the fastest, perf row alongside."""
    import random
    import threading
    import time

    from tuna.jobs.results import write_eval_results

    sd = seed(db, configs=1, solvers=["NoopTunable"])
    job = ClaimedJob(
        sd.jobs[0],
        1,
        Phase.EVAL,
        sd.session,
        sd.configs[0],
        sd.solvers["NoopTunable"],
        JobStep.PERF,
    )
    rng = random.Random(24)
    for trial in range(5):
        times = [round(0.1 + 0.05 * i + trial, 3) for i in range(8)]
        rng.shuffle(times)
        start = threading.Barrier(len(times))
        errors: list[BaseException] = []

        def write(i: int, t: float, start: threading.Barrier, errors: list[BaseException]) -> None:
            try:
                start.wait()
                time.sleep(0.002 * i)
                with db.transaction(immediate=True) as conn:
                    write_eval_results(conn, [(job, timed(f"p{t}", t))])
                    time.sleep(0.01)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [
            threading.Thread(target=write, args=(i, t, start, errors)) for i, t in enumerate(times)
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors
        best = min(times)
        assert stored(db, sd.configs[0]) == ((best, f"p{best}", job.id), f"p{best}")
        with db.session() as s:  # the next trial starts slower than this one's best
            s.execute(FindDb.__table__.delete())
            s.execute(PerfDb.__table__.delete())


def test_a_batch_with_a_result_and_a_measuring_only_outcome_of_its_key_keeps_the_perf_row(db):
    """A strategy's round (measurements, no rows) recorded with its final job in one batch:
    the final job's perf row is written (the stress test caught it missing)."""
    from tuna.jobs.results import write_eval_results

    sd = seed(db, configs=1, solvers=["NoopTunable"])
    job = ClaimedJob(
        sd.jobs[0],
        1,
        Phase.EVAL,
        sd.session,
        sd.configs[0],
        sd.solvers["NoopTunable"],
        JobStep.PERF,
    )
    with db.transaction() as conn:
        write_eval_results(conn, [(job, timed("fast", 0.5)), (job, EvalOutcome())])
    assert stored(db, sd.configs[0]) == ((0.5, "fast", job.id), "fast")
