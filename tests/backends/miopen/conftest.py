"""Fixtures for the miopen backend: sessions that run the FAKE fin (see recorded.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends.miopen.recorded import FAKE_FIN
from tuna.backends.base import SessionInfo


@pytest.fixture
def fake_env(tmp_path: Path) -> dict[str, str]:
    """A session environment that runs the FAKE fin, with scratch dirs under tmp_path."""
    return {"FIN_PATH": FAKE_FIN, "FIN_SCRATCH_DIR": str(tmp_path / "scratch")}


@pytest.fixture
def session(fake_env: dict[str, str]) -> SessionInfo:
    return SessionInfo(id=7, arch="gfx906", num_cu=60, backend="miopen", environment=dict(fake_env))


@pytest.fixture(autouse=True)
def _no_worker_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' own MIOpen cache paths must not leak in from the environment."""
    for key in ("MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR", "FAKE_FIN_RECORDINGS"):
        monkeypatch.delenv(key, raising=False)
