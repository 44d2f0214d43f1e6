"""A search of several objectives as `tuna search show` and `tuna best --search` show it:
its constraints, baseline and Pareto front, the same front tuna.tune returned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tuna
from tests.searches.test_tune_objectives import EXACT, SPACE, TWO, WITHIN_3, approximate
from tuna.cli import main
from tuna.config import load_settings


def _study() -> tuna.TuneResult:
    return tuna.tune(approximate, SPACE, directions=TWO, constraints=WITHIN_3, baseline=EXACT,
                     storage=load_settings().db_url, name="approx")  # fmt: skip


def test_search_show_gives_the_objectives_the_constraint_and_the_front(runner):
    result = _study()
    r = runner.invoke(main, ["search", "show", str(result.search), "--limit", "3"])
    assert r.exit_code == 0, r.output
    lines = [x.rstrip() for x in r.output.splitlines()]
    assert lines[0].endswith("objectives minimise time_ms, maximise accuracy")
    assert lines[1] == "  constraint: accuracy >= baseline.accuracy - 3"
    assert lines[2] == "  baseline: run -1 (level=0 width=2): time_ms=26 accuracy=90.4 calls=1"
    assert lines[4] == "  best: run 4, time_ms = 15 (level=2 width=1)"
    assert lines[5] == "  pareto front: 7 runs, best time_ms first"
    front = [line.split() for line in lines[7:14]]
    assert [f[0] for f in front] == ["4", "5", "2", "3", "0", "-1", "1"]
    assert front[0][1:] == ["level=2", "width=1", "15", "88.2"]
    # the front tune() returned, in its order:
    assert [dict(run.config) for run in result.pareto] == [
        {"level": 2, "width": 1}, {"level": 2, "width": 2}, {"level": 1, "width": 1},
        {"level": 1, "width": 2}, {"level": 0, "width": 1}, EXACT, EXACT,
    ]  # fmt: skip


def test_a_run_failing_the_constraint_says_so(runner):
    result = _study()
    r = runner.invoke(main, ["search", "show", str(result.search), "--status", "valid",
                             "--limit", "0"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "yes; does not count (accuracy >= baseline.accuracy - 3: not met)" in r.output
    assert r.output.count("does not count") == 4  # levels 3 and 4, both widths


def test_best_and_show_as_json_agree_with_tune(runner):
    result = _study()
    best = runner.invoke(main, ["best", "--search", str(result.search)])
    assert best.exit_code == 0, best.output
    doc = json.loads(best.output)
    assert doc["objectives"] == [{"stat": "time_ms", "goal": "min"},
                                 {"stat": "accuracy", "goal": "max"}]  # fmt: skip
    assert doc["constraints"] == WITHIN_3
    assert doc["baseline"]["seq"] == -1 and doc["baseline"]["stats"]["accuracy"] == 90.4
    assert [p["stats"] for p in doc["pareto"]] == [dict(run.stats) for run in result.pareto]
    assert doc["best"]["stats"] == dict(result.best.stats)
    show = runner.invoke(main, ["search", "show", str(result.search), "--json"])
    assert show.exit_code == 0, show.output
    shown = json.loads(show.output)

    def seq_stats(rows):
        return [(r["seq"], r["run_params"], r["stats"]) for r in rows]

    assert seq_stats(shown["pareto"]) == seq_stats(doc["pareto"])
    assert seq_stats([shown["best"]]) == seq_stats([doc["best"]])
    assert shown["search"]["objective"] == "time_ms:min, accuracy:max"


def test_best_search_refuses_target_options(runner):
    r = runner.invoke(main, ["best", "--search", "1", "-a", "gfx90a"])
    assert r.exit_code == 2
    assert "--search goes alone" in r.output


def _bench_session(runner) -> None:
    args = ["session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "bench"]
    r = runner.invoke(main, args)
    assert r.exit_code == 0, r.output


def _create(tmp_path: Path) -> list[str]:
    space = tmp_path / "space.json"
    space.write_text('{"a": [1, 2], "b": [5, 6]}')
    return ["search", "create", str(space), "-s", "1", "--name", "qos",
            "--run", "echo t: {a}; echo acc: {b}"]  # fmt: skip


def test_search_create_takes_objectives_constraints_and_a_baseline(runner, tmp_path):
    _bench_session(runner)
    r = runner.invoke(main, [*_create(tmp_path), "--objective", "t", "--objective", "acc:max",
                             "--constraint", "acc >= baseline.acc - 1",
                             "--baseline", "a=2", "--baseline", "b=6"])  # fmt: skip
    assert r.exit_code == 0, r.output
    show = runner.invoke(main, ["search", "show", "1", "--json"])
    doc = json.loads(show.output)["search"]
    assert doc["objective"] == "t:min, acc:max"
    assert doc["constraints"] == ["acc >= baseline.acc - 1"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--objective", "t:fast"], "Error: objective 't': direction 'fast'; use 'min' or 'max'"),
        (["--objective", "t", "--constraint", "acc >="], "Error: constraint 'acc >=': not an "),
        (["--objective", "t", "--baseline", "a"], "Error: --baseline 'a' is not KEY=VALUE"),
        (["--objective", "t", "--baseline", "a=1"], "misses 'b'; give a value of each"),
        (["--objective", "t", "--constraint", "acc > baseline.acc"], "but no baseline is given"),
    ],
)
def test_search_create_refuses_bad_objectives_in_one_line(runner, tmp_path, extra, message):
    _bench_session(runner)
    r = runner.invoke(main, [*_create(tmp_path), *extra])
    assert r.exit_code == 1
    assert r.output.startswith("Error: ") and message in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert "has no search yet" in runner.invoke(main, ["search", "list", "-s", "1"]).output
