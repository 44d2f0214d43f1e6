"""Fixtures for the miopen backend: the real fin recording, the FAKE fin, sessions using it."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from tuna.backends.base import SessionInfo
from tuna.problems.conv import ConvProblem
from tuna.problems.driver import parse_driver_line

RECORDINGS = Path(__file__).resolve().parents[3] / "tuna" / "backends" / "miopen" / "recordings"
REAL_OUTPUT = RECORDINGS / "fin_output_find_eval.json"
#: The problem of the real recording, as MIOpenDriver would give it (config 125733 there).
RECORDED_LINE = (
    "./bin/MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -p 0 -q 0 "
    "-u 2 -v 2 -l 1 -j 1 -m conv -g 1 -F 2"
)
#: Runs the FAKE fin with this interpreter (FIN_PATH may be a command line).
FAKE_FIN = f"{sys.executable} -m tuna.backends.miopen.fake_fin"


def recorded_problem() -> ConvProblem:
    return parse_driver_line(RECORDED_LINE)[0]


def real_output() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(REAL_OUTPUT.read_text())
    return data


def script(path: Path, body: str) -> str:
    """An executable shell script at ``path``; returns its path (usable as FIN_PATH)."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


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
