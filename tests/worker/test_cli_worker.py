"""``tuna worker`` (the command lives in tuna/cli/worker.py)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from tests.support.seed import ALL_NOOP_SOLVERS, open_test_db, seed
from tuna.cli import main
from tuna.jobs import job_counts


def test_a_burst_worker_drains_a_phase_and_reports(sqlite_url, monkeypatch):
    monkeypatch.setenv("TUNA_DB_URL", sqlite_url)
    db = open_test_db(sqlite_url)
    sd = seed(db, configs=3, solvers=ALL_NOOP_SOLVERS)
    runner = CliRunner()
    for phase, summary in (
        (
            "compile",
            "12 claimed, 9 done, 0 retried, 0 errored, 3 not applicable, 0 lost, "
            "0 released, 0 reaped",
        ),
        (
            "eval",
            "9 claimed, 9 done, 0 retried, 0 errored, 0 not applicable, 0 lost, "
            "0 released, 0 reaped",
        ),
    ):
        result = runner.invoke(
            main,
            [
                "worker",
                "--session",
                str(sd.session),
                "--phase",
                phase,
                "--burst",
                "--claim-batch",
                "4",
            ],
        )
        assert result.exit_code == 0, result.output
        assert re.fullmatch(
            rf"worker \S+:\d+:[0-9a-f]{{8}} \({phase}, session {sd.session}\) stopped: drained; "
            rf"{summary}, in \d+\.\d s\n",
            result.output,
        ), result.output
    assert job_counts(db, sd.session).by_state["evaluated"] == 9
    db.dispose()


def test_an_unknown_session_is_an_error(sqlite_url, monkeypatch):
    monkeypatch.setenv("TUNA_DB_URL", sqlite_url)
    result = CliRunner().invoke(main, ["worker", "--session", "7", "--phase", "eval", "--burst"])
    assert (result.exit_code, result.output) == (
        1,
        "Error: session 7 does not exist; `tuna session list` shows the sessions\n",
    )


def test_help_has_examples():
    result = CliRunner().invoke(main, ["worker", "--help"])
    assert result.exit_code == 0
    assert "Examples:" in result.output
    assert "tuna worker --session 3 --phase compile" in result.output
