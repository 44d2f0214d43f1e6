"""One phase of a session, as go_fish runs it anywhere: the task, its progress, its report.

Shared by go_fish on this machine (:mod:`tuna.fleet.local`) and on a fleet
(:mod:`tuna.fleet.remote`).
"""

from __future__ import annotations

import enum
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from tuna.config import MAX_WORKERS as MAX_WORKERS
from tuna.db import Database
from tuna.db.enums import JobState, JobStep
from tuna.errors import TunaError
from tuna.jobs import JobCounts, Phase
from tuna.jobs.status import count_jobs, per_second, seconds_left


class Task(str, enum.Enum):
    """What go_fish is asked to do, in the predecessor's words."""

    COMPILE = "compile"
    RUN_PERF = "run_perf"
    RUN_FIND = "run_find"
    BIN_CACHE = "bin_cache"
    SEARCH = "search"  # a session's searches: runs (and builds) while their driver proposes

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


def new_run_id() -> str:
    """A go_fish run's id: when it started, and a random part (two runs in one second)."""
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)


def worker_log(
    log_dir: Path, phase: str, arch: str, host: str, session: int | str, run: str, worker: str
) -> Path:
    """Where a worker's log goes on the head node, for every launcher and for leftovers:
    ``<log dir>/<phase>/<arch>/<host>/session-<S>/<run>/<worker>.log``. Two sessions of
    one arch, and two runs of one session, never share a file."""
    return log_dir / phase / arch / host / f"session-{session}" / run / f"{worker}.log"


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
    remaining: int  # ready or in flight in this phase (with a search's builds: evaluate)
    finished: int  # left the phase since the run started
    elapsed_s: float
    workers_alive: int
    start: JobCounts | None = None  # the counts when the run started
    builds: int = 0  # of ``remaining``: a search's builds queued or in flight (evaluate)

    @property
    def runs(self) -> int:
        """Of ``remaining``, what is not a build: a search's runs (and other jobs)."""
        return self.remaining - self.builds

    def this_run(self) -> dict[JobState, int]:
        """Jobs that reached each state since the run started (growth of the count), for
        the states a phase ends in: what this run did, not what the session holds."""
        if self.start is None:
            return {}
        grown = {
            st: self.counts.by_state[st] - self.start.by_state[st]
            for st in (JobState.COMPILED, JobState.EVALUATED)
            + (JobState.ERRORED, JobState.NOT_APPLICABLE)
        }
        return {st: n for st, n in grown.items() if n > 0}

    @property
    def rate(self) -> float:
        return per_second(self.finished, self.elapsed_s)

    @property
    def eta_s(self) -> float | None:
        return seconds_left(self.remaining, self.rate)


def reported_done(
    reports: list[dict[str, object]], session: int, phase: Phase
) -> dict[JobState, int]:
    """What workers' reports (``tuna worker --report-file``) say they did in one stage."""
    done = JobState.COMPILED if phase is Phase.COMPILE else JobState.EVALUATED
    keys = {done: "done", JobState.ERRORED: "errored", JobState.NOT_APPLICABLE: "not_applicable"}
    mine = [r for r in reports if r["session"] == session and r["phase"] == phase.value]
    totals = {st: sum(int(str(r[key])) for r in mine) for st, key in keys.items()}
    return {st: n for st, n in totals.items() if n}


@dataclass
class FishReport:
    session: int
    task: Task
    workers: int
    exit_codes: list[int]
    final: Progress
    interrupted: bool = False
    logs: list[Path] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)  # machines used (a fleet run)
    per_host: dict[str, tuple[int, int]] = field(default_factory=dict)  # workers, jobs done
    lost_hosts: dict[str, str] = field(default_factory=dict)  # host -> why, if ever lost
    events: list[str] = field(default_factory=list)  # what happened to machines and workers
    description: str = "worker(s)"  # how the summary names the workers
    # What this run's own workers reported doing, where each reported (None: not known, and
    # :meth:`this_run` falls back on the session's counts, which other runs move too).
    did: dict[JobState, int] | None = None

    def this_run(self) -> dict[JobState, int]:
        """Jobs this run finished, by the state they ended in."""
        return self.did if self.did is not None else self.final.this_run()

    @property
    def drained(self) -> bool:
        return self.final.remaining == 0

    @property
    def all_errored(self) -> int:
        """How many jobs errored in this run if every job it finished errored (else 0)."""
        did = self.this_run()
        errored = did.get(JobState.ERRORED, 0)
        done = did.get(JobState.COMPILED, 0) + did.get(JobState.EVALUATED, 0)
        return errored if done == 0 else 0


def task_remaining(db: Database, session_id: int, task: Task) -> int:
    """Jobs of ``task``'s phase ready or in flight; an evaluation counts only its step's
    (and a search's runs, which any evaluation takes): its workers claim no other step's,
    which stay compiled for their own run (issue #24)."""
    phase = task.phase
    steps = None if task.step is None else [task.step, JobStep.RUN]
    return sum(count_jobs(db, session_id, [phase.ready, phase.running], steps).values())


def remaining_jobs(counts: JobCounts, phase: Phase) -> int:
    """Jobs of ``phase`` ready or in flight."""
    return counts.by_state[phase.ready] + counts.by_state[phase.running]


def finished_jobs(start: JobCounts, now: JobCounts, phase: Phase, start_remaining: int) -> int:
    """Jobs that left ``phase`` since ``start``.

    An evaluation also does a search's builds and sees runs appear as builds are stored
    (or as the driver proposes them), so what is left cannot tell what was done there: it
    counts the jobs that ended (evaluated, errored, not applicable) since the start.
    """
    if phase is Phase.COMPILE:
        return max(0, start_remaining - remaining_jobs(now, phase))
    ended = (JobState.EVALUATED, JobState.ERRORED, JobState.NOT_APPLICABLE)
    return max(0, sum(now.by_state[st] - start.by_state[st] for st in ended))


# MITuna's --fin_steps, as far as they name a phase go_fish runs.
FIN_STEPS = {
    "miopen_perf_compile": Task.COMPILE,
    "miopen_find_compile": Task.COMPILE,
    "miopen_perf_eval": Task.RUN_PERF,
    "miopen_find_eval": Task.RUN_FIND,
}


def tasks_from_fin_steps(text: str) -> list[Task]:
    """The tasks MITuna's ``--fin_steps a,b,...`` names (in any order, repeats allowed)."""
    tasks = []
    for step in (s.strip() for s in text.split(",")):
        if not step:
            continue
        task = FIN_STEPS.get(step)
        if task is None:
            raise TunaError(
                f"--fin_steps {step}: go_fish runs {', '.join(FIN_STEPS)}; "
                "solvers and applicability are `tuna solvers update` / `tuna "
                "applicability update`"
            )
        tasks.append(task)
    if not tasks:
        raise TunaError("--fin_steps names no step; e.g. miopen_perf_compile,miopen_perf_eval")
    return tasks


def plan_tasks(tasks: list[Task]) -> list[Task]:
    """The tasks to run, in order: compile first, then the one evaluation asked for."""
    evals = list(dict.fromkeys(t for t in tasks if t is not Task.COMPILE))
    if len(evals) > 1:
        raise TunaError(
            f"{' and '.join('--' + t.value for t in evals)} together: a session's compiled jobs "
            "are of one step, so go_fish evaluates one kind per run"
        )
    return ([Task.COMPILE] if Task.COMPILE in tasks else []) + evals
