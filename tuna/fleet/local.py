"""go_fish on this machine: local worker processes, for one stage or for several in turn.

A stage is one phase of one session (``(session, Task)``). :class:`LocalWorkers` is the one
owner of local worker processes: it starts them, gives each a log and a scratch directory
of its own, stops them on an interrupt and reaps them. Each is a ``tuna worker --burst``
process (:func:`tuna.fleet.commands.worker_argv`) that works its stages in order
(``--then SESSION:PHASE``, see :mod:`tuna.worker.stages`) and exits once the last is
drained; go_fish runs one stage (:func:`run_local`), the quick start four with the same
processes (:mod:`tuna.fleet.pool`). The database URL reaches a worker through a file only
this user can read (``TUNA_DB_URL_FILE``), never argv or the environment, as it reaches
a fleet's containers. Logs go to ``<log dir>/<phase>/<arch>/<host>/worker-<i>.log``
(the phase of the process's first stage).

Every process compiles; an evaluation runs on one worker per device an evaluation owns
(the backend's ``evaluation_owns``): cpuconv's timings own the whole machine and local
workers name no GPU, so more evaluation workers would only wait for the lock in turn
(:func:`evaluation_workers`). Compiles are worked before evaluations.

Workers run in a session of their own, so the terminal's Ctrl-C reaches go_fish only (not
a worker, nor the compiler a worker runs); go_fish then stops them deliberately with
SIGTERM, and each finishes its current job and hands the rest back. The dispatcher
(:mod:`tuna.fleet.dispatch`) does the watching, one stage at a time.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from subprocess import Popen
from typing import IO

from tuna.backends import get_backend
from tuna.backends.base import Owns
from tuna.config import MYSQL_VARS
from tuna.db import Database
from tuna.db.retry import through_outages
from tuna.errors import TunaError
from tuna.fleet.commands import worker_argv
from tuna.fleet.dispatch import Pace, dispatch
from tuna.fleet.phase import (
    MAX_WORKERS,
    FishReport,
    Progress,
    Task,
    new_run_id,
    remaining_jobs,
    reported_done,
    task_remaining,
    worker_environment,
    worker_log,
)
from tuna.jobs import Phase, job_counts
from tuna.jobs.status import search_work_waiting
from tuna.sessions import get_session
from tuna.worker.settings import WorkerSettings

__all__ = [
    "FishReport",
    "LocalWorkers",
    "Progress",
    "StageTask",
    "Task",
    "evaluation_workers",
    "log_path",
    "plans",
    "run_local",
    "watch_order",
    "worker_environment",
]

log = logging.getLogger(__name__)

LOCAL_PROGRAM = (sys.executable, "-m", "tuna.cli")
SCRATCH_PREFIX = "tuna-go_fish-"

StageTask = tuple[int, Task]
REPORT_FILE = "report.json"  # in a worker's scratch folder: what it did, written as it exits

# What names the database in a worker's environment; go_fish hands it over in a file instead.
DB_VARIABLES = frozenset({"TUNA_DB_URL", "TUNA_DB_URL_FILE", *MYSQL_VARS})


def evaluation_workers(owns: Owns, asked: int) -> int:
    """How many of ``asked`` evaluation workers on this machine can time at once: one where
    an evaluation owns the machine, or a device (local workers are given no GPU, so they
    would all take the same device's lock), otherwise all of them."""
    return asked if owns is Owns.NOTHING else 1


def watch_order(stages: Sequence[StageTask]) -> list[StageTask]:
    """The order every process works ``stages`` in (and go_fish watches them): compiles
    first, so that nothing is timed while anything compiles."""
    compiles = [st for st in stages if st[1] is Task.COMPILE]
    return compiles + [st for st in stages if st[1] is not Task.COMPILE]


def plans(stages: Sequence[StageTask], workers: int, owns: Owns) -> list[list[StageTask]]:
    """Each process's stages (``stages`` in :func:`watch_order`): with compiles, ``workers``
    processes compile and the first :func:`evaluation_workers` of them then evaluate;
    without, only those evaluate."""
    compiles = [st for st in stages if st[1] is Task.COMPILE]
    evals = [st for st in stages if st[1] is not Task.COMPILE]
    evaluators = evaluation_workers(owns, workers)
    count = workers if compiles else evaluators
    return [compiles + (evals if i < evaluators else []) for i in range(count)]


def log_path(log_dir: Path, task: Task, arch: str, session: int, run: str, worker: str) -> Path:
    return worker_log(log_dir, task.phase.value, arch, socket.gethostname(), session, run, worker)


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


class LocalWorkers:
    """Worker processes on this machine, each with its list of stages to work; to the
    dispatcher, a :class:`~tuna.fleet.dispatch.Launcher` of the stage :meth:`watch` names
    (the first, until told otherwise)."""

    description = "local worker(s)"

    def __init__(
        self,
        db: Database,
        stages: Sequence[StageTask],
        *,
        workers: int,
        log_dir: Path,
        db_url: str,
        extra_env: dict[str, str] | None = None,
        settings: WorkerSettings | None = None,
        stop_timeout: float = 60.0,
    ) -> None:
        if not 1 <= workers <= MAX_WORKERS:
            raise TunaError(f"-w/--workers must be from 1 to {MAX_WORKERS}, not {workers}")
        if not stages:
            raise TunaError("no stage to run")
        self.db, self.log_dir, self.stop_timeout = db, log_dir, stop_timeout
        self.sessions = {s: get_session(db, s) for s in dict.fromkeys(s for s, _ in stages)}
        names = {info.backend for info in self.sessions.values()}
        if len(names) != 1:
            raise TunaError(
                f"one set of workers works sessions of one backend, not {', '.join(sorted(names))}"
            )
        self.backend = get_backend(names.pop())
        for sid, task in stages:
            blocked = (
                None
                if task is Task.COMPILE
                else self.backend.evaluation_blocked(self.sessions[sid])
            )
            if blocked is not None:
                raise TunaError(
                    f"session {sid}: its evaluate phase cannot run on this machine: {blocked} "
                    "(its jobs stay compiled: evaluate them where it can)"
                )
        self.stages = watch_order(stages)
        self.plans = plans(self.stages, workers, self.backend.evaluation_owns)
        self.asked, self.settings = workers, settings
        self.run_id = new_run_id()
        # Neither argv nor the environment (``ps eww``, /proc/PID/environ) shows the URL:
        # it goes in a file only this user can read (TUNA_DB_URL_FILE), in the scratch dir.
        self.env = {
            k: v for k, v in {**os.environ, **(extra_env or {})}.items() if k not in DB_VARIABLES
        }
        self.db_url = db_url
        self.watching = self.stages[0]
        self.procs: list[Popen[bytes]] = []
        self.files: list[IO[bytes]] = []
        self.logs: list[Path] = []
        self.scratch: Path | None = None
        self.reports: dict[int, list[dict[str, object]]] = {}

    def argv(self, plan: Sequence[StageTask]) -> list[str]:
        (session, task), rest = plan[0], plan[1:]
        then = [(s, t.phase.value) for s, t in rest]
        # One --step for the whole process: only where every evaluation it works is of that
        # step. A plan that evaluates perf in one session and find in another (the quick
        # start's) takes any step, as each of those sessions' jobs are of its own step.
        steps = {t.step for _, t in plan if t.step is not None}
        step = steps.pop() if len(steps) == 1 else None
        return worker_argv(
            session,
            task.phase.value,
            program=LOCAL_PROGRAM,
            settings=self.settings,
            then=then,
            step=step,
        )

    def note(self) -> str:
        """Why fewer processes evaluate than were asked for ("" if none)."""
        evaluating = sum(1 for p in self.plans if p[-1][1] is not Task.COMPILE)
        if evaluating == 0 or evaluating >= self.asked:
            return ""
        owns = f"a {self.backend.name} evaluation owns the {self.backend.evaluation_owns.value}"
        if self.stages[0][1] is Task.COMPILE:
            return (
                f"{len(self.plans)} local worker(s) compile, {evaluating} of them then "
                f"evaluate: {owns}"
            )
        return (
            f"{evaluating} evaluation worker(s), not {self.asked}: {owns} (compiles run "
            "side by side)"
        )

    def _environment(self, plan: Sequence[StageTask], own: Path) -> dict[str, str]:
        """The backend's per-worker settings (private caches, in ``own``): one for the plan."""
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

    def watch(self, stage: StageTask) -> LocalWorkers:
        """The stage the dispatcher watches from now on."""
        self.watching = stage
        return self

    def working(self, stage: StageTask, *, last: bool = False) -> list[int]:
        """Indexes of the processes with ``stage`` in their plan (``last``: as their last)."""
        return [
            i
            for i, plan in enumerate(self.plans)
            if (plan[-1] == stage if last else stage in plan) and i < len(self.procs)
        ]

    def _work(self) -> int | None:
        """The jobs the stages' sessions have left to work, in either phase (more processes
        than that would only start to exit); None while a search is active (it proposes
        more)."""
        total = 0
        for session in self.sessions:
            if search_work_waiting(self.db, session).active_searches:
                return None
            counts = job_counts(self.db, session)
            total += sum(remaining_jobs(counts, phase) for phase in Phase)
        return total

    def _drained(self) -> bool:
        session, task = self.watching
        left = through_outages(
            lambda: task_remaining(self.db, session, task), what="go_fish: count"
        )
        return left == 0

    def _mine(self) -> list[int]:
        """While the watched stage has work: the processes that work it. Once drained: those
        for which it is the last stage (the others have gone on to their next one)."""
        mine, ending = self.working(self.watching), self.working(self.watching, last=True)
        return ending if mine != ending and self._drained() else mine

    # The Launcher interface, for the watched stage.

    def tidy(self, event: Callable[[str], None]) -> bool:
        return False  # a killed go_fish's local workers end by themselves (--burst)

    def start(self, event: Callable[[str], None]) -> int:
        """Start the processes (once: a later stage finds them running)."""
        if not self.procs:
            work = self._work()
            if work is not None and work < len(self.plans):
                event(
                    f"{work} job(s) to work: {max(1, work)} local worker(s), not {len(self.plans)}"
                )
                self.plans = self.plans[: max(1, work)]
            if note := self.note():
                event(note)
            self._start()
        return self.alive()

    def _start(self) -> None:
        first = self.stages[0][0]
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{first}-"))  # 0700
        url_file = self.scratch / "db_url"
        fd = os.open(url_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.db_url + "\n")
        self.env["TUNA_DB_URL_FILE"] = str(url_file)
        for i, plan in enumerate(self.plans):
            session, task = plan[0]
            arch = self.sessions[session].arch
            path = log_path(self.log_dir, task, arch, session, self.run_id, f"worker-{i}")
            own = self.scratch / f"worker-{i}"
            own.mkdir()
            env = {**self.env, **self._environment(plan, own)}
            env["TUNA_WORKER_REPORT"] = str(own / REPORT_FILE)  # what it did, as it exits
            proc, out = start_worker(self.argv(plan), env, path)
            self.procs.append(proc)
            self.files.append(out)
            self.logs.append(path)
        log.info(
            "go_fish: %d local worker(s) for %s, logs under %s",
            len(self.procs),
            ", ".join(f"session {s} {t.value}" for s, t in self.stages),
            self.log_dir,
        )

    def poll(self, *, replace: bool) -> None:
        pass  # alive() asks the processes themselves

    def alive(self) -> int:
        return sum(self.procs[i].poll() is None for i in self._mine())

    def stuck(self, now: float) -> str | None:
        return None

    def tick(self) -> None:
        pass

    def finish(self) -> None:
        """The watched stage drained and some processes go on to later stages: stop those
        that end here. Otherwise (the last stage, an interrupt, work left): :meth:`close`."""
        ending = self.working(self.watching, last=True)
        if ending != self.working(self.watching) and self._drained():
            self.stop(ending)
        else:
            self.close()

    def _reports(self, i: int) -> list[dict[str, object]] | None:
        """What process ``i`` reported (read once it exited; None if it wrote nothing)."""
        if i not in self.reports and self.scratch and self.procs[i].poll() is not None:
            path = self.scratch / f"worker-{i}" / REPORT_FILE
            with contextlib.suppress(OSError, ValueError):
                self.reports[i] = json.loads(path.read_text())
        return self.reports.get(i)

    def fill(self, report: FishReport, since: dt.datetime) -> None:
        mine = self.working(self.watching)
        # Counted from this run's own workers: another go_fish on the session moves the
        # session's counts too (two runs each printed the other's jobs as their own).
        told = [self._reports(i) for i in mine]
        if mine and all(t is not None for t in told):
            session, task = self.watching
            report.did = reported_done([r for t in told for r in t or []], session, task.phase)
        report.workers = len(mine)
        report.exit_codes = [c for i in mine if (c := self.procs[i].returncode) is not None]
        report.logs = [self.logs[i] for i in mine]

    # Stopping and reaping.

    def stop(self, indexes: Sequence[int] | None = None) -> None:
        """SIGTERM to each of these processes (all by default) still running: each finishes
        its current job and hands the rest back. Then wait; one that outlives
        ``stop_timeout`` is killed (its lease expires back to the queue)."""
        procs = self.procs if indexes is None else [self.procs[i] for i in indexes]
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                log.warning("go_fish: worker %d did not stop in time; killing it", p.pid)
                p.kill()
                p.wait()

    def close(self) -> None:
        """Stop every process, close the logs, remove the scratch directories (at most once)."""
        self.stop()
        for f in self.files:
            f.close()
        self.files.clear()
        for i in range(len(self.procs)):
            self._reports(i)  # before the scratch folder goes
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


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
        [(session_id, task)],
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
