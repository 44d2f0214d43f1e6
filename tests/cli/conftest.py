from __future__ import annotations

import pytest
from click.testing import CliRunner


@pytest.fixture
def runner(tmp_path, monkeypatch) -> CliRunner:
    """A CLI runner whose database is a fresh SQLite file (the embedded default)."""
    monkeypatch.setenv("TUNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")
    return CliRunner()
