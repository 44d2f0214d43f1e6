"""go_fish on this machine: worker processes for one phase of a session, watched until done.

Each worker is a ``tuna worker --burst`` process: it exits when no job of its phase is
ready or in flight. The database URL reaches it through the environment, never argv.
Logs go to ``<log dir>/<phase>/<arch>/<host>/<worker>.log``. While the workers run, the
watcher counts the phase's jobs, derives rate and ETA, and reaps expired leases (a worker
killed outright leaves only leases behind).
"""

from __future__ import annotations

import enum
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from sqlalchemy import func, select

from tuna.db import Database
from tuna.db.enums import JobState, JobStep
from tuna.db.models import Job
from tuna.errors import TunaError
from tuna.jobs import JobCounts, Phase, job_counts, reap_expired
from tuna.jobs.sessions import get_session

log = logging.getLogger(__name__)


class Task(str, enum.Enum):
    """What go_fish is asked to do, in the predecessor's words."""

    COMPILE = "compile"
    RUN_PERF = "run_perf"
    RUN_FIND = "run_find"
    BIN_CACHE = "bin_cache"

    @property
    def phase(self) -> Phase:
        return Phase.COMPILE if self is Task.COMPILE else Phase.EVAL

    @property
    def step(self) -> JobStep | None:
        """The job step this task evaluates (compile serves every step)."""
        return {
            Task.RUN_PERF: JobStep.PERF,
            Task.RUN_FIND: JobStep.FIND,
            Task.BIN_CACHE: JobStep.KERNEL,
        }.get(self)


FIND_ENFORCE = (1, 3, 4)


def worker_environment(find_enforce: int | None) -> dict[str, str]:
    """Extra environment of the predecessor's ``-f/--find_enforce`` for the library."""
    if find_enforce is None:
        return {}
    if find_enforce not in FIND_ENFORCE:
        raise TunaError(f"-f/--find_enforce {find_enforce}: use 1, 3 or 4")
    env = {"MIOPEN_FIND_ENFORCE": str(find_enforce)}
    if find_enforce == 4:
        env["MIOPEN_DISABLE_CACHE"] = "1"
    return env


@dataclass(frozen=True)
class Progress:
    """One look at the phase: jobs by state, how many the run finished, rate and ETA."""

    counts: JobCounts
    remaining: int  # ready or in flight in this phase
    finished: int  # left the phase since the run started
    elapsed_s: float
    workers_alive: int

    @property
    def rate(self) -> float:
        return self.finished / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        return self.remaining / self.rate if self.rate > 0 else None


@dataclass
class FishReport:
    session: int
    task: Task
    workers: int
    exit_codes: list[int]
    final: Progress
    interrupted: bool = False
    logs: list[Path] = field(default_factory=list)

    @property
    def drained(self) -> bool:
        return self.final.remaining == 0


def check_steps(db: Database, session_id: int, task: Task) -> None:
    """Refuse to evaluate jobs of another step than the task names (claims take any step)."""
    step = task.step
    if step is None:
        return
    with db.session() as s:
        others = s.execute(
            select(Job.step, func.count())
            .where(Job.session == session_id, Job.state == JobState.COMPILED, Job.step != step)
            .group_by(Job.step)
        ).all()
    if others:
        found = ", ".join(f"{n} {JobStep(st).value}" for st, n in others)
        flag = {
            JobStep.PERF: "--run_perf",
            JobStep.FIND: "--run_find",
            JobStep.KERNEL: "--bin_cache",
        }
        raise TunaError(
            f"session {session_id} has compiled jobs of another step ({found}); "
            f"{flag[step]} would evaluate them too. Use "
            + " / ".join(flag[JobStep(st)] for st, _ in others)
        )


def _remaining(counts: JobCounts, phase: Phase) -> int:
    return counts.by_state[phase.ready] + counts.by_state[phase.running]


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
    start_remaining = _remaining(start_counts, phase)

    env = dict(os.environ)
    env.update(extra_env or {})
    env["TUNA_DB_URL"] = db_url  # the environment, never argv: ps shows argv to everyone
    cmd = [
        sys.executable,
        "-m",
        "tuna.cli",
        "worker",
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
    for i in range(workers):
        path = log_path(log_dir, task, session.arch, f"worker-{i}")
        path.parent.mkdir(parents=True, exist_ok=True)
        out = path.open("ab")
        files.append(out)
        logs.append(path)
        procs.append(
            subprocess.Popen(
                cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
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
        remaining = _remaining(counts, phase)
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
    reap_expired(db, session_id=session_id)
    final = look()
    return FishReport(
        session_id, task, workers, [p.returncode for p in procs], final, interrupted, logs
    )
