"""A strategy search whose constraint reads the baseline (``load_jobs --strategy ...
--constraint 'threads <= baseline.threads'``): the solver's default parameters are measured
first, as run -1, alone in a round job; the strategy starts once they landed, and every
run (the final job's choice, ``tuna search show`` and ``tuna best --search``) is judged
against the baseline's stats. Real cpuconv kernels timed by a real worker."""

from __future__ import annotations

import pytest

from tests.searches.helpers import runs, search_state
from tests.searches.test_strategy import SOLVER, _round_jobs, cpuconv_session
from tuna.backends import get_backend
from tuna.db import Database
from tuna.searchers import SearchError
from tuna.searchers.objective import make_objective
from tuna.searchers.strategies import StrategyOptions
from tuna.searches import SearchDriver, query
from tuna.searches.strategy import (
    StrategyAims,
    StrategyRequest,
    create_strategy_search,
    load_problem,
    load_strategy_searches,
)
from tuna.worker import run_worker

pytestmark = pytest.mark.usefixtures("own_lock_dir")

FEWER_THREADS = make_objective({"time_ms": "min"}, ["threads <= baseline.threads"])


def _work(db: Database, session: int) -> None:
    run_worker(db, session, "eval", until_empty=True, handle_signals=False)


def _default(db: Database, config: int) -> str:
    backend = get_backend("cpuconv")
    with db.session() as s:
        p = load_problem(s, backend, config, SOLVER)
    return backend.default_params(p.problem, SOLVER)


@pytest.mark.serial
def test_the_default_parameters_are_measured_first_and_every_run_is_judged_against_them(
    db: Database,
) -> None:
    session, config = cpuconv_session(db)
    options = StrategyOptions("random", budget=8, round_size=4, seed=3)
    aims = StrategyAims(FEWER_THREADS)
    (search,) = load_strategy_searches(
        db, session, options, tag="t", solvers=[SOLVER], aims=aims
    ).created
    default = _default(db, config)
    driver = SearchDriver(db, search)
    assert driver.tick() and driver.waiting  # the baseline alone: the strategy waits for it
    assert [r.seq for r in runs(db, search)] == [-1]
    assert _round_jobs(db, search) == [[default]]
    assert driver.tick() and [r.seq for r in runs(db, search)] == [-1]  # still waiting
    _work(db, session)
    while driver.tick():
        _work(db, session)
    assert search_state(db, search) == ("done", None)
    done = runs(db, search)
    assert [r.seq for r in done] == list(range(-1, 8))
    baseline = done[0]
    assert baseline.valid and baseline.stats["threads"] == 1  # the default: one thread
    assert ",".join(str(v) for v in baseline.point.values()) == default
    rounds = _round_jobs(db, search)
    assert [len(r) for r in rounds[:3]] == [1, 4, 4]

    s = query.find_search(db, search)
    assert s.objective.baseline == baseline.stats
    shown = query.runs(db, s, limit=None)
    counted = [r for r in shown if s.counts(r.valid, r.value, r.stats)]
    refused = [r for r in shown if r.valid and r not in counted]
    assert refused, "seed 3 proposes candidates of several threads: some must not count"
    assert all(r.stats["threads"] > 1 for r in refused)
    assert all(r.stats["threads"] <= 1 for r in counted)
    assert "threads <= baseline.threads: not met" in (s.not_counted(refused[0]) or "")
    best = query.best_run(db, s)
    assert best is not None and best.value == min(r.value for r in counted)
    # the final job re-times the best runs that count, never one the constraint refuses
    final = rounds[-1]
    assert set(final) <= {",".join(str(v) for v in r.point.values()) for r in counted}


@pytest.mark.parametrize(
    ("constraint", "message"),
    [
        (
            "time_ms <= baseline.accuracy",
            "^objective or constraint stat 'baseline.accuracy': the runs of a strategy search "
            "of CpuGemm1x1 on config 1 \\(its baseline's too\\) have the stats time_ms, "
            "threads, workspace_bytes .*; name one of those$",
        ),
        (
            "accuracy >= baseline.time_ms",
            "^objective or constraint stat 'accuracy': the runs of a strategy search",
        ),
    ],
)
def test_a_constraint_on_a_stat_the_runs_lack_is_one_line_and_stores_nothing(
    lite: Database, constraint: str, message: str
) -> None:
    session, config = cpuconv_session(lite)
    aims = StrategyAims(make_objective({"time_ms": "min"}, [constraint]))
    options = StrategyOptions("random", budget=8)
    with pytest.raises(SearchError, match=message):
        create_strategy_search(lite, StrategyRequest(session, config, SOLVER, options, aims=aims))
    with pytest.raises(SearchError, match=message):
        load_strategy_searches(lite, session, options, tag="t", solvers=[SOLVER], aims=aims)
    assert query.list_searches(lite, session) == []


def test_the_stored_baseline_is_the_default_as_a_point_and_none_without_such_a_constraint(
    lite: Database,
) -> None:
    session, config = cpuconv_session(lite)
    options = StrategyOptions("random", budget=8)
    with_baseline = create_strategy_search(
        lite, StrategyRequest(session, config, SOLVER, options, "b", StrategyAims(FEWER_THREADS))
    )
    plain = create_strategy_search(
        lite,
        StrategyRequest(
            session, config, SOLVER, options, "p",
            StrategyAims(make_objective({"time_ms": "min"}, ["threads <= 1"])),
        ),
    )  # fmt: skip
    stored = {s.id: s for s in query.list_searches(lite, session)}
    default = _default(lite, config).split(",")
    assert SearchDriver(lite, with_baseline).baseline is not None
    point = SearchDriver(lite, with_baseline).baseline or {}
    assert [str(v) for v in point.values()] == default
    assert SearchDriver(lite, plain).baseline is None
    assert stored[plain].objective.constraints[0].text == "threads <= 1"
