"""A job's lines in the worker logs go_fish keeps: what a job's page shows of its log.

Every launcher writes a worker's output to :func:`tuna.fleet.phase.worker_log`, i.e.
``<log dir>/<phase>/<arch>/<host>/session-<S>/<run>/<worker>.log`` on the machine go_fish
runs on, and a worker go_fish starts logs a line per job it works (``-v``:
``job N: <phase> <solver> attempt A ok in S s``, :class:`tuna.worker.hooks.JobLog`), with
what went wrong (``job N: backend cpuconv raised`` and its traceback) beside it.

A job's row does not say which run or worker worked it (its lease owner is cleared when a
phase ends; a process may work another session's stages after its first), so the lines are
found by reading: every ``session-*`` folder of every phase, arch and host under the log
directory, the files written since the job was created, those of the job's machine and
session first, newest first, at most :data:`MAX_BYTES` in all (the end of a file, where the
latest jobs are, when it is bigger), the other machines' only when its own hold no line
about it (the job's machine is the last one that claimed it: a phase worked elsewhere
before shows only then).
A line is the job's when its message starts with ``job N:``; the lines after it that carry
no time stamp (a traceback) go with it.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 16 * 2**20
"""Bytes of logs read at most for one job (the newest files first)."""
LINES = 40
"""Lines of an excerpt at most (the last ones)."""
SLACK_S = 600.0
"""How much earlier than the job's creation a file may have been last written and still be
read (the database's clock and this machine's may differ)."""
_STAMPED = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")  # match(): at a line start


@dataclass(frozen=True)
class JobLog:
    """The lines about one job found in the worker logs, and where they were looked for."""

    lines: list[str]
    """The excerpt, oldest first (at most :data:`LINES`; empty when none was found)."""
    files: list[Path]
    """The files the lines came from."""
    where: str
    """Where a worker go_fish starts writes its log, as a pattern."""
    complete: bool
    """False when :data:`MAX_BYTES` ran out before every candidate file was read."""


def log_pattern(log_dir: Path) -> str:
    """Where go_fish's workers write their logs, as a pattern of the folders' names."""
    return str(log_dir / "<phase>" / "<arch>" / "<host>" / "session-<S>" / "<run>" / "<worker>.log")


def job_log(
    log_dir: Path,
    job_id: int,
    created: dt.datetime | None = None,
    *,
    host: str | None = None,
    session: int | None = None,
    max_bytes: int = MAX_BYTES,
    lines: int = LINES,
) -> JobLog:
    """The lines about job ``job_id`` in the worker logs under ``log_dir`` (see the
    module docstring); ``created`` (UTC, naive as the database gives it) passes over files
    last written before the job existed; the files of ``host`` (the job's machine, or this
    one for a local worker) and of ``session`` are read first."""
    since = None
    if created is not None:
        since = created.replace(tzinfo=dt.timezone.utc).timestamp() - SLACK_S
    candidates: list[tuple[bool, bool, float, Path]] = []
    for path in log_dir.glob("*/*/*/session-*/*/*.log"):
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if since is None or mtime >= since:
            theirs = host is not None and path.parts[-4].split(":")[0] == host
            same = session is not None and path.parts[-3] == f"session-{session}"
            candidates.append((not theirs, not same, -mtime, path))
    candidates.sort()
    needle = re.compile(rb": job %d: " % job_id)
    found: list[tuple[bytes, int, Path]] = []  # (stamp, order, path) -> lines
    texts: list[list[bytes]] = []
    budget = max_bytes
    complete = True
    on_its_machine = False
    for elsewhere, _, _, path in candidates:
        if elsewhere and on_its_machine:
            break  # its machine's logs had its lines: the other machines' are not read
        if budget <= 0:
            complete = False
            break
        try:
            data = _tail(path, budget)
        except OSError:
            continue
        budget -= len(data)
        blocks = _blocks(data, needle)
        on_its_machine = on_its_machine or (bool(blocks) and not elsewhere)
        for block in blocks:
            found.append((block[0][:23], len(found), path))
            texts.append(block)
    order = sorted(range(len(found)), key=lambda i: (found[i][0], found[i][1]))
    out = [ln.decode("utf-8", "replace") for i in order for ln in texts[i]]
    files = sorted({found[i][2] for i in order})
    return JobLog(out[-lines:], files, log_pattern(log_dir), complete)


def _tail(path: Path, limit: int) -> bytes:
    with path.open("rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - limit))
        return f.read(limit)


def _blocks(data: bytes, needle: re.Pattern[bytes]) -> list[list[bytes]]:
    """Each line matching ``needle`` with the unstamped lines after it."""
    out: list[list[bytes]] = []
    for m in needle.finditer(data):
        start = data.rfind(b"\n", 0, m.start()) + 1
        if not _STAMPED.match(data, start):
            continue  # a message quoting another job, inside a traceback
        block: list[bytes] = []
        pos = start
        while pos < len(data):
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end
            line = data[pos:end]
            if block and _STAMPED.match(line):
                break
            block.append(line.rstrip(b"\r"))
            pos = end + 1
        out.append(block)
    return out
