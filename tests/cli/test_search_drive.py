"""``tuna search create``'s --pruner and --time-budget (issue #28): stored as given, and
bad values one line that stores nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tuna.cli import main
from tuna.config import load_settings
from tuna.db import open_database
from tuna.db.models import Search
from tuna.searches import query


@pytest.fixture
def bench(runner: CliRunner, tmp_path: Path) -> tuple[CliRunner, list[str]]:
    """A bench session, and the arguments of a search of it but for its limits."""
    args = ["session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "bench"]
    assert runner.invoke(main, args).exit_code == 0
    params = tmp_path / "params.json"
    params.write_text('{"x": [1, 2, 3]}')
    create = ["search", "create", str(params), "-s", "1", "--name", "lr", "--objective", "loss"]
    return runner, [*create, "--run", "echo loss: {x}"]


def test_a_pruner_and_a_time_budget_are_stored(bench: tuple[CliRunner, list[str]]) -> None:
    runner, create = bench
    r = runner.invoke(main, [*create, "--pruner", "halving(factor=2)", "--time-budget", "1h30m"])
    assert r.exit_code == 0, r.output
    db = open_database(load_settings().db_url)
    try:
        with db.session() as s:
            row = s.get(Search, 1)
            assert row is not None
            assert row.pruner == {"name": "halving", "min_step": 1, "factor": 2}
            assert row.time_budget_s == 5400.0
    finally:
        db.dispose()
    r = runner.invoke(main, ["search", "show", "1"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[2] == (
        "  limits: pruner halving(min_step=1, factor=2), time budget 1h30m"
    )


def test_a_search_without_limits_shows_none(bench: tuple[CliRunner, list[str]]) -> None:
    runner, create = bench
    assert runner.invoke(main, create).exit_code == 0
    r = runner.invoke(main, ["search", "show", "1"])
    assert r.exit_code == 0, r.output
    assert "limits:" not in r.output


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--pruner", "mean"],
            "Error: pruner 'mean': write 'median', 'median(warmup_runs=5, warmup_steps=0)' "
            "or 'halving(min_step=1, factor=3)'",
        ),
        (
            ["--pruner", "median(warmup_runs=0)"],
            "Error: pruner median: warmup_runs 0: give an integer >= 1",
        ),
        (
            ["--time-budget", "10 minutes"],
            "Error: time budget '10 minutes': give a duration above 0, e.g. 90 (seconds), "
            "90s, 10m, 1h30m or 2h",
        ),
    ],
)
def test_a_bad_pruner_or_time_budget_is_one_line_and_stores_nothing(
    bench: tuple[CliRunner, list[str]], flags: list[str], message: str
) -> None:
    runner, create = bench
    r = runner.invoke(main, [*create, *flags])
    assert (r.exit_code, r.output) == (1, message + "\n")
    db = open_database(load_settings().db_url)
    try:
        assert query.list_searches(db, 1) == []
    finally:
        db.dispose()


def test_a_strategy_search_takes_no_pruner(bench: tuple[CliRunner, list[str]]) -> None:
    runner, _ = bench
    args = ["search", "create", "-s", "1", "--strategy", "random", "--config", "1"]
    r = runner.invoke(main, [*args, "--solver", "CpuGemm1x1", "--pruner", "median"])
    assert (r.exit_code, r.output) == (
        1,
        "Error: --pruner goes with a parameter file's search: a --strategy round is one job "
        "that times its candidates together, with no intermediate values to stop early; "
        "bound it by --budget or --time-budget\n",
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "p.json",
            '{"tile": {"int": [64, 4]}}',
            "parameter 'tile': the range [64, 4] is empty (lo is above hi); give lo <= hi",
        ),
        (
            "p.py",
            "from tuna.search import Int\ntile = Int(4, 64, step=0)\n",
            "parameter 'tile': step 0: an Int's step is a whole number of at least 1",
        ),
        (
            "p.json",
            '{"lr": {"float": [0, 1], "log": true}}',
            "parameter 'lr': log=True needs lo > 0 (a log scale has no 0 or negatives), not lo=0",
        ),
        (
            "p.json",
            '{"x": [1], "u": {"values": [1], "when": {"algo": "t"}}}',
            "parameter 'u' is conditional on 'algo', which is not a parameter declared before "
            "it (the parameters before it are 'x'); declare 'algo' first, or fix the condition",
        ),
        (
            "p.py",
            "x = [1, 2]\nMETA_constraints = ['x * width < 4']\n",
            "META_constraints: constraint 'x * width < 4' names 'width', which is not a "
            "parameter (the parameters are 'x'); fix the name or declare the parameter",
        ),
        (
            "p.json",
            '{"x": [1], "META_constraints": ["x.bit_length() < 4"]}',
            "META_constraints: constraint 'x.bit_length() < 4' uses a function call, which a "
            "constraint may not; use only parameter names, numbers, strings, arithmetic, "
            "comparisons, and/or/not",
        ),
        (
            "p.json",
            '{"x": {"float": [0.5, 2]}}',
            "parameter 'x' is Float(0.5, 2), a continuous range, so the exhaustive search "
            "(CartesianProduct) cannot list its values; give it a step, or use a searcher "
            "that samples, e.g. Random(space, 50, seed=1)",
        ),
    ],
)
def test_a_bad_range_condition_or_constraint_is_one_line_and_stores_nothing(
    bench: tuple[CliRunner, list[str]], tmp_path: Path, name: str, text: str, message: str
) -> None:
    """Issue #28's every new input error: one "Error:" line naming the file, exit 1."""
    runner, _ = bench
    params = tmp_path / name
    params.write_text(text)
    create = ["search", "create", str(params), "-s", "1", "--name", "r", "--objective", "t"]
    r = runner.invoke(main, [*create, "--run", "echo t: {x}"])
    assert (r.exit_code, r.output) == (1, f"Error: {params}: {message}\n")
    db = open_database(load_settings().db_url)
    try:
        assert query.list_searches(db, 1) == []
    finally:
        db.dispose()


def test_a_search_over_ranges_is_stored_with_a_searcher_that_samples(
    bench: tuple[CliRunner, list[str]], tmp_path: Path
) -> None:
    runner, _ = bench
    params = tmp_path / "p.py"
    params.write_text(
        "from tuna.search import Categorical, Float, Int\n"
        "algo = ['a', 'b']\nx = Int(1, 9, step=2)\nlr = Float(1e-4, 1e-1, log=True)\n"
        "u = Categorical([1, 2], when={'algo': 'b'})\nMETA_constraints = ['x * lr < 0.5']\n"
    )
    create = ["search", "create", str(params), "-s", "1", "--name", "r", "--objective", "t"]
    r = runner.invoke(main, [*create, "--run", "echo t: {x}", "--searcher", "Random(space, 5)"])
    assert r.exit_code == 0, r.output
    db = open_database(load_settings().db_url)
    try:
        assert [s.name for s in query.list_searches(db, 1)] == ["r"]
    finally:
        db.dispose()
