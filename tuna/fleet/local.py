"""go_fish on this machine: worker processes for one phase of a session, watched until done.

Each worker is a ``tuna worker --burst`` process: it exits when no job of its phase is
ready or in flight. The database URL reaches it through the environment, never argv.
Logs go to ``<log dir>/<phase>/<arch>/<host>/<worker>.log``. While the workers run, the
watcher counts the phase's jobs, derives rate and ETA, and reaps expired leases (a worker
killed outright leaves only leases behind).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from tuna.backends import get_backend
from tuna.db import Database
from tuna.errors import TunaError
from tuna.fleet.phase import (
    FishReport,
    Progress,
    Task,
    check_steps,
    remaining_jobs,
    worker_environment,
)
from tuna.jobs import job_counts, reap_expired
from tuna.jobs.sessions import get_session
from tuna.worker.work import load_session

__all__ = ["FishReport", "Progress", "Task", "log_path", "run_local", "worker_environment"]

log = logging.getLogger(__name__)


def log_path(log_dir: Path, task: Task, arch: str, worker: str) -> Path:
    return log_dir / task.phase.value / arch / socket.gethostname() / f"{worker}.log"


def run_local(
    db: Database,
    session_id: int,
    task: Task,
    *,
    workers: int,
    log_dir: Path,
    db_url: str,
    extra_env: dict[str, str] | None = None,
    worker_args: list[str] | None = None,
    interval: float = 1.0,
    reap_every: float = 5.0,
    on_progress: Callable[[Progress], None] | None = None,
) -> FishReport:
    """Start ``workers`` local worker processes for ``task`` and watch them to the end.

    Ctrl-C (KeyboardInterrupt) stops the workers with SIGTERM: each finishes its current
    job and hands the rest back. Returns once every worker has exited.
    """
    if workers < 1:
        raise TunaError(f"-w/--workers must be at least 1, not {workers}")
    session = get_session(db, session_id)
    check_steps(db, session_id, task)
    phase = task.phase
    start_counts = job_counts(db, session_id)
    start_remaining = remaining_jobs(start_counts, phase)

    env = dict(os.environ)
    env.update(extra_env or {})
    env["TUNA_DB_URL"] = db_url  # the environment, never argv: ps shows argv to everyone
    cmd = [
        sys.executable,
        "-m",
        "tuna.cli",
        "worker",
        "-v",  # a log line per job
        "--session",
        str(session_id),
        "--phase",
        phase.value,
        "--burst",
        *(worker_args or []),
    ]
    procs: list[subprocess.Popen[bytes]] = []
    files: list[IO[bytes]] = []
    logs: list[Path] = []
    backend = get_backend(session.backend)
    info = load_session(db, session_id)
    scratch = Path(tempfile.mkdtemp(prefix=f"tuna-go_fish-{session_id}-"))
    for i in range(workers):
        path = log_path(log_dir, task, session.arch, f"worker-{i}")
        path.parent.mkdir(parents=True, exist_ok=True)
        out = path.open("ab")
        files.append(out)
        logs.append(path)
        # Per-worker settings of the backend (private caches), in a directory of its own.
        own = scratch / f"worker-{i}"
        own.mkdir()
        worker_env = {**env, **backend.worker_environment(info, phase.value, None, str(own))}
        procs.append(
            subprocess.Popen(
                cmd, env=worker_env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )
        )
    log.info(
        "go_fish: session %d %s: %d local worker(s), logs under %s",
        session_id,
        task.value,
        workers,
        log_dir,
    )

    started = time.monotonic()
    last_reap = started
    interrupted = False

    def look() -> Progress:
        counts = job_counts(db, session_id)
        remaining = remaining_jobs(counts, phase)
        alive = sum(p.poll() is None for p in procs)
        return Progress(
            counts,
            remaining,
            max(0, start_remaining - remaining),
            time.monotonic() - started,
            alive,
        )

    try:
        while True:
            progress = look()
            if on_progress:
                on_progress(progress)
            if progress.workers_alive == 0:
                break
            if time.monotonic() - last_reap >= reap_every:
                reap_expired(db, session_id=session_id)
                last_reap = time.monotonic()
            time.sleep(interval)
    except KeyboardInterrupt:
        interrupted = True
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()
    finally:
        for p in procs:
            if p.poll() is None:  # an error in the watcher itself: don't leave orphans
                p.terminate()
                p.wait()
        for f in files:
            f.close()
        shutil.rmtree(scratch, ignore_errors=True)
    reap_expired(db, session_id=session_id)
    final = look()
    return FishReport(
        session_id, task, workers, [p.returncode for p in procs], final, interrupted, logs
    )
