"""compile_and_link: the bytes of a one-step build, with or without ccache, which it lets cache."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tuna.backends import toolchain

SOURCE = "int twice(int x) { return 2 * x; }\n"
FLAGS = ("-O2", "-fPIC", "-shared", "-DUNUSED=1")


def _build(tmp: Path, source: str = SOURCE, **kw: object) -> tuple[toolchain.Compiled, Path]:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "twice.c").write_text(source)
    done = toolchain.compile_and_link(
        "cc",
        "twice.c",
        "twice.so",
        flags=FLAGS,
        cwd=tmp,
        timeout=60,
        **kw,  # type: ignore[arg-type]
    )
    return done, tmp / "twice.so"


def test_compile_then_link_gives_the_bytes_of_a_one_step_build(tmp_path, monkeypatch):
    monkeypatch.setenv("CCACHE_DISABLE", "1")
    done, built = _build(tmp_path / "two")
    assert done.ok, done.stderr
    assert done.cmd[-3:] == ("twice.o", "-o", "twice.so")  # the link ran last
    one = tmp_path / "one"
    one.mkdir()
    (one / "twice.c").write_text(SOURCE)
    subprocess.run(["cc", *FLAGS, "-o", "twice.so", "twice.c"], cwd=one, check=True)
    assert built.read_bytes() == (one / "twice.so").read_bytes()


def test_a_compile_error_stops_before_the_link_and_keeps_the_diagnostics(tmp_path):
    done, built = _build(tmp_path, "int twice(int x) { return 2 * y; }\n")
    assert not done.ok
    assert "-c" in done.cmd and "twice.c" in done.cmd
    assert "twice.c:1:31: error:" in done.stderr and "undeclared" in done.stderr
    assert not built.exists()


def test_without_ccache_on_path_the_compiler_runs_alone(tmp_path, monkeypatch):
    dirs = os.environ["PATH"].split(os.pathsep)
    monkeypatch.setenv("PATH", os.pathsep.join(d for d in dirs if not Path(d, "ccache").exists()))
    if shutil.which("cc") is None:
        pytest.skip("cc and ccache share a directory on PATH")
    assert toolchain.launcher() == []
    done, built = _build(tmp_path / "build")
    assert done.ok, done.stderr
    assert built.stat().st_size > 0


@pytest.mark.skipif(shutil.which("ccache") is None, reason="no ccache (bin/test provides it)")
def test_ccache_serves_a_second_build_in_a_fresh_directory_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CCACHE_DISABLE", raising=False)
    assert toolchain.launcher() == ["ccache"]
    first, a = _build(tmp_path / "a")
    second, b = _build(tmp_path / "b")
    assert first.ok and second.ok, (first.stderr, second.stderr)
    assert a.read_bytes() == b.read_bytes()
    stats = subprocess.run(
        ["ccache", "--print-stats"], capture_output=True, text=True, check=True
    ).stdout
    counts = dict(line.split("\t") for line in stats.splitlines() if "\t" in line)
    assert (counts["direct_cache_hit"], counts["cache_miss"]) == ("1", "1"), stats
