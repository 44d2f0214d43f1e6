"""The CLI as a user runs it, on a throwaway embedded database, for end-to-end tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.databases import copy_sqlite_template
from tuna.cli import main


def embedded_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A runner whose commands use the embedded database in ``tmp_path/data`` (a copy of a
    migrated one) and a lock directory of their own (go_fish's local workers take locks)."""
    monkeypatch.setenv("TUNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TUNA_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("COLUMNS", "200")
    copy_sqlite_template(tmp_path / "data" / "tuna.db")
    return CliRunner()


def ok(runner: CliRunner, *args: str) -> str:
    """The output of a command that must succeed."""
    r = runner.invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return r.output
