"""A strategy search with several objectives, constraints and a time budget (issue #28):
``load_jobs --strategy nsga2 --objective time_ms:min --objective threads:min`` through the
queue, real cpuconv kernels timed by a real worker, the time budget on a fake clock."""

from __future__ import annotations

import pytest

from tests.searches.helpers import runs, search_state
from tests.searches.test_strategy import CPUCONV, SOLVER, _round_jobs, cpuconv_session, measure_rows
from tests.support.seed import make_session
from tuna.db import Database
from tuna.searchers import SearchError
from tuna.searchers.objective import Objective, make_objective
from tuna.searchers.pareto import Target
from tuna.searchers.strategies import StrategyOptions
from tuna.searches import SearchDriver, query
from tuna.searches.strategy import (
    StrategyAims,
    StrategyRequest,
    create_strategy_search,
    load_strategy_searches,
    strategy_objective,
)
from tuna.worker import run_worker

pytestmark = pytest.mark.usefixtures("own_lock_dir")

TWO = make_objective({"time_ms": "min", "threads": "min"}, ["workspace_bytes <= 1e9"])


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _work(db: Database, session: int) -> None:
    run_worker(db, session, "eval", until_empty=True, handle_signals=False)


@pytest.mark.serial
def test_nsga2_on_the_queue_is_told_time_and_threads_and_stops_when_its_time_is_spent(
    db: Database,
) -> None:
    session, _ = cpuconv_session(db)
    options = StrategyOptions("nsga2", budget=24, round_size=8, seed=1)
    aims = StrategyAims(TWO, time_budget_s=600.0)
    loaded = load_strategy_searches(db, session, options, tag="t", solvers=[SOLVER], aims=aims)
    (search,) = loaded.created
    clock = FakeClock()
    driver = SearchDriver(db, search, clock=clock)
    assert driver.tick()  # round 1: one job of 8 candidates
    _work(db, session)
    assert driver.tick()  # round 1 landed and told; round 2 enqueued
    assert len(runs(db, search)) == 16
    clock.now += 600.0  # spent with round 2 in flight: it lands, nothing more is proposed
    assert driver.tick()
    _work(db, session)
    while driver.tick():  # the final job of the best measured
        _work(db, session)
    assert search_state(db, search) == ("done", "time budget of 10m spent after 16 run(s)")
    done = runs(db, search)
    assert len(done) == 16
    for r in done:  # the time measured, the others computed from the candidate
        if r.valid:  # CpuGemm1x1 needs no workspace
            assert r.stats == {"time_ms": r.value, "threads": r.config["NT"], "workspace_bytes": 0}
    summary = query.find_search(db, search)
    assert [str(t) for t in summary.objective.targets] == ["time_ms:min", "threads:min"]
    front = query.pareto(db, summary)
    assert front and {r.stats["threads"] for r in front} <= {1.0, 2.0}
    assert front[0].value == min(r.value for r in done if r.valid)


@pytest.mark.parametrize(
    ("strategy", "objective", "message"),
    [
        (
            "nsga2",
            make_objective({"threads": "min", "time_ms": "min"}),
            "^--strategy: the first objective is time_ms:min .*, not threads:min; give "
            "--objective time_ms:min first and threads:min after it$",
        ),
        (
            "tpe",
            make_objective({"time_ms": "min", "accuracy": "max"}),
            "^objective or constraint stat 'accuracy': the runs of a strategy search of "
            "CpuGemm1x1 on config 1 have the stats time_ms, threads, workspace_bytes",
        ),
        ("cmaes", TWO, "^strategy 'cmaes' optimises one objective, and this search has 2"),
    ],
)
def test_an_objective_its_runs_cannot_have_is_one_line_and_stores_nothing(
    lite: Database, strategy: str, objective: Objective, message: str
) -> None:
    session, config = cpuconv_session(lite)
    options = StrategyOptions(strategy, budget=16)
    request = StrategyRequest(session, config, SOLVER, options, aims=StrategyAims(objective))
    with pytest.raises(SearchError, match=message):
        create_strategy_search(lite, request)
    with pytest.raises(SearchError, match=message):  # load_jobs: checked before any is stored
        load_strategy_searches(
            lite, session, options, tag="t", solvers=[SOLVER], aims=StrategyAims(objective)
        )
    assert query.list_searches(lite, session) == []


def test_a_candidate_measured_in_history_carries_its_computed_stats_too(lite: Database) -> None:
    """A round's candidate measured in a session whose history counts is filled from that
    measurement without a job (issue #24), and has its threads and workspace like the rest."""
    session, config = cpuconv_session(lite)
    elsewhere = make_session(lite, **CPUCONV)
    options = StrategyOptions("random", budget=8, seed=4)
    first = create_strategy_search(
        lite, StrategyRequest(session, config, SOLVER, options, "first", StrategyAims(TWO))
    )
    SearchDriver(lite, first).tick()
    (proposed,) = _round_jobs(lite, first)
    measure_rows(lite, elsewhere, config, [(proposed[0], 0.5)])
    second = create_strategy_search(
        lite, StrategyRequest(session, config, SOLVER, options, "second", StrategyAims(TWO))
    )
    SearchDriver(lite, second).tick()
    filled = [r for r in runs(lite, second) if r.valid is not None]
    nt = int(proposed[0].split(",")[4])
    assert [r.stats for r in filled] == [
        {"threads": nt, "workspace_bytes": 0, "time_ms": 0.5, "measured_in_session": elsewhere}
    ]


def test_no_objective_given_is_time_alone_and_constraints_alone_keep_time_first() -> None:
    assert [str(t) for t in strategy_objective([], []).targets] == ["time_ms:min"]
    only = strategy_objective([], ["threads <= 1"])
    assert [str(t) for t in only.targets] == ["time_ms:min"]
    assert [c.text for c in only.constraints] == ["threads <= 1"]
    two = strategy_objective([Target("time_ms"), Target("threads")], [])
    assert [str(t) for t in two.targets] == ["time_ms:min", "threads:min"]


def test_a_sliced_search_gives_each_thread_count_its_half_of_each_round(lite: Database) -> None:
    """``sliced`` on the queue: its slices are by the threads the backend computes from each
    candidate (``Backend.candidate_stats``), and its first round holds both; a budget below
    the slices' count is one line, and nothing is stored."""
    session, config = cpuconv_session(lite)
    two = make_objective({"time_ms": "min", "threads": "min"})
    options = StrategyOptions("sliced", budget=16, round_size=8, seed=2, transfer=True)
    request = StrategyRequest(session, config, SOLVER, options, aims=StrategyAims(two))
    notes: list[str] = []
    search = create_strategy_search(lite, request, notes)
    assert notes == [
        f"sliced {SOLVER} config {config}: transfer: no compatible history (no measurements "
        "of other problems were given); the model learns from this problem's measurements alone"
    ]
    assert SearchDriver(lite, search).tick()
    (first,) = _round_jobs(lite, search)
    assert sorted(int(c.split(",")[4]) for c in first) == [1, 1, 1, 1, 2, 2, 2, 2]  # NT
    small = StrategyOptions("sliced", budget=1)
    request = StrategyRequest(session, config, SOLVER, small, "small", StrategyAims(two))
    with pytest.raises(SearchError, match=r"^sliced: .* the known objectives \(threads\) take 2"):
        create_strategy_search(lite, request)
    assert [s.id for s in query.list_searches(lite, session)] == [search]
