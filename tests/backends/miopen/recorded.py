"""The miopen backend's test material: the real fin recording, the FAKE fin, scripts as fin."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

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
