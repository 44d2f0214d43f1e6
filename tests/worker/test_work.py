"""What a claimed job's work carries of what was measured before (tuna/worker/work.py)."""

from __future__ import annotations

from sqlalchemy import insert, select

from tests.searches.test_strategy import SOLVER, cpuconv_session
from tests.support.seed import seed
from tuna.db import Database
from tuna.db.enums import JobStep
from tuna.db.models import Job, Measurement, Platform, SearchBuild, Solver
from tuna.jobs.values import ClaimedJob, Phase
from tuna.searchers.strategies import StrategyOptions
from tuna.searches.drive import SearchDriver
from tuna.searches.strategy import StrategyRequest, create_strategy_search
from tuna.sessions import get_session
from tuna.worker.work import WorkLoader


def test_a_strategy_round_resumes_from_its_own_jobs_rows_only(lite: Database) -> None:
    """Issue #24: a round times what its driver left to it (--remeasure: everything); what
    the session measured in other jobs is not taken as measured there, only what this job
    saved before its attempt was lost. A perf job resumes from the session's rows."""
    session, config = cpuconv_session(lite)
    options = StrategyOptions("random", budget=8, remeasure=True)
    search = create_strategy_search(lite, StrategyRequest(session, config, SOLVER, options))
    SearchDriver(lite, search).tick()
    with lite.session() as s:
        job, build, params = s.execute(
            select(Job.id, SearchBuild.id, SearchBuild.params).join(
                SearchBuild, SearchBuild.id == Job.search_build
            )
        ).one()
        solver = s.execute(select(Solver.id).where(Solver.name == SOLVER)).scalar_one()
        s.execute(insert(Platform).values(digest="w" * 64, info={}))
        platform = s.execute(select(Platform.id)).scalar_one()
        first, second = params["candidates"][:2]
        s.execute(
            insert(Measurement),
            [
                dict(session=session, job=None, config=config, solver=solver, params=first,
                     platform=platform, time_ms=1.0, valid=True),
                dict(session=session, job=job, config=config, solver=solver, params=second,
                     platform=platform, time_ms=2.0, valid=True),
            ],
        )  # fmt: skip
    loader = WorkLoader(lite, get_session(lite, session))
    claimed = [
        ClaimedJob(job, 1, Phase.EVAL, session, config, None, JobStep.PERF, search_build=build),
        ClaimedJob(job + 1000, 1, Phase.EVAL, session, config, solver, JobStep.PERF),
    ]
    work = loader.load(loader.with_round_solvers(claimed), platform=platform)
    round_work, perf_work = work[job], work[job + 1000]
    assert not isinstance(round_work, str) and not isinstance(perf_work, str)
    assert [m.params for m in round_work.measured] == [second]
    assert sorted(m.params for m in perf_work.measured) == sorted([first, second])


def test_a_loader_reads_its_backends_solver_names_once(lite: Database) -> None:
    """A worker new to a session spends one query on solver names, not one per solver its
    first jobs name; a solver of another backend is read by id when a job names it."""
    from sqlalchemy import event

    sd = seed(lite, configs=1, solvers=["NoopDirect", "NoopTunable"])
    with lite.session() as s:
        other = s.execute(
            insert(Solver).values(backend="elsewhere", name="Far")
        ).inserted_primary_key[0]
    loader = WorkLoader(lite, get_session(lite, sd.session))
    reads: list[str] = []

    def on_execute(_conn, _cursor, statement, *_args):
        if "FROM solver" in statement:
            reads.append(statement)

    claimed = [
        ClaimedJob(job, 1, Phase.COMPILE, sd.session, sd.configs[0], solver, JobStep.PERF)
        for job, solver in zip(sd.jobs, sd.solvers.values(), strict=True)
    ]
    event.listen(lite.engine, "before_cursor_execute", on_execute)
    try:
        first = loader.load(claimed[:1])
        second = loader.load(claimed[1:])
        assert len(reads) == 1, reads
        far = ClaimedJob(
            sd.jobs[0], 2, Phase.COMPILE, sd.session, sd.configs[0], other, JobStep.PERF
        )
        third = loader.load([far])
        assert len(reads) == 2, reads
    finally:
        event.remove(lite.engine, "before_cursor_execute", on_execute)
    assert [w.solver for w in (*first.values(), *second.values(), *third.values())] == [
        "NoopDirect",
        "NoopTunable",
        "Far",
    ]
