"""Worker processes for the multi-process tests (started with multiprocessing, fork)."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

from tuna.backends.noop import NoopBackend
from tuna.db import open_database
from tuna.worker import run_worker

CTX = multiprocessing.get_context("fork")


def worker_main(url: str, session_id: int, phase: str, out_dir: str, **kw: Any) -> None:
    """Run one burst worker with a noop backend that logs every call to ``out_dir``."""
    logging.basicConfig(level=logging.WARNING)
    out = Path(out_dir)
    backend = NoopBackend(sleep_s=kw.pop("sleep_s", 0.0), log_path=out / "calls.log")
    kw.setdefault("idle_sleep", 0.05)
    kw.setdefault("burst", True)
    db = open_database(url)
    try:
        report = run_worker(db, session_id, phase, backend=backend, **kw)
    finally:
        db.dispose()
    (out / f"report-{os.getpid()}.json").write_text(
        json.dumps({k: v for k, v in vars(report).items() if k != "phase"})
    )


def start_workers(
    n: int, url: str, session_id: int, phase: str, out_dir: Path, **kw: Any
) -> list[Any]:
    procs = [
        CTX.Process(target=worker_main, args=(url, session_id, phase, str(out_dir)), kwargs=kw)
        for _ in range(n)
    ]
    for p in procs:
        p.start()
    return procs


def join_all(procs: list[Any], timeout: float) -> list[int | None]:
    """Wait for every process (``timeout`` seconds in all); kill and report the stragglers."""
    deadline = time.monotonic() + timeout
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    codes = [p.exitcode for p in procs]
    for p in procs:
        if p.exitcode is None:
            p.kill()
            p.join()
    return codes


def calls(out_dir: Path) -> list[tuple[str, int, int]]:
    """(phase, job id, attempt) of every backend call the workers made."""
    path = out_dir / "calls.log"
    if not path.exists():
        return []
    return [
        (phase, int(job), int(attempt))
        for phase, job, attempt, _pid in (line.split() for line in path.read_text().splitlines())
    ]


def reports(out_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out_dir.glob("report-*.json"))]
