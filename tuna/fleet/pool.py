"""go_fish on this machine through several stages with one set of worker processes.

A stage is one phase of one session (``(session, Task)``). Instead of starting workers
for each stage and waiting for them to exit, :func:`run_local_stages` starts the processes
once; each works its stages in order (``tuna worker ... --then SESSION:PHASE``, see
:mod:`tuna.worker.stages`): every process compiles, and one evaluation worker per device
an evaluation owns (:func:`tuna.fleet.local.evaluation_workers`) then evaluates, once every
compile is drained. Imports, connections and the backend's caches are paid once.

The dispatcher (:mod:`tuna.fleet.dispatch`) still watches one stage at a time, through a
view of the pool (:class:`StageView`): progress, reaping, signals and the report of each
stage are go_fish's as for any run. A stage is over when its queue is drained; the
processes that have later stages go on to them. Stages are watched in the order the
processes work them, compiles before evaluations.

Each process logs to ``<log dir>/<phase of its first stage>/<arch>/<host>/worker-<i>.log``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from tuna.backends import get_backend
from tuna.db import Database
from tuna.db.retry import through_outages
from tuna.errors import TunaError
from tuna.fleet.commands import worker_argv
from tuna.fleet.dispatch import Pace, dispatch
from tuna.fleet.local import (
    LOCAL_PROGRAM,
    SCRATCH_PREFIX,
    evaluation_workers,
    log_path,
    start_worker,
    stop_workers,
    wait_workers,
)
from tuna.fleet.phase import FishReport, Progress, Task, remaining_jobs
from tuna.jobs import job_counts
from tuna.sessions import get_session
from tuna.worker.settings import WorkerSettings

log = logging.getLogger(__name__)

StageTask = tuple[int, Task]


class LocalPool:
    """Worker processes on this machine, each with its list of stages to work."""

    def __init__(
        self,
        db: Database,
        stages: Sequence[StageTask],
        *,
        workers: int,
        log_dir: Path,
        db_url: str,
        settings: WorkerSettings | None = None,
        stop_timeout: float = 60.0,
    ) -> None:
        if workers < 1:
            raise TunaError(f"-w/--workers must be at least 1, not {workers}")
        if not stages:
            raise TunaError("no stage to run")
        self.db, self.log_dir, self.stop_timeout = db, log_dir, stop_timeout
        self.sessions = {s: get_session(db, s) for s, _ in stages}
        names = {info.backend for info in self.sessions.values()}
        if len(names) != 1:
            raise TunaError(f"one pool works sessions of one backend, not {', '.join(names)}")
        self.backend = get_backend(names.pop())
        compiles = [st for st in stages if st[1] is Task.COMPILE]
        evals = [st for st in stages if st[1] is not Task.COMPILE]
        self.stages = compiles + evals  # the order each process works them in
        evaluators = evaluation_workers(self.backend.evaluation_owns, workers)
        count = workers if compiles else evaluators
        self.plans = [compiles + (evals if i < evaluators else []) for i in range(count)]
        self.env = {**os.environ, "TUNA_DB_URL": db_url}  # never argv: ps shows argv to all
        self.settings = settings
        self.procs: list[subprocess.Popen[bytes]] = []
        self.files: list[IO[bytes]] = []
        self.logs: list[Path] = []
        self.scratch: Path | None = None

    def argv(self, plan: Sequence[StageTask]) -> list[str]:
        (session, task), rest = plan[0], plan[1:]
        return worker_argv(
            session,
            task.phase.value,
            program=LOCAL_PROGRAM,
            settings=self.settings,
            then=[(s, t.phase.value) for s, t in rest],
        )

    def _environment(self, plan: Sequence[StageTask], own: Path) -> dict[str, str]:
        envs = [
            self.backend.worker_environment(self.sessions[s], t.phase.value, None, str(own))
            for s, t in plan
        ]
        if any(e != envs[0] for e in envs[1:]):
            raise TunaError(
                f"backend {self.backend.name} gives its workers another environment per "
                "phase: run each phase with go_fish on its own"
            )
        return envs[0]

    def start(self, event: Callable[[str], None]) -> None:
        """Start the processes (once)."""
        if self.procs:
            return
        self.scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
        for i, plan in enumerate(self.plans):
            session, task = plan[0]
            arch = self.sessions[session].arch
            path = log_path(self.log_dir, task, arch, f"worker-{i}")
            own = self.scratch / f"worker-{i}"
            own.mkdir()
            env = {**self.env, **self._environment(plan, own)}
            proc, out = start_worker(self.argv(plan), env, path)
            self.procs.append(proc)
            self.files.append(out)
            self.logs.append(path)
        evaluating = sum(1 for p in self.plans if p[-1][1] is not Task.COMPILE)
        if evaluating < len(self.plans) and any(t is not Task.COMPILE for _, t in self.stages):
            event(
                f"{len(self.plans)} local worker(s) compile, {evaluating} of them then "
                f"evaluate: a {self.backend.name} evaluation owns the "
                f"{self.backend.evaluation_owns.value}"
            )
        log.info("go_fish: %d local worker(s) for %d stage(s)", len(self.procs), len(self.stages))

    def working(self, stage: StageTask, *, last: bool = False) -> list[int]:
        """Indexes of the processes with ``stage`` in their plan (``last``: as their last)."""
        return [
            i
            for i, plan in enumerate(self.plans)
            if (plan[-1] == stage if last else stage in plan) and i < len(self.procs)
        ]

    def alive(self, indexes: Sequence[int]) -> int:
        return sum(self.procs[i].poll() is None for i in indexes)

    def wait(self, indexes: Sequence[int]) -> None:
        """Wait for these processes to exit (they are ending by themselves); kill a hung one."""
        wait_workers((self.procs[i] for i in indexes), self.stop_timeout)

    def stop(self) -> None:
        """SIGTERM to every process still running (each finishes its current job), then wait."""
        stop_workers(self.procs, self.stop_timeout)

    def close(self) -> None:
        self.stop()
        for f in self.files:
            f.close()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


class StageView:
    """One stage of a :class:`LocalPool`, as the dispatcher sees a launcher."""

    description = "local worker(s)"

    def __init__(self, pool: LocalPool, stage: StageTask) -> None:
        self.pool, self.stage = pool, stage

    def _remaining(self) -> int:
        session, task = self.stage
        counts = through_outages(lambda: job_counts(self.pool.db, session), what="go_fish: count")
        return remaining_jobs(counts, task.phase)

    def tidy(self, event: Callable[[str], None]) -> bool:
        return False  # local workers of a killed go_fish end by themselves (--burst)

    def start(self, event: Callable[[str], None]) -> int:
        self.pool.start(event)
        return self.pool.alive(self.pool.working(self.stage))

    def poll(self, *, replace: bool) -> None:
        pass

    def alive(self) -> int:
        """While the stage has work: the processes that work it. Once drained: those for
        which it is the last stage (the others have gone on to their next one)."""
        last = self._remaining() == 0
        return self.pool.alive(self.pool.working(self.stage, last=last))

    def stuck(self, now: float) -> str | None:
        return None

    def tick(self) -> None:
        pass

    def finish(self) -> None:
        """Drained: wait for the processes that end here. Otherwise (an interrupt, every
        worker gone): stop the whole pool, its later stages cannot run either."""
        if self._remaining() == 0:
            self.pool.wait(self.pool.working(self.stage, last=True))
        else:
            self.pool.stop()

    def fill(self, report: FishReport, since: dt.datetime) -> None:
        mine = self.pool.working(self.stage)
        report.workers = len(mine)
        ended = [self.pool.procs[i].returncode for i in mine]
        report.exit_codes = [code for code in ended if code is not None]
        report.logs = [self.pool.logs[i] for i in mine]


def run_local_stages(
    db: Database,
    stages: Sequence[StageTask],
    *,
    workers: int,
    log_dir: Path,
    db_url: str,
    settings: WorkerSettings | None = None,
    interval: float = 1.0,
    reap_every: float = 5.0,
    on_stage: Callable[[int, Task], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_event: Callable[[str], None] | None = None,
) -> list[FishReport]:
    """Run ``stages`` with one :class:`LocalPool`; a report per stage watched, in the order
    the workers work them (compiles first). Stops at the first stage interrupted or left
    undrained."""
    pool = LocalPool(db, stages, workers=workers, log_dir=log_dir, db_url=db_url, settings=settings)
    reports: list[FishReport] = []
    try:
        for stage in pool.stages:
            if on_stage:
                on_stage(*stage)
            report = dispatch(
                db,
                stage[0],
                stage[1],
                StageView(pool, stage),
                pace=Pace(interval=interval, poll_every=interval, reap_every=reap_every),
                on_progress=on_progress,
                on_event=on_event,
            )
            reports.append(report)
            if report.interrupted or not report.drained:
                break
    finally:
        pool.close()
    return reports
