"""Objectives and base configurations."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuna.searchers import Objective, ObjectiveError, Run, SearchError, load_base_config
from tuna.searchers.config import parse_assignments
from tuna.searchers.objective import make_objective, parse_target

RUNS = [
    Run({"t": 1}, {"qps": 100, "p95": 3.0, "result_validity": "VALID"}),
    Run({"t": 2}, {"qps": 300, "p95": 9.0, "result_validity": "INVALID"}),
    Run({"t": 4}, {"qps": 200, "p95": 5.0, "result_validity": "VALID"}),
    Run.invalid({"t": 8}, "run timed out after 5 s"),
    Run({"t": 16}, {"qps": "n/a", "result_validity": "VALID"}),
]


@pytest.mark.parametrize(
    ("objective", "best_t"),
    [
        (Objective("qps", "max"), 2),
        (Objective("qps", "max", validity="result_validity"), 4),
        (Objective("p95", "min"), 1),
        (Objective("qps", "max", validity=lambda r: r.stats["p95"] < 4), 1),
    ],
)
def test_best(objective: Objective, best_t: int) -> None:
    best = objective.best(RUNS)
    assert best is not None and best.config["t"] == best_t


def test_no_run_counts() -> None:
    assert Objective("qps").best([Run.invalid({}, "build failed")]) is None
    assert Objective("qps").best([]) is None


@pytest.mark.parametrize(
    "objective", [Objective("throughput", "max"), Objective("qps", validity="ok")]
)
def test_objective_stat_the_runs_never_print(objective: Objective) -> None:
    with pytest.raises(ObjectiveError, match="is in no run's output \\(the runs printed: p95, qps"):
        objective.best(RUNS)


def test_base_config(tmp_path: Path) -> None:
    p = tmp_path / "base.json"
    p.write_text('{"threads": 2, "mode": "fast", "nested": {"a": 1}}')
    assert load_base_config(p, ["threads=8", "ratio=0.5", "on=true", "name=x=y"]) == {
        "threads": 8,
        "mode": "fast",
        "nested": {"a": 1},
        "ratio": 0.5,
        "on": True,
        "name": "x=y",
    }
    assert parse_assignments(["flags=-O2 -g", "v=[1]"]) == {"flags": "-O2 -g", "v": "[1]"}


@pytest.mark.parametrize(
    ("content", "items", "message"),
    [
        (None, ["threads"], "'threads' is not KEY=VALUE"),
        (None, ["=3"], "is not KEY=VALUE"),
        ("[1]", [], "must be one JSON object"),
        ("{", [], "is not valid JSON"),
    ],
)
def test_bad_base_config(
    tmp_path: Path, content: str | None, items: list[str], message: str
) -> None:
    path = None
    if content is not None:
        path = tmp_path / "base.json"
        path.write_text(content)
    with pytest.raises(SearchError, match=message):
        load_base_config(path, items)


TRADE = [
    Run({"k": 0}, {"time_ms": 10.0, "accuracy": 90.0}),
    Run({"k": 1}, {"time_ms": 8.0, "accuracy": 89.0}),
    Run({"k": 2}, {"time_ms": 8.0, "accuracy": 85.0}),  # dominated by k=1
    Run({"k": 3}, {"time_ms": 5.0, "accuracy": 80.0}),  # fails the constraint
    Run({"k": 4}, {"time_ms": 6.0}),  # no accuracy: does not count
    Run.invalid({"k": 5}, "crashed"),
]


def test_several_objectives_a_constraint_and_a_baseline() -> None:

    objective = make_objective(
        {"time_ms": "min", "accuracy": "maximize"}, ["accuracy >= baseline.accuracy - 5"]
    ).with_baseline(TRADE[0].stats)
    assert [r.config["k"] for r in objective.front(TRADE)] == [1, 0]
    best = objective.best(TRADE)
    assert best is not None and best.config["k"] == 1
    assert objective.unmet(TRADE[3]) == "accuracy >= baseline.accuracy - 5: not met"
    assert objective.unmet(TRADE[4]) == "no number 'accuracy'"
    assert objective.unmet(TRADE[5]) == "crashed"
    assert objective.reads_stats and not Objective("time_ms").reads_stats
    assert objective.with_baseline(None).front(TRADE) == []  # baseline.X unknown: none counts


def test_stored_and_read_back() -> None:

    objective = make_objective({"time_ms": "min", "accuracy": "max"}, ["qos_loss <= 3"])
    stored = objective.stored()
    assert stored == {
        "stat": "time_ms", "goal": "min", "valid": None,
        "objectives": [{"stat": "time_ms", "goal": "min"}, {"stat": "accuracy", "goal": "max"}],
        "constraints": ["qos_loss <= 3"],
    }  # fmt: skip
    assert Objective.from_stored(stored) == objective
    assert Objective("t", "max", "ok").stored() == {"stat": "t", "goal": "max", "valid": "ok"}
    assert objective.named_stats() == ["time_ms", "accuracy", "qos_loss"]


@pytest.mark.parametrize(
    ("text", "stat", "goal"),
    [
        ("time_ms:min", "time_ms", "min"),
        ("accuracy:max", "accuracy", "max"),
        ("gflops:maximize", "gflops", "max"),
        ("time_ms", "time_ms", "min"),
    ],  # fmt: skip
)
def test_parse_target(text: str, stat: str, goal: str) -> None:

    t = parse_target(text)
    assert (t.stat, t.goal) == (stat, goal)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (":min", "write STAT:min or STAT:max"),
        ("time_ms:fast", "direction 'fast'; use 'min' or 'max'"),
    ],
)
def test_parse_target_refuses(text: str, message: str) -> None:

    with pytest.raises(ObjectiveError, match=message):
        parse_target(text)
