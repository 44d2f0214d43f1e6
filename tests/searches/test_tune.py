"""tuna.tune: a Python function tuned in-process, every run a search_run of a stored search."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from sqlalchemy import func, select

import tuna
from tuna.db import Database
from tuna.db.models import Search, SearchRun, TuningSession
from tuna.errors import TunaError
from tuna.searchers import Categorical, Float, Int, ParameterSpace
from tuna.searchers.timebudget import TimeBudget
from tuna.searches.create import load_space
from tuna.searches.query import find_search

SPACE = {"x": [1, 2, 3, 4, 5], "y": ["a", "b"]}


def quadratic(params):
    return (params["x"] - 3) ** 2 + (0.5 if params["y"] == "b" else 0.0)


def _rows(db: Database) -> list[SearchRun]:
    with db.session() as s:
        return list(
            s.execute(select(SearchRun).order_by(SearchRun.search, SearchRun.seq)).scalars()
        )


def _counts(db: Database) -> tuple[int, int, int]:
    with db.session() as s:
        return tuple(  # type: ignore[return-value]
            s.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (TuningSession, Search, SearchRun)
        )


def test_every_run_is_stored_and_the_best_is_found(db):
    result = tuna.tune(quadratic, SPACE, storage=db)
    assert len(result.runs) == 10
    assert result.best_params == {"x": 3, "y": "a"}
    assert result.best_value == 0.0
    rows = _rows(db)
    assert [r.seq for r in rows] == list(range(10))
    assert all(r.valid and r.finished is not None for r in rows)
    assert rows[0].point == {"x": 1, "y": "a"} and rows[0].value == 4.0
    summary = find_search(db, result.search)  # what `tuna search show` reads
    assert (summary.name, summary.state) == ("quadratic", "done")
    assert summary.best == 0.0


def test_maximize_with_a_strategy_a_budget_and_a_dict_of_stats(db):
    def score(p):
        return {"score": p["x"] * 10, "x_again": p["x"]}

    result = tuna.tune(
        score,
        {"x": list(range(20))},
        direction="maximize",
        strategy="Random(space, 8, seed=3)",
        budget=5,
        storage=db,
        stat="score",
    )
    assert len(result.runs) == 5 == len(_rows(db))
    assert result.best is not None
    assert result.best_value == max(r.stats["score"] for r in result.runs)


def test_an_objective_that_raises_is_an_invalid_run_with_its_reason(db):
    def fragile(p):
        if p["x"] == 2:
            raise ValueError("x=2 does not compile")
        return p["x"]

    result = tuna.tune(fragile, {"x": [1, 2, 3]}, storage=db)
    assert [r.valid for r in result.runs] == [True, False, True]
    assert result.best_params == {"x": 1}
    bad = _rows(db)[1]
    assert bad.valid is False
    assert bad.reason == "objective raised ValueError: x=2 does not compile"
    assert result.runs[1].reason == bad.reason


def test_an_interrupted_study_resumes_without_measuring_a_point_twice(db):
    calls: list[dict] = []
    stop_at = {"x": 4, "y": "a"}

    def objective(p):
        if p == stop_at:
            raise KeyboardInterrupt
        calls.append(p)
        return quadratic(p)

    with pytest.raises(KeyboardInterrupt):
        tuna.tune(objective, SPACE, storage=db, name="study")
    assert len(calls) == 6 and len(_rows(db)) == 6
    with db.session() as s:
        search = s.execute(select(Search)).scalar_one()
        assert search.state == "stopped"
        assert "again with the same name" in (search.reason or "")

    stop_at = {}
    result = tuna.tune(objective, SPACE, storage=db, name="study")
    assert len(calls) == 10  # the 6 measured before the interruption were not run again
    assert len({tuple(sorted(c.items())) for c in calls}) == 10
    assert len(result.runs) == 10 and result.best_params == {"x": 3, "y": "a"}
    assert [r.seq for r in _rows(db)] == list(range(10))
    assert find_search(db, result.search).state == "done"

    again = tuna.tune(objective, SPACE, storage=db, name="study")  # finished: nothing to do
    assert len(calls) == 10 and again.search == result.search and len(again.runs) == 10


def test_a_dynamic_searcher_resumes_where_it_stopped(db):
    seen: list[int] = []
    interrupt = [True]

    def objective(p):
        if p["t"] == 8 and interrupt[0]:
            raise KeyboardInterrupt
        seen.append(p["t"])
        return 1.0 / p["t"]

    step = 'Step("t", 1, 64, lambda t: t * 2)'
    with pytest.raises(KeyboardInterrupt):
        tuna.tune(objective, {"t": []}, strategy=step, storage=db, name="steps")
    interrupt[0] = False
    result = tuna.tune(objective, {"t": []}, strategy=step, storage=db, name="steps")
    assert seen == [1, 2, 4, 8, 16, 32, 64]
    assert result.best_params == {"t": 64}


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"space": {"x": []}}, "list no values"),
        ({"space": {"x": [object()]}}, "must be a list of numbers, strings or booleans"),
        ({"space": [1, 2]}, "give a dict of each parameter's values"),
        ({"direction": "down"}, "use 'minimize' or 'maximize'"),
        ({"budget": 0}, "give at least 1 run"),
        ({"strategy": "Nope(space)"}, "NameError"),
        ({"objective": 42}, "is not callable"),
        (
            {"space": {"x": Int(5, 1)}},
            r"^quadratic.json: parameter 'x': the range \[5, 1\] is empty",
        ),
        ({"space": {"x": Float(0, 1)}}, r"^quadratic.json: parameter 'x' is Float\(0, 1\), a cont"),
        (
            {"space": {"x": [1], "y": Categorical([1], when={"z": 1})}},
            r"^quadratic.json: parameter 'y' is conditional on 'z', which is not a parameter",
        ),
        (
            {"space": {"x": [1], "META_constraints": ["x < w"]}},
            r"^quadratic.json: META_constraints: constraint 'x < w' names 'w'",
        ),
    ],
)
def test_bad_input_is_one_clear_error_and_stores_nothing(lite, kw, message):
    args = {"objective": quadratic, "space": SPACE, "storage": lite, **kw}
    with pytest.raises(TunaError, match=message):
        tuna.tune(**args)
    assert _counts(lite) == (0, 0, 0)


def test_a_study_over_ranges_resumes_the_same_space_without_measuring_twice(db):
    space = {
        "algo": ["naive", "tiled"],
        "tile": Int(4, 64, step=4),
        "lr": Float(1e-4, 1e-1, log=True),
        "unroll": Categorical([1, 2, 4], when={"algo": "tiled"}),
        "META_constraints": ["tile * lr < 5"],
    }
    calls: list[dict] = []

    def objective(p):
        if len(calls) == 5 and not p.get("resumed"):
            raise KeyboardInterrupt
        calls.append(p)
        return p["tile"] * p["lr"] + p.get("unroll", 0)

    with pytest.raises(KeyboardInterrupt):
        tuna.tune(objective, space, strategy="Random(space, 12, seed=5)", storage=db, name="r")
    calls.append({"resumed": True})  # past the interruption: the rest run
    result = tuna.tune(objective, space, strategy="Random(space, 12, seed=5)", storage=db, name="r")
    measured = [c for c in calls if "resumed" not in c]
    keys = {tuple(sorted(c.items())) for c in measured}
    assert len(keys) == len(measured) == len(result.runs)  # nothing measured twice
    with db.session() as s:
        row = s.execute(select(Search).where(Search.name == "r")).scalar_one()
        assert load_space(row.space_file, row.space_text) == ParameterSpace(
            {k: v for k, v in space.items() if k != "META_constraints"},
            constraints=("tile * lr < 5",),
            source="r.json",
        )
    for r in result.runs:
        assert 4 <= r.config["tile"] <= 64 and 1e-4 <= r.config["lr"] <= 1e-1
        assert ("unroll" in r.config) == (r.config["algo"] == "tiled")
        assert r.config["tile"] * r.config["lr"] < 5


def test_resuming_with_another_space_is_refused(lite):
    tuna.tune(quadratic, SPACE, storage=lite)
    with pytest.raises(TunaError, match="another space, strategy or objective"):
        tuna.tune(quadratic, {"x": [1, 2], "y": ["a"]}, storage=lite)
    assert len(_rows(lite)) == 10


def test_the_default_storage_is_the_sqlite_database_under_tuna_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNA_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("TUNA_DB_URL", raising=False)
    tuna.tune(quadratic, {"x": [1, 2], "y": ["a"]})
    result = tuna.tune(quadratic, {"x": [1, 2], "y": ["a"]})  # same study: nothing re-run
    assert len(result.runs) == 2
    assert any(p.suffix == ".db" or "sqlite" in p.name for p in tmp_path.rglob("*"))


def test_stats_that_never_hold_the_objective_stat_fail_the_search(lite):
    with pytest.raises(TunaError, match="'value' is in no run's output"):
        tuna.tune(lambda p: {"time": p["x"]}, {"x": [1, 2]}, storage=lite, name="no-value")
    with lite.session() as s:
        assert s.execute(select(Search.state)).scalar_one() == "failed"


def test_the_docs_example_runs_and_prints_what_the_page_says(tmp_path, monkeypatch, capsys):
    page = (Path(__file__).parents[2] / "docs/tutorials/benchmark-search.md").read_text()
    section = page.split("## A Python function: `tuna.tune`", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    shown = re.search(r"It prints `([^`]*)`", section)
    assert shown is not None
    monkeypatch.setenv("TUNA_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("TUNA_DB_URL", raising=False)
    for _ in range(2):  # the second run resumes the study: the same result, nothing re-run
        exec(compile(code, "benchmark-search.md", "exec"), {"__name__": "docs"})
        assert capsys.readouterr().out.strip() == shown.group(1)


def test_a_search_driver_leaves_a_study_being_measured_alone(db):
    """go_fish --search / tuna search run on the study's session while it runs: no jobs."""
    from tuna.db.models import Job
    from tuna.searches import SessionSearches

    seen: list[int] = []

    def objective(p):
        if p["x"] == 2:  # mid-study, the search is active: drive its session once
            with db.session() as s:
                session = s.execute(select(Search.session)).scalar_one()
            seen.append(SessionSearches(db, session).tick())
        return p["x"]

    result = tuna.tune(objective, {"x": [1, 2, 3]}, storage=db)
    assert seen == [0] and len(result.runs) == 3
    with db.session() as s:
        assert s.execute(select(func.count()).select_from(Job)).scalar_one() == 0
        assert s.execute(select(Search.state)).scalar_one() == "done"


def _losses(params, trial):
    """A training-like objective: its loss after each of 4 epochs is x / (epoch + 1)."""
    for epoch in range(4):
        trial.report(epoch, params["x"] / (epoch + 1))
        if trial.should_prune():
            raise tuna.Pruned()
    return params["x"] / 4


def test_the_median_pruner_stops_runs_worse_than_the_median_and_stores_their_curves(db):
    result = tuna.tune(
        _losses, {"x": [2, 1, 3, 4, 0.5]}, storage=db, pruner="median(warmup_runs=2)"
    )
    rows = _rows(db)
    # x=2 and x=1 complete (the warm-up); x=3 and x=4 are worse than their median 1.5 at
    # epoch 0 and stop there; x=0.5 is better at every epoch and completes
    assert [(r.config["x"], r.valid, r.pruned) for r in rows] == [
        (2, True, False), (1, True, False), (3, False, True), (4, False, True),
        (0.5, True, False),
    ]  # fmt: skip
    assert rows[0].intermediate == [[0, 2.0], [1, 1.0], [2, 2 / 3], [3, 0.5]]
    assert rows[2].intermediate == [[0, 3.0]]
    assert rows[2].reason == (
        "pruned at step 0 by the median pruner: 3 is worse than the median 1.5 of 2 "
        "completed run(s) at that step"
    )
    assert result.best_params == {"x": 0.5} and result.reason is None
    with db.session() as s:
        stored = s.get(Search, result.search)
        assert stored is not None and stored.pruner == {
            "name": "median", "warmup_runs": 2, "warmup_steps": 0,
        }  # fmt: skip


def test_successive_halving_judges_against_every_run_pruned_ones_included(db):
    # factor 2, rungs at epochs 1 and 2: of the runs at a rung, the better half goes on
    result = tuna.tune(
        _losses, {"x": [3, 1, 2, 4]}, storage=db, pruner="halving(min_step=1, factor=2)"
    )
    pruned = [(r.config["x"], r.pruned) for r in _rows(db)]
    # x=3 is alone at each rung and x=1 the best at each: both go on; at epoch 1, x=2
    # (1.0) is not the best 3 // 2 = 1 of (1.5, 0.5, 1.0), x=4 (2.0) not among the best 2
    # of four, pruned ones included
    assert pruned == [(3, False), (1, False), (2, True), (4, True)]
    assert result.best_params == {"x": 1}
    summary = find_search(db, result.search)  # counted pruned, not invalid
    assert (summary.valid, summary.invalid, summary.pruned) == (2, 0, 2)


def test_an_objective_may_prune_itself_without_a_pruner(db):
    def stop_odd(params, trial):
        trial.report(7, float(params["x"]))
        assert not trial.should_prune()  # no pruner: never advised
        return tuna.Pruned if params["x"] % 2 else params["x"]

    result = tuna.tune(stop_odd, {"x": [1, 2, 3]}, storage=db)
    rows = _rows(db)
    assert [(r.pruned, r.reason) for r in rows] == [
        (True, "pruned by the objective at step 7"), (False, None),
        (True, "pruned by the objective at step 7"),
    ]  # fmt: skip
    assert result.best_params == {"x": 2}


def test_a_bad_report_is_the_run_s_error_not_the_study_s(db):
    def bad(params, trial):
        trial.report("first", 1.0)
        return 1.0

    result = tuna.tune(bad, {"x": [1]}, storage=db)
    assert result.runs[0].reason == (
        "objective raised SearchError: trial.report: step 'first': give an integer >= 0"
    )


def test_a_timeout_stops_proposing_and_says_so(db, monkeypatch):
    now = [0.0]

    class FakeClockBudget(TimeBudget):
        def __init__(self, seconds: float) -> None:
            super().__init__(seconds, clock=lambda: now[0])

    monkeypatch.setattr("tuna.searches.tune.TimeBudget", FakeClockBudget)

    def slow(params):
        now[0] += 4.0  # each run takes 4 s of the fake clock
        return params["x"]

    result = tuna.tune(slow, {"x": list(range(10))}, storage=db, timeout="10s")
    assert len(result.runs) == 3  # started at 0, 4 and 8 s; at 12 s the time is spent
    assert result.reason == "timeout of 10s spent after 3 run(s)"
    summary = find_search(db, result.search)
    assert (summary.state, summary.reason) == ("done", "timeout of 10s spent after 3 run(s)")


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"pruner": "mean"}, "pruner 'mean': write 'median'"),
        ({"pruner": "halving(factor=1)"}, "pruner halving: factor 1: give an integer >= 2"),
        ({"pruner": 5}, "pruner 5: give 'median', 'halving'"),
        ({"timeout": 0}, "timeout 0: give a duration above 0"),
        ({"timeout": "soon"}, "timeout 'soon': give a duration above 0"),
    ],
)
def test_a_bad_pruner_or_timeout_stores_nothing(db, kw, says):
    with pytest.raises(TunaError) as e:
        tuna.tune(quadratic, SPACE, storage=db, **kw)
    assert says in str(e.value) and "\n" not in str(e.value)
    assert _counts(db) == (0, 0, 0)


def test_ask_and_tell_reports_progress_and_tells_a_pruned_trial(db):
    with tuna.study("loop", {"x": [1, 5, 2]}, storage=db, pruner="median(warmup_runs=1)") as s:
        while (trial := s.ask()) is not None:
            trial.report(0, float(trial.params["x"]))
            s.tell(trial, tuna.Pruned if trial.should_prune() else trial.params["x"])
    assert [(r.config["x"], r.pruned) for r in _rows(db)] == [(1, False), (5, True), (2, True)]
    assert s.result().best_params == {"x": 1}


def test_a_strategy_by_name_is_optunas_sampler_for_the_studys_objective_and_resumes(lite):
    """strategy="tpe" (issue #28): TPE maximises the study's stat (seed 0), and the same
    name resumes by replaying the stored runs into a fresh in-memory study."""
    space = {"x": list(range(16)), "y": list(range(8)), "kind": ["a", "b", "c"]}

    def score(p):  # the best of 384 points: x=7, y=3, kind=b
        return -((p["x"] - 7) ** 2) - (p["y"] - 3) ** 2 - (0 if p["kind"] == "b" else 5)

    first = tuna.tune(score, space, "maximize", "tpe", budget=20, storage=lite, name="s")
    again = tuna.tune(score, space, "maximize", "tpe", budget=30, storage=lite, name="s")
    assert [r.config for r in again.runs[:20]] == [r.config for r in first.runs]
    assert len({tuple(r.config.items()) for r in again.runs}) == 30  # nothing measured twice
    assert again.best_params == {"x": 7, "y": 3, "kind": "b"}  # random draws miss it in 30
    assert [r.seq for r in _rows(lite)] == list(range(30))


def test_nsga2_by_name_searches_a_front_of_several_objectives_over_ranges(lite):
    """strategy="nsga2" with directions= (issue #28): NSGA-II is told every objective of each
    run, over a float range (log) and an int range, and the study's answer is a front."""
    from tuna.search import Float, Int

    space = {"lr": Float(1e-4, 1e-1, log=True), "n": Int(1, 64)}

    def measure(p):
        return {"time": (p["n"] - 10) ** 2 + p["lr"] * 100, "acc": -abs(math.log10(p["lr"]) + 2)}

    directions = {"time": "min", "acc": "max"}
    result = tuna.tune(
        measure, space, strategy="nsga2", budget=24, storage=lite, name="mo", directions=directions
    )
    assert len(result.runs) == 24
    assert len({tuple(sorted(r.config.items())) for r in result.runs}) == 24
    assert all(1e-4 <= r.config["lr"] <= 1e-1 and 1 <= r.config["n"] <= 64 for r in result.runs)
    assert len(result.pareto) >= 2  # a trade-off between the two, not one best
