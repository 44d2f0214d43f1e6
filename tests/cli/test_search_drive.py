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
        "Error: --pruner and --time-budget go with a parameter file's search; a --strategy "
        "search is bounded by --budget\n",
    )
