"""``load_jobs --strategy ... --constraint 'threads <= baseline.threads'`` from the command
line (issue #28): the search measures the solver's default parameters first, and `tuna
search show` and `tuna best --search` give the same baseline and the same answer, a run
that meets the constraint; a constraint on a stat the runs lack is one line, nothing
stored. Real cpuconv kernels timed by a real worker."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner

from tests.searches.test_strategy import SOLVER, cpuconv_session
from tuna.cli import main
from tuna.config import load_settings
from tuna.db import open_database
from tuna.searches import SearchDriver, query
from tuna.worker import run_worker

pytestmark = pytest.mark.usefixtures("own_lock_dir")

LOAD = ["load_jobs", "-t", "t", "-s", "1", "--strategy", "random", "--budget", "4",
        "--round-size", "4", "--seed", "3", "--solvers", SOLVER]  # fmt: skip


def test_show_and_best_agree_on_the_baseline_and_the_answer(runner: CliRunner) -> None:
    db = open_database(load_settings().db_url)
    try:
        session, _ = cpuconv_session(db)
        assert session == 1
        r = runner.invoke(main, [*LOAD, "--constraint", "threads <= baseline.threads"])
        assert r.exit_code == 0, r.output
        (summary,) = query.list_searches(db, session)
        driver = SearchDriver(db, summary.id)
        while driver.tick():
            run_worker(db, session, "eval", until_empty=True, handle_signals=False)
        shown_runs = query.runs(db, query.find_search(db, summary.id), limit=None)
    finally:
        db.dispose()
    best = runner.invoke(main, ["best", "--search", str(summary.id)])
    assert best.exit_code == 0, best.output
    doc = json.loads(best.output)
    show = runner.invoke(main, ["search", "show", str(summary.id), "--json"])
    assert show.exit_code == 0, show.output
    shown = json.loads(show.output)
    assert doc["constraints"] == ["threads <= baseline.threads"]
    assert doc["baseline"]["seq"] == -1 and doc["baseline"]["stats"]["threads"] == 1
    assert shown["baseline"] == doc["baseline"]  # the rows whole: their times alike (ISO)
    assert shown["best"] == doc["best"]
    assert dt.datetime.fromisoformat(doc["best"]["finished"]).isoformat() == doc["best"]["finished"]
    assert doc["best"]["stats"]["threads"] <= 1
    fastest = min(r.value for r in shown_runs if r.valid and r.stats["threads"] <= 1)
    assert doc["best"]["stats"]["time_ms"] == fastest
    text = runner.invoke(main, ["search", "show", str(summary.id)])
    assert text.exit_code == 0, text.output
    assert "  constraint: threads <= baseline.threads" in text.output
    assert "  baseline: run -1 (" in text.output


def test_a_baseline_stat_the_runs_lack_is_one_line_and_nothing_is_stored(runner) -> None:
    db = open_database(load_settings().db_url)
    try:
        session, _ = cpuconv_session(db)
        r = runner.invoke(main, [*LOAD, "--constraint", "time_ms <= baseline.accuracy"])
        assert r.exit_code == 1
        assert r.output.startswith("Error: objective or constraint stat 'baseline.accuracy': ")
        assert len(r.output.strip().splitlines()) == 1
        assert query.list_searches(db, session) == []
    finally:
        db.dispose()
