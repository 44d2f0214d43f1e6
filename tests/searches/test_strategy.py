"""Strategy searches through the one driver (issue #16): rounds as perf jobs of real cpuconv
kernels, their Runs from the measurement rows, a final job that records the measured
winner, and the model's history read from the measurements that count."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import func, insert, select

from tests.searches.helpers import runs, search_state
from tests.support.seed import make_session
from tests.support.wait import wait_until
from tuna.backends.finalists import FINALISTS, RETIME_TURNS
from tuna.catalog.importer import import_configs, read_lines
from tuna.db import Database
from tuna.db.models import (
    FindDb,
    Job,
    Measurement,
    MeasurementEffort,
    PerfDb,
    Platform,
    SearchBuild,
    SearchTally,
    Solver,
)
from tuna.searchers import SearchError
from tuna.searchers.strategies import StrategyOptions
from tuna.searches.query import find_search
from tuna.searches.strategy import (
    StrategyRequest,
    create_strategy_search,
    load_strategy_searches,
)
from tuna.searches.strategy_history import strategy_history
from tuna.worker import run_worker

pytestmark = pytest.mark.usefixtures("own_lock_dir")

LINE = "./bin/MIOpenDriver conv -n 1 -c 16 -H 8 -W 8 -k 16 -y 1 -x 1 -F 1\n"
OTHER = "./bin/MIOpenDriver conv -n 1 -c 32 -H 14 -W 14 -k 32 -y 1 -x 1 -F 1\n"
SOLVER = "CpuGemm1x1"  # 354 candidates on LINE (64, then 70 with MR 12, 16 and KC 1024,
# then 354 with VW 16, the loop order LO and packing PB)
ENV = {"CPUCONV_OPT": "1", "CPUCONV_REPEATS": "1", "CPUCONV_PER_UNIT": "16"}
CPUCONV = {"arch": "cpu", "num_cu": 2, "backend": "cpuconv", "environment": ENV}


def strategy_request(session: int, config: int, *args: Any, **kw: Any) -> StrategyRequest:
    """A strategy search of SOLVER on the config, options as StrategyOptions takes them."""
    return StrategyRequest(session, config, SOLVER, StrategyOptions(*args, **kw))


def cpuconv_session(db: Database, line: str = LINE) -> tuple[int, int]:
    configs = import_configs(db, read_lines(line), tag="t")
    session = make_session(db, **CPUCONV)
    del configs
    with db.session() as s:
        from tuna.db.models import ConvConfig

        config = s.scalar(select(func.max(ConvConfig.id)))
    assert config is not None
    return session, int(config)


def other_problem_session(db: Database) -> tuple[int, int]:
    """(session, config): another session of the same target, and another problem (OTHER)."""
    import_configs(db, read_lines(OTHER), tag="other")
    with db.session() as s:
        from tuna.db.models import ConvConfig

        other = max(s.scalars(select(ConvConfig.id)))
    elsewhere = make_session(db, **CPUCONV)
    return elsewhere, other


@contextmanager
def fleet(db: Database, session: int) -> Iterator[None]:
    """The session's searches driven and one evaluate worker (it compiles the rounds too:
    no compile worker), as go_fish's evaluation or `tuna search run` beside a worker."""
    from tuna.searches import SessionSearches

    stop = threading.Event()
    searches = SessionSearches(db, session)
    kw: dict[str, Any] = {"stop": stop, "handle_signals": False, "idle_sleep": 0.02}
    threads = [
        threading.Thread(target=searches.run, args=(stop,), kwargs={"idle_s": 0.05}),
        threading.Thread(target=run_worker, args=(db, session, "eval"), kwargs=kw),
    ]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join()


def measurements(db: Database, session: int) -> list[Any]:
    with db.session() as s:
        return list(
            s.execute(
                select(Measurement.params, Measurement.time_ms, Measurement.strategy)
                .where(Measurement.session == session)
                .order_by(Measurement.id)
            ).all()
        )


@pytest.mark.serial
@pytest.mark.parametrize("strategy", ["model", "hillclimb"])
def test_a_strategy_drains_through_workers_and_records_a_measured_winner(
    db: Database, strategy: str
) -> None:
    session, config = cpuconv_session(db)
    if strategy == "model":  # as load_jobs -t t -s S --solvers CpuGemm1x1 --strategy model
        options = StrategyOptions(strategy, budget=16, seed=1)
        loaded = load_strategy_searches(db, session, options, tag="t", solvers=[SOLVER])
        (search,) = loaded.created
    else:
        search = create_strategy_search(
            db,
            StrategyRequest(
                session, config, SOLVER, StrategyOptions(strategy, budget=16, round_size=8, seed=1)
            ),
        )
    with fleet(db, session):
        wait_until(
            lambda: search_state(db, search)[0] != "active", "the search to end", timeout=240
        )
    assert search_state(db, search) == ("done", None)
    done = runs(db, search)
    measured = measurements(db, session)
    # fewer than the space's 354, each measured once by its round; the final job re-timed
    # its 3 finalists in 3 turns (issue #24: the fastest of each counts)
    assert len(done) == len({m.params for m in measured}) <= 16 < 64
    assert len(measured) == len(done) + FINALISTS * RETIME_TURNS
    assert {m.strategy for m in measured} == {strategy}
    with db.session() as s:
        rounds = s.execute(
            select(func.count()).select_from(SearchBuild).where(SearchBuild.search == search)
        ).scalar_one()
        jobs = s.execute(
            select(func.count()).select_from(Job).where(Job.session == session)
        ).scalar_one()
        perf = s.execute(select(PerfDb.params).where(PerfDb.session == session)).scalars().all()
        find = s.execute(select(FindDb.time_ms).where(FindDb.session == session)).scalars().all()
    # one job per round (its candidates built together), and one final job
    assert rounds == jobs >= 3 if strategy == "hillclimb" else rounds == jobs == 3
    summary = find_search(db, search)  # `tuna search show`: every round built and timed
    assert (summary.builds_done, summary.builds) == (rounds, rounds)
    with db.session() as s:
        tally = s.execute(
            select(SearchTally.runs, SearchTally.done, SearchTally.valid).where(
                SearchTally.search == search
            )
        ).one()
    assert tuple(tally) == (len(done), len(done), sum(bool(r.valid) for r in done))
    with db.session() as s:  # the effort says with which strategy and budget
        effort = s.execute(
            select(
                MeasurementEffort.strategy, MeasurementEffort.budget, MeasurementEffort.measurements
            ).where(MeasurementEffort.session == session)
        ).all()
    assert {(e.strategy, e.budget) for e in effort} == {(strategy, 16)}
    assert sum(e.measurements for e in effort) == len(measured)
    best = min((m for m in measured if m.time_ms is not None), key=lambda m: m.time_ms)
    assert perf == [best.params]  # the winner is the best measured, its time a measured one
    assert find == [best.time_ms]


def test_bad_requests_say_what_is_wrong_and_write_nothing(lite: Database) -> None:
    session, config = cpuconv_session(lite)
    bad = [
        (dict(strategy="annealing"), "unknown strategy 'annealing'; the strategies are"),
        (dict(budget=0), "budget 0"),
        (dict(budget=1000), "above the space's"),
        (
            dict(strategy="random", transfer=True),
            "--transfer is for the model and sliced strategies",
        ),
        (dict(solver="CpuDirectNaive"), "has no tunable space"),
    ]
    for change, message in bad:
        options: dict[str, Any] = dict(strategy="model", budget=8)
        where = {"session": session, "config": config, "solver": SOLVER}
        for k, v in change.items():
            (where if k in where else options)[k] = v
        with pytest.raises(SearchError, match=message):
            request = StrategyRequest(**where, options=StrategyOptions(**options))
            create_strategy_search(lite, request)


def measure_rows(db: Database, session: int, config: int, rows: list[tuple[str, float]]) -> None:
    """Valid measurements of SOLVER on the config, (params, time) each, as workers record."""
    with db.transaction() as conn:
        solver = conn.execute(select(Solver.id).where(Solver.name == SOLVER)).scalar_one()
        platform = conn.execute(select(Platform.id)).scalar()
        if platform is None:
            conn.execute(insert(Platform).values(digest="x" * 64, info={}))
            platform = conn.execute(select(Platform.id)).scalar_one()
        conn.execute(
            insert(Measurement),
            [
                dict(
                    session=session, config=config, solver=solver, params=p, platform=platform,
                    time_ms=t, valid=True, strategy="random",
                )
                for p, t in rows
            ],
        )  # fmt: skip


def test_a_model_search_with_transfer_and_no_history_falls_back(lite: Database) -> None:
    session, config = cpuconv_session(lite)
    search = create_strategy_search(
        lite,
        strategy_request(session, config, "model", budget=8, transfer=True),
    )
    from tuna.searches.drive import SearchDriver

    driver = SearchDriver(lite, search)
    assert driver.tick()
    assert len(runs(lite, search)) == 8  # the first round, one job
    with lite.session() as s:
        assert s.execute(select(func.count()).select_from(Job)).scalar_one() == 1


def work(db: Database, session: int) -> None:
    """Compile, then evaluate, what is ready now (no driver running)."""
    for phase in ("compile", "eval"):
        run_worker(db, session, phase, until_empty=True, handle_signals=False, idle_sleep=0.01)


@pytest.mark.parametrize("strategy", ["model", "tpe"])
def test_a_new_driver_resumes_a_strategy_without_measuring_anything_twice(
    lite: Database, strategy: str
) -> None:
    """tpe: Optuna's sampler asked 8 times for a round of 8 perf candidates, and a restarted
    driver replays round 1 into a fresh in-memory study (issue #28)."""
    from tuna.searches.drive import SearchDriver

    session, config = cpuconv_session(lite)
    search = create_strategy_search(
        lite,
        StrategyRequest(
            session, config, SOLVER, StrategyOptions(strategy, budget=16, round_size=8, seed=2)
        ),
    )
    first = SearchDriver(lite, search)
    first.tick()  # round 1 enqueued, then this driver is gone
    work(lite, session)
    second = SearchDriver(lite, search)  # replays round 1 from its Runs, enqueues round 2
    second.tick()
    assert [r.seq for r in runs(lite, search)] == list(range(16))
    third = SearchDriver(lite, search)  # round 2 in flight: awaited, not enqueued again
    while third.tick():
        work(lite, session)
    assert search_state(lite, search) == ("done", None)
    measured = measurements(lite, session)
    assert len({m.params for m in measured}) == 16  # and the finalists' re-timing turns:
    assert len(measured) == 16 + FINALISTS * RETIME_TURNS
    with lite.session() as s:
        assert s.execute(select(func.count()).select_from(Job)).scalar_one() == 3


def test_a_resumed_search_reads_the_history_it_was_created_with(lite: Database) -> None:
    from tuna.searches.drive import SearchDriver
    from tuna.sessions.history import retire

    session, config = cpuconv_session(lite)
    elsewhere, other = other_problem_session(lite)
    times = [(f"{mr},{nv},4,64,1,0,0", 1.0 + mr + 0.5 * nv) for mr in (1, 2, 4) for nv in (1, 2, 3)]
    measure_rows(lite, elsewhere, other, times)
    search = create_strategy_search(
        lite,
        StrategyRequest(
            session, config, SOLVER, StrategyOptions("model", budget=16, transfer=True)
        ),
    )
    SearchDriver(lite, search).tick()
    first = [(r.seq, r.point) for r in runs(lite, search)]
    retire(lite, elsewhere)  # its rows no longer count for new decisions...
    again = SearchDriver(lite, search)
    again.tick()  # ...but this search replays with the history it started from
    assert [(r.seq, r.point) for r in runs(lite, search)] == first
    with lite.session() as s:
        fresh = strategy_history(s, session, config, SOLVER, transfer=True, until=None)
    assert fresh == []  # a new search would not see them


def test_two_searches_of_one_problem_leave_the_best_measured_whatever_order_they_end(
    lite: Database,
) -> None:
    """Issue #24: random and hillclimb on one (session, config, solver), each ending with its
    final job; the stored rows hold the fastest valid measurement of the session, and the
    search page's stored result names whose it is."""
    from tuna.searches.drive import SearchDriver
    from tuna.searches.winner import stored_result

    session, config = cpuconv_session(lite)
    ids = [
        create_strategy_search(
            lite,
            StrategyRequest(
                session, config, SOLVER, StrategyOptions(name, budget=8, round_size=8, seed=3)
            ),
        )
        for name in ("random", "hillclimb")
    ]
    for search in ids:  # one after the other: the second's final job writes last
        driver = SearchDriver(lite, search)
        while driver.tick():
            work(lite, session)
        assert search_state(lite, search) == ("done", None)
    with lite.session() as s:
        best = s.execute(
            select(func.min(Measurement.time_ms)).where(
                Measurement.session == session, Measurement.valid
            )
        ).scalar_one()
        find = s.execute(select(FindDb.time_ms, FindDb.params)).one()
        perf = s.execute(select(PerfDb.params)).scalar_one()
    assert find.time_ms == best and perf == find.params
    stored = [stored_result(lite, search) for search in ids]
    assert all(r is not None and r.time_ms == best for r in stored)
    assert [r.mine for r in stored if r is not None].count(True) == 1


def test_load_by_strategy_skips_what_is_tuned_enough_and_never_creates_a_search_twice(
    lite: Database,
) -> None:
    """Issue #24: `load_jobs --strategy ... --min-trials N` was refused; a (config, solver)
    measured N times in sessions whose history counts is skipped (TVM's library: skip what
    is tuned enough), and a second load creates no search again (one cut off is resumed by
    go_fish / `tuna search run`, not made anew)."""
    from tuna.jobs.measurements import write_measurements

    session, _config = cpuconv_session(lite)
    elsewhere, other = other_problem_session(lite)  # OTHER tagged "other"; LINE tagged "t"
    import_configs(lite, read_lines(OTHER), tag="t")
    with lite.transaction() as conn:
        solver = conn.execute(select(Solver.id).where(Solver.name == SOLVER)).scalar_one()
        conn.execute(insert(Platform).values(digest="p" * 64, info={}))
        platform = conn.execute(select(Platform.id)).scalar_one()
        write_measurements(
            conn,
            [
                dict(
                    session=elsewhere, job=None, config=other, solver=solver,
                    params=f"{mr},1,4,64,1,0,0", platform=platform, machine=None,
                    strategy="random", time_ms=1.0, valid=True, reason=None, budget=None,
                )
                for mr in (1, 2, 4)
            ],
        )  # fmt: skip
    random8 = StrategyOptions("random", budget=8)
    first = load_strategy_searches(lite, session, random8, tag="t", solvers=[SOLVER], min_trials=3)
    assert (len(first.created), first.tuned_enough) == (1, 1)  # OTHER measured 3 times
    again = load_strategy_searches(lite, session, random8, tag="t", solvers=[SOLVER], min_trials=3)
    assert (again.created, again.already, again.tuned_enough) == ([], 1, 1)
    plain = load_strategy_searches(
        lite, session, StrategyOptions("random"), tag="t", solvers=[SOLVER]
    )
    assert (len(plain.created), plain.already) == (1, 1)  # without --min-trials: OTHER too


def _round_jobs(db: Database, search: int) -> list[list[str]]:
    """The candidates of each round job of the search (its builds that have a job)."""
    with db.session() as s:
        rows = s.execute(
            select(SearchBuild.params)
            .join(Job, Job.search_build == SearchBuild.id)
            .where(SearchBuild.search == search)
            .order_by(SearchBuild.id)
        ).all()
    return [list(r.params["candidates"]) for r in rows]


def test_a_candidate_measured_where_history_counts_is_not_timed_again_unless_asked(
    db: Database,
) -> None:
    """Issue #24: a strategy's round takes a candidate measured in a session whose history
    counts for this one as measured (its stored time, no job times it); --remeasure times
    it again; a session whose history does not count (retired) is no such session."""
    from tuna.searches.drive import SearchDriver
    from tuna.sessions.history import retire

    session, config = cpuconv_session(db)
    elsewhere = make_session(db, **CPUCONV)  # the same target and fingerprint: it counts

    def search(name: str, **options: Any) -> int:
        request = StrategyRequest(
            session, config, SOLVER, StrategyOptions("random", budget=8, seed=4, **options), name
        )
        found = create_strategy_search(db, request)
        SearchDriver(db, found).tick()  # the first round proposed and enqueued
        return found

    first = search("first", remeasure=True)  # nothing measured yet: its round times all 8
    (proposed,) = _round_jobs(db, first)
    assert len(proposed) == 8
    # another session measured half of them (one of those failed to verify)
    measure_rows(db, elsewhere, config, [(p, 0.5 + i) for i, p in enumerate(proposed[:3])])
    with db.transaction() as conn:
        solver, platform = conn.execute(select(Measurement.solver, Measurement.platform)).first()
        conn.execute(
            insert(Measurement).values(
                session=elsewhere, config=config, solver=solver, params=proposed[3],
                platform=platform, time_ms=None, valid=False, reason="verification failed",
            )
        )  # fmt: skip
    second = search("second")  # the same seed: the same candidates
    assert _round_jobs(db, second) == [proposed[4:]]  # only the unmeasured ones are timed
    filled = {r.seq: r for r in runs(db, second) if r.valid is not None}
    assert sorted(filled) == [0, 1, 2, 3]
    assert [filled[i].value for i in range(3)] == [0.5, 1.5, 2.5]
    assert filled[0].stats == {"time_ms": 0.5, "measured_in_session": elsewhere}
    assert filled[3].valid is False
    assert filled[3].reason == f"verification failed (measured in session {elsewhere})"
    assert find_search(db, second).done == 4  # counted as landed runs

    third = search("third", remeasure=True)
    assert _round_jobs(db, third) == [proposed]  # asked: all 8 timed again
    retire(db, elsewhere)
    fourth = search("fourth")
    assert _round_jobs(db, fourth) == [proposed]  # a retired session's rows count nowhere


def test_a_round_measured_whole_needs_no_job_and_the_strategy_goes_on(lite: Database) -> None:
    from tuna.searches.drive import SearchDriver

    session, config = cpuconv_session(lite)
    elsewhere = make_session(lite, **CPUCONV)
    first = create_strategy_search(
        lite, strategy_request(session, config, "random", budget=16, seed=5, remeasure=True)
    )
    SearchDriver(lite, first).tick()
    (proposed,) = _round_jobs(lite, first)
    measure_rows(lite, elsewhere, config, [(p, 1.0 + i) for i, p in enumerate(proposed)])
    request = StrategyRequest(
        session, config, SOLVER, StrategyOptions("random", budget=16, seed=5), "again"
    )
    second = create_strategy_search(lite, request)
    driver = SearchDriver(lite, second)
    driver.tick()  # round 1 measured whole: landed at once, round 2 enqueued
    assert [r.seq for r in runs(lite, second)] == list(range(16))
    (timed,) = _round_jobs(lite, second)
    assert len(timed) == 8 and not set(timed) & set(proposed)
