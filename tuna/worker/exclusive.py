"""Evaluations that must not overlap: a lock per machine, or per device, around timing.

A backend declares what one evaluation must own (:class:`~tuna.backends.base.Owns`); the
worker holds the matching lock while the backend evaluates. The locks are ``flock`` locks
on files in one directory of the machine (``TUNA_LOCK_DIR``, default ``<tmp>/tuna-locks``),
so every worker process on the machine agrees, whoever started it; the kernel releases a
lock when its holder dies, so a killed worker never leaves one behind. go_fish mounts the
machine's lock directory into every worker container it starts (``lock_dir`` of the
machine's Docker settings, by default this default), so containers and local workers on
one machine take turns alike.

Compilation takes no lock: it stays parallel.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tuna.backends.base import Owns

log = logging.getLogger(__name__)


def lock_dir() -> Path:
    return Path(os.environ.get("TUNA_LOCK_DIR") or Path(tempfile.gettempdir()) / "tuna-locks")


def lock_name(owns: Owns, gpu: int | None) -> str | None:
    """The lock an evaluation takes, or None when it needs none."""
    if owns is Owns.MACHINE:
        return "evaluate-machine"
    if owns is Owns.DEVICE:
        return f"evaluate-gpu-{gpu if gpu is not None else 'default'}"
    return None


@contextlib.contextmanager
def owning(owns: Owns, gpu: int | None, *, owner: str = "") -> Iterator[float]:
    """Hold what an evaluation must own while the block runs; yields the seconds waited."""
    name = lock_name(owns, gpu)
    if name is None:
        yield 0.0
        return
    directory = lock_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:  # another user's lock file (a container's root): flock needs no write
        fd = os.open(path, os.O_RDONLY)
    try:
        started = time.monotonic()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.debug("%s: waiting for %s", owner, name)
            fcntl.flock(fd, fcntl.LOCK_EX)
        waited = time.monotonic() - started
        try:
            yield waited
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
