"""The host compiler calls of the backends that build C or C++ (cpuconv's units, cuda's host check).

A source is compiled (``-c``) and then linked as two calls, because ``ccache`` caches only the
first: a one-step ``cc -shared -o x.so x.c`` is a link to it, run every time. ``ccache`` is the
launcher of the compile when it is on ``PATH`` (``CCACHE_DISABLE=1`` turns it off, as ccache
reads it itself). The source is named relative to ``cwd``, so a unit built in a fresh temporary
directory hashes the same as the last one and hits the cache; the object is the same bytes
either way, so the linked file is too.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Compiled:
    """The outcome of :func:`compile_and_link`: the last command run and its exit and output."""

    cmd: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def launcher() -> list[str]:
    """``["ccache"]`` where it is installed, else nothing."""
    return ["ccache"] if shutil.which("ccache") else []


def compile_and_link(
    compiler: str,
    source: str,
    output: str,
    *,
    flags: Sequence[str],
    cwd: Path,
    timeout: float,
    link_flags: Sequence[str] = (),
) -> Compiled:
    """Compile ``cwd/source`` with ``flags`` (less ``-shared``) and link it into ``cwd/output``
    with ``flags`` and ``link_flags``; stops at the first call that fails. Raises
    ``FileNotFoundError`` when the compiler is missing and ``subprocess.TimeoutExpired`` when a
    two calls run past ``timeout`` seconds together."""
    obj = f"{Path(source).stem}.o"
    compile_cmd = [*launcher(), compiler, *(f for f in flags if f != "-shared"), "-c", source]
    link_cmd = [compiler, *flags, *link_flags, obj, "-o", output]
    deadline = time.monotonic() + timeout
    for cmd in ([*compile_cmd, "-o", obj], link_cmd):
        left = max(deadline - time.monotonic(), 0.001)
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=left)
        if proc.returncode != 0:
            break
    return Compiled(tuple(cmd), proc.returncode, proc.stdout, proc.stderr)
