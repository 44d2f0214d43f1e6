"""The house rule from the command line: a strategy search with a constraint its solver's
default parameters fail (``--constraint 'threads >= 2'``; the default runs one thread)
stores a winner that meets it, and the perf/find rows, ``tuna best``, ``tuna best
--search``, ``tuna search show --json`` and ``export_db`` all name that one winner, also
when a re-timing turn of the final job reorders the finalists (tests/searches/
test_strategy_final.py stands a faster turn in). Real cpuconv kernels, a real worker."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner

from tests.searches.test_strategy import SOLVER, cpuconv_session
from tests.searches.test_strategy_final import drive_with_a_faster_turn
from tuna.cli import main
from tuna.config import load_settings
from tuna.db import open_database
from tuna.searches import query

pytestmark = pytest.mark.usefixtures("own_lock_dir")

LOAD = ["load_jobs", "-t", "t", "-s", "1", "--strategy", "random", "--budget", "8",
        "--round-size", "4", "--seed", "3", "--solvers", SOLVER]  # fmt: skip


def _json(runner: CliRunner, *args: str) -> object:
    r = runner.invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_every_reader_names_the_stored_winner(runner: CliRunner, tmp_path) -> None:
    db = open_database(load_settings().db_url)
    try:
        session, _ = cpuconv_session(db)
        r = runner.invoke(main, [*LOAD, "--constraint", "threads >= 2"])
        assert r.exit_code == 0, r.output
        (summary,) = query.list_searches(db, session)
        winner = drive_with_a_faster_turn(db, session, summary.id)
    finally:
        db.dispose()
    shown = _json(runner, "search", "show", str(summary.id), "--json")
    answer = _json(runner, "best", "--search", str(summary.id))
    written = runner.invoke(main, ["best", "-s", "1", "-o", str(tmp_path / "best.json")])
    assert written.exit_code == 0, written.output
    best = json.loads((tmp_path / "best.json").read_text())
    assert isinstance(shown, dict) and isinstance(answer, dict)

    def params(row) -> str:
        return ",".join(str(v) for v in row["run_params"].values())

    assert params(shown["best"]) == params(answer["best"]) == winner
    assert shown["best"]["stats"]["threads"] >= 2
    assert shown["stored"]["params"] == winner and shown["stored"]["mine"]
    assert shown["stored"]["time_ms"] == shown["best"]["value"] == answer["best"]["value"]
    (problem,) = best["problems"]
    assert "T" in problem["created"]  # ISO 8601, as every command's JSON writes a time
    assert dt.datetime.fromisoformat(problem["created"]).isoformat() == problem["created"]
    assert (problem["params"], problem["time_ms"]) == (winner, shown["stored"]["time_ms"])
    out = tmp_path / "out"
    exported = runner.invoke(main, ["export_db", "-s", "1", "-p", "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    (perf,) = [p for p in out.iterdir() if p.name.endswith(".db.txt")]
    (line,) = perf.read_text().splitlines()
    assert line.endswith(f"={SOLVER}:{winner}")
