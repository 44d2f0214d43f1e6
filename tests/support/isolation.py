"""The guard that keeps the tests self-contained: no test opens a file outside the repo.

An audit hook (``sys.addaudithook``, event ``open``) sees every file this process opens.
Outside the repo, only what a test legitimately touches passes: temporary directories
(``tmp_path`` and the like), the Python installation and its packages, the system's own
directories (``/dev``, ``/proc``, ``/etc``, ...) and the user's cache directory (tools keep
caches there that are not inputs: matplotlib's font list, the dashboard tests' browser).
Anything else, such as ``../shared/data`` next to the checkout, is recorded against the
running test, which then fails; one opened while collecting fails the run. Subprocesses
are not audited; what they read comes from their command line, which the test chose.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_SYSTEM = ("/dev", "/proc", "/sys", "/etc", "/usr", "/lib", "/lib64", "/run", "/var/run")


def _allowed_roots() -> tuple[str, ...]:
    roots = {str(REPO), os.path.realpath(tempfile.gettempdir()), tempfile.gettempdir(), *_SYSTEM}
    roots |= {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.add(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"))
    roots |= {os.path.realpath(r) for r in list(roots)}
    roots |= {p for p in sysconfig.get_paths().values() if p}
    roots |= set(site.getsitepackages()) | {site.getusersitepackages()}
    return tuple(sorted(r.rstrip("/") for r in roots if r))


_ALLOWED = _allowed_roots()
# The checkout's siblings are never inputs, even where the checkout itself sits inside an
# allowed root (a clone under /tmp, as CI may make one, has ../shared under /tmp too).
_FORBIDDEN = tuple(
    str(p) for p in (REPO.parent / "shared", Path(os.path.realpath(REPO.parent)) / "shared")
)
_lock = threading.Lock()
_seen: list[str] = []  # paths opened outside the allowed roots since the last take()


def outside(path: str) -> bool:
    """Whether opening ``path`` (absolute or relative to the working directory) breaks the rule."""
    full = os.path.abspath(path)
    if any(full == r or full.startswith(r + os.sep) for r in _FORBIDDEN):
        return True
    return not any(full == r or full.startswith(r + os.sep) for r in _ALLOWED)


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event != "open" or not args:
        return
    path = args[0]
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if isinstance(path, str) and outside(path):
        with _lock:
            _seen.append(os.path.abspath(path))


def take() -> list[str]:
    """The paths opened outside the repo since the last call (and forget them)."""
    with _lock:
        out = sorted(set(_seen))
        _seen.clear()
    return out


_installed = False


def install() -> None:
    """Start watching (once per process; an audit hook cannot be removed)."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
