"""docker/Dockerfile.miopen cannot be built here; check what can be checked without building it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tuna.backends.miopen.environment import GPU_CONTAINER_ARGS
from tuna.backends.miopen.runner import DEFAULT_FIN

DOCKERFILE = Path(__file__).resolve().parents[3] / "docker" / "Dockerfile.miopen"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") or (not line.strip() and not pending):
            continue
        if line.endswith("\\"):
            pending += line[:-1]  # Docker joins the lines, escape and newline removed
            continue
        text = pending + line
        pending = ""
        word, _, rest = text.strip().partition(" ")
        out.append((word, rest))
    assert not pending, "the last instruction ends with a line continuation"
    return out


def test_every_line_is_an_instruction():
    known = {"ARG", "FROM", "RUN", "ENV", "COPY", "LABEL", "WORKDIR", "CMD", "SHELL"}
    assert {word for word, _ in instructions()} <= known


def test_the_header_says_how_to_build_and_run_it():
    head = DOCKERFILE.read_text().split("\nARG ", 1)[0]
    assert "docker build -f docker/Dockerfile.miopen" in head
    assert "MIOPEN_BACKEND=HIPNOGPU" in head
    assert " ".join(GPU_CONTAINER_ARGS) in head  # what the backend gives go_fish
    assert "--privileged" not in head.replace("never --privileged", "")
    assert "FIN_PATH=" + DEFAULT_FIN in head


def test_fin_lands_where_the_backend_looks_for_it():
    text = DOCKERFILE.read_text()
    assert f"test -x {DEFAULT_FIN}" in text
    assert '-DMIOPEN_BACKEND="${MIOPEN_BACKEND}"' in text
    assert "-DMIOPEN_ENABLE_FIN=ON" in text


def test_every_build_arg_used_is_declared():
    text = DOCKERFILE.read_text()
    declared = {m.group(1) for m in re.finditer(r"^ARG (\w+)", text, re.M)}
    env = {m.group(1) for m in re.finditer(r"^ENV (\w+)=", text, re.M)} | {"MIOPEN_DEPS"}
    used = {m.group(1) for m in re.finditer(r"\$\{(\w+)", text)}
    assert used - declared - env - {"PATH", "JOBS"} == set()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_every_run_is_valid_shell():
    for word, args in instructions():
        if word == "RUN":
            check = subprocess.run(["bash", "-n", "-c", args], capture_output=True, text=True)
            assert check.returncode == 0, f"{args[:80]}...: {check.stderr}"
