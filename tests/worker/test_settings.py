"""One value for a worker's settings, one set of options for ``tuna worker`` and ``go_fish``."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import tuna.cli.go_fish as go_fish_cli
import tuna.cli.worker as worker_cli
from tuna.jobs.values import Phase
from tuna.worker import WorkerReport, WorkerSettings


class _NoDb:
    def dispose(self) -> None:
        pass


@pytest.fixture
def seen(monkeypatch):
    """What ``tuna worker`` and ``go_fish --local`` hand on, instead of running anything."""
    got: dict[str, object] = {}

    def fake_run_worker(db, session_id, phase, settings, **kw):
        got["worker"] = settings
        return WorkerReport("me", session_id, Phase(phase), stopped="drained")

    def fake_run_local(db, session_id, task, **kw):
        got["go_fish"] = kw["settings"].argv()
        raise SystemExit(0)

    monkeypatch.setattr(worker_cli, "database", _NoDb)
    monkeypatch.setattr(worker_cli, "run_worker", fake_run_worker)
    monkeypatch.setattr(go_fish_cli, "database", _NoDb)
    monkeypatch.setattr(go_fish_cli, "run_local", fake_run_local)
    return got


def worker_settings(seen, args: list[str]) -> WorkerSettings:
    r = CliRunner().invoke(
        worker_cli.worker_cmd, ["--session", "1", "--phase", "eval", *args], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    s = seen["worker"]
    assert isinstance(s, WorkerSettings)
    return s


def test_defaults_give_no_arguments():
    assert WorkerSettings().argv() == []


@pytest.mark.parametrize(
    "settings",
    [
        WorkerSettings(claim_batch=16),
        WorkerSettings(lease_seconds=12.5, max_retries=0),
        WorkerSettings(claim_batch=3, lease_seconds=30, max_retries=7, time_limit=0.25),
    ],
)
def test_the_worker_command_reads_back_what_argv_writes(seen, settings):
    got = worker_settings(seen, settings.argv())
    assert got.but(burst=False) == settings


def test_worker_options_land_in_the_settings(seen):
    got = worker_settings(seen, ["--burst", "--max-jobs", "5", "--gpu", "2", "--machine", "9"])
    assert (got.burst, got.max_jobs, got.gpu, got.machine) == (True, 5, 2, 9)


def test_go_fish_hands_its_worker_options_to_its_workers(seen, tmp_path):
    args = ["--claim-batch", "8", "--lease-seconds", "20", "--max-retries", "1"]
    args += ["--time-limit", "9"]
    r = CliRunner().invoke(
        go_fish_cli.go_fish_cmd,
        ["--session", "1", "--compile", "--local", "--log-dir", str(tmp_path), *args],
    )
    assert r.exit_code == 0, r.output
    assert seen["go_fish"] == args
    assert worker_settings(seen, seen["go_fish"]) == WorkerSettings(
        claim_batch=8, lease_seconds=20, max_retries=1, time_limit=9
    )


def test_a_setting_run_worker_does_not_know_is_refused(lite):
    from tuna.worker import run_worker

    with pytest.raises(TypeError, match="unknown settings: claim_size"):
        run_worker(lite, 1, "compile", claim_size=3)
