from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.support.databases import copy_sqlite_template


@pytest.fixture
def bare_runner(tmp_path, monkeypatch) -> CliRunner:
    """A CLI runner whose data directory (``tmp_path/data``, the embedded database's) does not
    exist yet: the first command creates it and migrates a new SQLite database there."""
    monkeypatch.setenv("TUNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")
    return CliRunner()


@pytest.fixture
def runner(bare_runner, tmp_path) -> CliRunner:
    """A CLI runner whose database is the embedded default, already at the head revision: a
    copy of a migrated SQLite file (tests/support/databases.py), which is what the first
    command would have made of the empty data directory, without the migration."""
    copy_sqlite_template(tmp_path / "data" / "tuna.db")
    return bare_runner
