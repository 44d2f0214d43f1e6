"""go_fish on this machine: worker processes for one phase of a session.

Each worker is a ``tuna worker --burst`` process (:func:`tuna.fleet.commands.worker_argv`):
it exits when no job of its phase is ready or in flight. The database URL reaches it
through the environment, never argv. Logs go to
``<log dir>/<phase>/<arch>/<host>/<worker>.log``.

An evaluation runs one worker per device an evaluation owns (the backend's
``evaluation_owns``): cpuconv's timings own the whole machine and local workers name no
GPU, so more evaluation workers would only wait for the lock in turn
(:func:`evaluation_workers`); compiles run ``-w`` workers side by side.

Workers run in a session of their own, so the terminal's Ctrl-C reaches go_fish only (not
a worker, nor the compiler a worker runs); go_fish then stops them deliberately with
SIGTERM, and each finishes its current job and hands the rest back. The dispatcher
(:mod:`tuna.fleet.dispatch`) does the watching.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from subprocess import Popen
from typing import IO

from tuna.backends import get_backend
from tuna.backends.base import Owns
from tuna.db import Database
from tuna.errors import TunaError
from tuna.fleet.commands import worker_argv
from tuna.fleet.dispatch import Pace, dispatch
from tuna.fleet.phase import (
    FishReport,
    Progress,
    Task,
    worker_environment,
)
from tuna.sessions import get_session
from tuna.worker.settings import WorkerSettings

__all__ = [
    "FishReport",
    "LocalWorkers",
    "Progress",
    "Task",
    "evaluation_workers",
    "log_path",
    "run_local",
    "worker_environment",
]

log = logging.getLogger(__name__)

LOCAL_PROGRAM = (sys.executable, "-m", "tuna.cli")
SCRATCH_PREFIX = "tuna-go_fish-"


def evaluation_workers(owns: Owns, asked: int) -> int:
    """How many of ``asked`` evaluation workers on this machine can time at once: one where
    an evaluation owns the machine, or a device (local workers are given no GPU, so they
    would all take the same device's lock), otherwise all of them."""
    return asked if owns is Owns.NOTHING else 1


def log_path(log_dir: Path, task: Task, arch: str, worker: str) -> Path:
    return log_dir / task.phase.value / arch / socket.gethostname() / f"{worker}.log"


def start_worker(argv: Sequence[str], env: dict[str, str], log: Path) -> tuple[Popen, IO[bytes]]:
    """A local worker process writing to ``log`` (appended; its directory made), in a session
    of its own: the terminal's Ctrl-C is go_fish's to handle. Returns it and its log file."""
    log.parent.mkdir(parents=True, exist_ok=True)
    out = log.open("ab")
    try:
        proc = subprocess.Popen(
            list(argv),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except BaseException:
        out.close()
        raise
    return proc, out


def wait_workers(procs: Iterable[Popen], timeout: float) -> None:
    """Wait for each process to exit; one that outlives ``timeout`` is killed (its lease
    expires back to the queue)."""
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log.warning("go_fish: worker %d did not stop in time; killing it", p.pid)
            p.kill()
            p.wait()


def stop_workers(procs: Sequence[Popen], timeout: float) -> None:
    """SIGTERM to every process still running (each finishes its current job), then
    :func:`wait_workers`."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    wait_workers(procs, timeout)


class LocalWorkers:
    """Worker processes on this machine (a :class:`~tuna.fleet.dispatch.Launcher`)."""

    description = "local worker(s)"

    def __init__(
        self,
        db: Database,
        session_id: int,
        task: Task,
        *,
        workers: int,
        log_dir: Path,
        db_url: str,
        extra_env: dict[str, str] | None = None,
        settings: WorkerSettings | None = None,
        stop_timeout: float = 60.0,
    ) -> None:
        if workers < 1:
            raise TunaError(f"-w/--workers must be at least 1, not {workers}")
        self.session = get_session(db, session_id)
        self.backend = get_backend(self.session.backend)
        self.task, self.workers, self.log_dir = task, workers, log_dir
        self.note = ""
        if task.phase.value == "eval":
            self.workers = evaluation_workers(self.backend.evaluation_owns, workers)
            if self.workers < workers:
                self.note = (
                    f"{self.workers} evaluation worker(s), not {workers}: a {self.backend.name} "
                    f"evaluation owns the {self.backend.evaluation_owns.value} (compiles run "
                    "side by side)"
                )
        self.stop_timeout = stop_timeout
        self.env = {**os.environ, **(extra_env or {})}
        self.env["TUNA_DB_URL"] = db_url  # the environment, never argv: ps shows argv to all
        self.argv = worker_argv(
            session_id, task.phase.value, program=LOCAL_PROGRAM, settings=settings
        )
        self.procs: list[subprocess.Popen[bytes]] = []
        self.files: list[IO[bytes]] = []
        self.logs: list[Path] = []
        self.scratch: Path | None = None

    def tidy(self, event: Callable[[str], None]) -> bool:
        return False  # a killed go_fish's local workers end by themselves (--burst)

    def start(self, event: Callable[[str], None]) -> int:
        phase = self.task.phase.value
        if self.note:
            event(self.note)
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{self.session.id}-"))
        for i in range(self.workers):
            path = log_path(self.log_dir, self.task, self.session.arch, f"worker-{i}")
            # Per-worker settings of the backend (private caches), in a directory of its own.
            own = self.scratch / f"worker-{i}"
            own.mkdir()
            env = {
                **self.env,
                **self.backend.worker_environment(self.session, phase, None, str(own)),
            }
            proc, out = start_worker(self.argv, env, path)
            self.procs.append(proc)
            self.files.append(out)
            self.logs.append(path)
        log.info(
            "go_fish: session %d %s: %d local worker(s), logs under %s",
            self.session.id,
            self.task.value,
            self.workers,
            self.log_dir,
        )
        return len(self.procs)

    def poll(self, *, replace: bool) -> None:
        pass  # alive() asks the processes themselves

    def alive(self) -> int:
        return sum(p.poll() is None for p in self.procs)

    def stuck(self, now: float) -> str | None:
        return None

    def tick(self) -> None:
        pass

    def finish(self) -> None:
        """SIGTERM to every worker still running (each finishes its current job), then wait;
        a worker that outlives ``stop_timeout`` is killed (its lease expires back)."""
        stop_workers(self.procs, self.stop_timeout)
        for f in self.files:
            f.close()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def fill(self, report: FishReport, since: dt.datetime) -> None:
        report.workers = len(self.procs)
        report.exit_codes = [p.returncode for p in self.procs]
        report.logs = list(self.logs)


def run_local(
    db: Database,
    session_id: int,
    task: Task,
    *,
    workers: int,
    log_dir: Path,
    db_url: str,
    extra_env: dict[str, str] | None = None,
    settings: WorkerSettings | None = None,
    interval: float = 1.0,
    reap_every: float = 5.0,
    on_progress: Callable[[Progress], None] | None = None,
    on_event: Callable[[str], None] | None = None,
) -> FishReport:
    """Start ``workers`` local worker processes for ``task`` and watch them to the end.

    Ctrl-C or SIGTERM stops the workers with SIGTERM: each finishes its current job and
    hands the rest back. Returns once every worker has exited.
    """
    launcher = LocalWorkers(
        db,
        session_id,
        task,
        workers=workers,
        log_dir=log_dir,
        db_url=db_url,
        extra_env=extra_env,
        settings=settings,
    )
    return dispatch(
        db,
        session_id,
        task,
        launcher,
        pace=Pace(interval=interval, poll_every=interval, reap_every=reap_every),
        on_progress=on_progress,
        on_event=on_event,
    )
