"""The worker loop, backend-agnostic: stop? -> reap -> claim -> run -> record -> repeat.

One worker process works one phase (compile or eval) of one session. It claims a batch
of jobs, keeps their leases alive from a heartbeat thread, runs the backend on each job
and records the outcomes through the state machine, fenced by the claim's attempt.

* **Stopping**: SIGTERM or Ctrl-C lets the current job finish and be recorded, hands the
  claimed jobs it had not started back (no retry counted) and returns normally. A second
  signal while the backend runs aborts the job, which is handed back too.
* **Crashes**: a killed worker leaves only leases behind; any worker's reaper returns
  them once they expire.
* **Burst** (tests, one-off runs): exit once a claim finds nothing and no job of this
  phase of the session is in flight anywhere (in-flight jobs could still come back to
  this phase through a failure or an expired lease). It does not wait for jobs still in
  an earlier phase: run the compile workers first, or run eval workers without ``burst``.
* **Database outages**: every transaction is repeated while the database is unreachable
  (a restart, a cut network), for up to ``outage_patience`` seconds; the heartbeat keeps
  trying too. A job whose lease ran out meanwhile is handed to another worker and this
  worker's late write is fenced out.
* **Time limit** (``time_limit``): each backend call runs in a child process that the
  worker kills past the limit (:mod:`~tuna.worker.horse`): a SIGALRM could not stop native
  code. The job fails with ``TimeLimitExceeded`` and is retried like any failure.
* **Searches** (issue #15): a search's build and run jobs go to the search's backend
  (``bench``) instead of the session's, through the same execute path and hooks as other
  jobs (what is theirs alone is in :mod:`~tuna.worker.searchwork`); an evaluate worker
  whose claim found no run to do takes builds (compile-phase work) so a search needs no
  separate compile workers, and in burst mode it waits for the session's active searches
  (their driver proposes more) until ``search_patience`` seconds pass without work.
* **Batches**: outcomes are recorded when the batch is done or ``record_interval``
  seconds after the last record, whichever comes first, so fast jobs share transactions
  and slow jobs are recorded as soon as they finish. The outcomes of a batch's last jobs
  go in the transaction of the next claim (:func:`~tuna.jobs.recording.record_and_claim`),
  which follows at once: one COMMIT per cycle.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import random
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from tuna.backends import Backend, get_backend
from tuna.backends.base import (
    CompileOutcome,
    EvalOutcome,
    JobWork,
    Outcome,
    SearchWork,
    SessionInfo,
)
from tuna.db import Database
from tuna.db.enums import JobState, JobStep
from tuna.db.retry import through_outages
from tuna.errors import TunaError
from tuna.jobs import claims, recording, requeue
from tuna.jobs.measurements import MeasuredOn, save_progress
from tuna.jobs.status import count_jobs, search_work_waiting
from tuna.jobs.values import ClaimedJob, Phase, Recorded
from tuna.platforms import report_platform
from tuna.sessions import get_session
from tuna.worker.exclusive import owning
from tuna.worker.heartbeat import Heartbeat
from tuna.worker.hooks import Hook
from tuna.worker.horse import run_in_horse
from tuna.worker.progress import Progress
from tuna.worker.searchwork import (
    SearchLoader,
    is_search_job,
    search_outcome_type,
    search_step,
)

if TYPE_CHECKING:
    from tuna.platforms.collect import Probe
from tuna.worker.settings import WorkerSettings
from tuna.worker.signals import on_stop_signals
from tuna.worker.work import WorkLoader

log = logging.getLogger(__name__)

T = TypeVar("T")

SEARCH_PATIENCE_S = 30.0
"""How long a burst evaluate worker waits for an active search's driver to propose more."""
SEARCH_IDLE_S = 0.02
"""How long it sleeps between claims meanwhile."""


class EvaluationBlockedError(TunaError):
    """Raised when an evaluation worker starts where its backend cannot evaluate (no driver,
    no device): nothing is claimed, the jobs stay compiled for a machine that can."""


def _platform_facts(backend: Backend, session: SessionInfo) -> dict[str, Any]:
    """This machine's facts with the backend's own (its device's), under its name."""
    from tuna.platforms.collect import collect

    facts = collect()
    extra = backend.platform_facts(session)
    if extra:
        facts[backend.name] = extra
    return facts


def make_owner() -> str:
    """A worker's lease owner id: ``host:pid:random``, unique even across restarts.

    ``TUNA_WORKER_NAME`` replaces the host name (go_fish names its containers' workers
    ``<machine>/<worker>``, so ``job.lease_owner`` says where a job runs).
    """
    name = os.environ.get("TUNA_WORKER_NAME") or socket.gethostname()
    return f"{name}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class WorkerReport:
    """What a worker did. ``stopped`` says why it ended: drained, empty (``until_empty``),
    max_jobs, signal, aborted."""

    owner: str
    session: int
    phase: Phase
    claimed: int = 0
    done: int = 0
    retried: int = 0
    errored: int = 0
    not_applicable: int = 0
    lost: int = 0
    released: int = 0
    reaped: int = 0
    backend_seconds: float = 0.0
    waited_seconds: float = 0.0  # for what an evaluation must own (part of backend_seconds)
    seconds: float = 0.0
    stopped: str = ""

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON values (``phase`` by its name)."""
        return {**dataclasses.asdict(self), "phase": self.phase.value}


class _Abort(BaseException):
    """A second stop signal while the backend runs: abandon the job (it is handed back)."""


class Worker:
    """One worker's loop; use :func:`run_worker`."""

    def __init__(
        self,
        db: Database,
        session_id: int,
        phase: Phase,
        settings: WorkerSettings,
        *,
        backend: Backend | None = None,
        hooks: Sequence[Hook] = (),
        stop: threading.Event | None = None,
        handle_signals: bool = True,
    ) -> None:
        self.db, self.session_id, self.phase = db, session_id, phase
        self.settings = settings
        self.owner = settings.owner or make_owner()
        self.reap_interval = (
            settings.reap_interval if settings.reap_interval is not None else settings.lease_seconds
        )
        self.hooks = list(hooks)
        self.stop = stop or threading.Event()
        self.handle_signals = handle_signals
        session = get_session(db, session_id)
        self.session = session
        self.backend = backend or get_backend(session.backend)
        self.loader = WorkLoader(db, session)
        # What an evaluation worker measures on: collected from a thread started now,
        # stored when its first jobs are loaded (never on the claim path).
        self._probe: Probe | None = None
        if phase is Phase.EVAL:
            blocked = self.backend.evaluation_blocked(session)
            if blocked is not None:
                raise EvaluationBlockedError(
                    f"session {session_id}: its evaluate phase cannot run on this machine: "
                    f"{blocked}"
                )
            from tuna.platforms.collect import Probe  # stdlib's platform, subprocess: eval only

            self._probe = Probe(functools.partial(_platform_facts, self.backend, session))
        self._measured_on: MeasuredOn | None = None
        self._searches: SearchLoader | None = None  # made on the first search job
        self._backends: dict[str, Backend] = {session.backend: self.backend}
        self._last_work = time.monotonic()
        self._searching = False  # the session had an active search at the last look
        self.heartbeat = Heartbeat(
            db,
            self.owner,
            settings.lease_seconds,
            settings.heartbeat_interval or settings.lease_seconds / 3,
        )
        self.report = WorkerReport(self.owner, session_id, phase)
        self._in_backend = False
        self._next_reap = 0.0
        self._unrecorded: list[tuple[ClaimedJob, Outcome]] = []  # for the next claim
        # An evaluation of one step (go_fish --run_perf) leaves other steps' jobs alone.
        self._step = settings.step if phase is Phase.EVAL else None
        self._steps = None if self._step is None else [self._step, JobStep.RUN]

    @property
    def searches(self) -> SearchLoader:
        """The search jobs' loader, made on first use: a worker that never meets a search
        (most) makes no artifact cache."""
        if self._searches is None:
            self._searches = SearchLoader(self.db)
        return self._searches

    def run(self) -> WorkerReport:
        started = time.monotonic()
        log.info(
            "%s: %s worker for session %d starting", self.owner, self.phase.value, self.session_id
        )
        with self._signals():
            self.heartbeat.start()
            try:
                self.report.stopped = self._loop()
            except _Abort:
                self.report.stopped = "aborted"
            finally:
                self.heartbeat.stop()
                try:
                    self._record_now()
                finally:
                    self._release(self.heartbeat.held())
                if self._searches is not None:
                    self._searches.cache.close()
        self.report.seconds = time.monotonic() - started
        log.info("%s: stopped (%s): %s", self.owner, self.report.stopped, self.report)
        return self.report

    def _loop(self) -> str:
        while True:
            if self.stop.is_set():
                self._record_now()
                return "signal"
            if self.settings.max_jobs is not None and self.report.claimed >= self.settings.max_jobs:
                self._record_now()
                return "max_jobs"
            self._reap()
            jobs = self._claim()
            if jobs:
                self._work(jobs)
            elif self.settings.until_empty:
                return "empty"
            elif self.settings.burst and self._drained():
                return "drained"
            else:
                # An active search's next point comes as soon as its driver sees a Run land.
                idle = self.settings.idle_sleep
                self.stop.wait(min(idle, SEARCH_IDLE_S) if self._searching else idle)

    def _reap(self, *, now: bool = False) -> int:
        if not now and time.monotonic() < self._next_reap:
            return 0
        # Jitter, so a fleet started together does not reap in lock step.
        self._next_reap = time.monotonic() + self.reap_interval * random.uniform(0.5, 1.5)
        retries = self.settings.max_retries
        reaped = len(self._db(lambda: requeue.reap_expired(self.db, max_retries=retries), "reap"))
        self.report.reaped += reaped
        return reaped

    def _claim(self) -> list[ClaimedJob]:
        limit = self.settings.claim_batch
        if self.settings.max_jobs is not None:
            limit = min(limit, self.settings.max_jobs - self.report.claimed)
        pending, self._unrecorded = self._unrecorded, []
        rec, jobs = self._db(
            lambda: recording.record_and_claim(
                self.db,
                self.owner,
                pending,
                self.session_id,
                self.phase,
                limit=limit,
                lease_seconds=self.settings.lease_seconds,
                gpu=self.settings.gpu,
                machine=self.settings.machine,
                max_retries=self.settings.max_retries,
                measured_on=self._measured_on,
                held=self._searches.held_builds() if self._searches is not None else (),
                step=self._step,
            ),
            "record and claim" if pending else "claim",
        )
        self._count(rec)
        if self.phase is Phase.EVAL and not jobs:
            # No run to do: take a search's compile-phase work (a build, or a strategy's
            # round), so a search needs no separate compile workers. Only then: a claim that
            # found runs costs no second transaction, and builds are not starved, as runs
            # come from builds (this worker's, or compile workers', which take builds too).
            jobs = self._db(
                lambda: claims.claim_jobs(
                    self.db,
                    self.session_id,
                    Phase.COMPILE,
                    owner=self.owner,
                    limit=limit,
                    lease_seconds=self.settings.lease_seconds,
                    gpu=self.settings.gpu,
                    machine=self.settings.machine,
                    search_only=True,
                ),
                "claim builds",
            )
        self.heartbeat.hold(jobs)
        self.report.claimed += len(jobs)
        if jobs:
            self._last_work = time.monotonic()
        return jobs

    def _drained(self) -> bool:
        if self._reap(now=True):
            return False
        counts = self._db(
            lambda: count_jobs(
                self.db, self.session_id, [self.phase.ready, self.phase.running], self._steps
            ),
            "count jobs",
        )
        if any(counts.values()):
            return False
        if self.phase is not Phase.EVAL:
            return True
        waiting = self._db(lambda: search_work_waiting(self.db, self.session_id), "searches")
        self._searching = bool(waiting.active_searches or waiting.builds)
        if waiting.builds:
            return False
        patience = SEARCH_PATIENCE_S
        return not waiting.active_searches or time.monotonic() - self._last_work > patience

    def _platform(self) -> MeasuredOn | None:
        """Where this worker measures (evaluation workers), stored once."""
        if self._probe is None:
            return None
        if self._measured_on is None:
            facts = self._probe.facts()
            pid = self._db(
                lambda: report_platform(
                    self.db,
                    facts,
                    machine=self.settings.machine,
                    session_user=self.session.user_platform,
                ),
                "report platform",
            )
            self._measured_on = MeasuredOn(pid, self.settings.machine)
            log.info("%s: measuring on platform %d", self.owner, pid)
        return self._measured_on

    def _work(self, jobs: list[ClaimedJob]) -> None:
        if any(j.config is not None and j.solver is None for j in jobs):
            jobs = self._db(lambda: self.loader.with_round_solvers(jobs), "load rounds")
        # A search's build and run jobs; a strategy's rounds (a config's perf job with a
        # search_build: tuna.searches.strategy) are plain jobs of the session's backend.
        searched = [j for j in jobs if is_search_job(j)]
        plain = [j for j in jobs if not is_search_job(j)]
        works: dict[int, JobWork | SearchWork | str] = {}
        if plain:
            on = self._platform()
            platform = on.platform if on is not None else None
            works.update(self._db(lambda: self.loader.load(plain, platform=platform), "load jobs"))
        if searched:
            works.update(self._db(lambda: self.searches.load(searched), "load search jobs"))
        pending: list[tuple[ClaimedJob, Outcome]] = []
        last_record = time.monotonic()
        for job in jobs:
            if self.stop.is_set():
                break
            if self.heartbeat.is_lost(job.id):
                continue  # recorded as lost below, without running it
            work = works[job.id]
            if isinstance(work, str):  # why it could not be loaded
                outcome = _outcome_type(job.phase, job).failed(work)
            else:
                outcome = self._execute(work, job)
            pending.append((job, outcome))
            last = job is jobs[-1]
            if not last and time.monotonic() - last_record >= self.settings.record_interval:
                self._record(pending)
                pending, last_record = [], time.monotonic()
        if self.stop.is_set():
            self._record(pending)
        else:  # recorded by the next claim, in its transaction
            self.heartbeat.forget([j.id for j, _ in pending])
            self._unrecorded = pending
        lost = [j for j in self.heartbeat.held() if self.heartbeat.is_lost(j.id)]
        self.report.lost += len(lost)
        self.heartbeat.forget([j.id for j in lost])
        self._release(self.heartbeat.held())  # claimed but not started: we are stopping

    def _execute(self, work: JobWork | SearchWork, job: ClaimedJob) -> Outcome:
        """One job's backend call, job work and search work alike: the hooks around it, what
        the device phase must own taken for it, the time limit enforced from outside (the
        call runs in a child the worker kills), an exception recorded as the job's failure."""
        backend = self._backend_of(work)
        progress = self._progress(job) if isinstance(work, JobWork) else None
        if isinstance(work, JobWork) and progress is not None:
            work = dataclasses.replace(work, checkpoint=progress)
        for hook in self.hooks:
            hook.before_job(work)
        started = time.monotonic()
        outcome: Outcome | None = None
        self._in_backend = True
        try:
            if job.phase is Phase.COMPILE:  # an evaluate worker compiles a strategy's rounds
                outcome = self._call(step_of(backend, work, job.phase), work)
            else:
                with owning(backend.owns(work), self.settings.gpu, owner=self.owner) as waited:
                    self.report.waited_seconds += waited
                    outcome = self._call(step_of(backend, work, job.phase), work)
        except Exception as e:  # a backend's crash is the job's failure, not the worker's
            log.warning("job %d: backend %s raised", work.job_id, backend.name, exc_info=True)
            outcome = _outcome_type(job.phase, job).failed(f"{type(e).__name__}: {e}")
        finally:
            self._in_backend = False
            elapsed = time.monotonic() - started
            self.report.backend_seconds += elapsed
            for hook in reversed(self.hooks):
                hook.after_job(work, outcome, elapsed)
        return progress.unsaved(outcome) if progress is not None else outcome

    def _call(self, step: Callable[[Any], Outcome], work: JobWork | SearchWork) -> Outcome:
        limit = self.settings.time_limit
        return step(work) if limit is None else run_in_horse(step, work, limit)

    def _backend_of(self, work: JobWork | SearchWork) -> Backend:
        """The session's backend, or a search job's search's (``bench``)."""
        if isinstance(work, JobWork):
            return self.backend
        name = self.searches.backend_of(work.search_id)
        backend = self._backends.get(name)
        if backend is None:
            backend = self._backends[name] = get_backend(name)
        return backend

    def _progress(self, job: ClaimedJob) -> Progress | None:
        """The checkpoint of an evaluation: its measurements saved while it runs."""
        on = self._measured_on
        if on is None or job.phase is not Phase.EVAL:
            return None
        return Progress(
            lambda ms: save_progress(self.db, self.owner, job, ms, on),
            interval=self.settings.record_interval,
            lost=lambda: self.heartbeat.is_lost(job.id),
        )

    def _record(self, pending: list[tuple[ClaimedJob, Outcome]]) -> None:
        if not pending:
            return
        # Forget first: the heartbeat must not take a job this write moves on for a lost one.
        self.heartbeat.forget([j.id for j, _ in pending])
        rec = self._db(
            lambda: recording.record_outcomes(
                self.db,
                self.owner,
                pending,
                max_retries=self.settings.max_retries,
                measured_on=self._measured_on,
            ),
            "record",
        )
        self._count(rec)

    def _record_now(self) -> None:
        """Record what waits for the next claim, when there will be none."""
        pending, self._unrecorded = self._unrecorded, []
        self._record(pending)

    def _count(self, rec: Recorded) -> None:
        r = self.report
        r.done += rec.count(self.phase.done)
        if self.phase is Phase.COMPILE:  # a search's build ends evaluated (no second phase)
            r.done += rec.count(JobState.EVALUATED)
        r.retried += rec.count(self.phase.ready)
        r.errored += rec.count(JobState.ERRORED)
        r.not_applicable += rec.count(JobState.NOT_APPLICABLE)
        r.lost += len(rec.lost)

    def _release(self, jobs: list[ClaimedJob]) -> None:
        if not jobs:
            return
        self.heartbeat.forget([j.id for j in jobs])
        released = self._db(lambda: claims.release_jobs(self.db, self.owner, jobs), "release")
        self.report.released += len(released)
        self.report.lost += len(jobs) - len(released)

    def _db(self, fn: Callable[[], T], what: str) -> T:
        """Run one transaction, riding out a database outage (a stop signal ends the wait)."""
        return through_outages(
            fn,
            what=f"{self.owner}: {what}",
            patience=self.settings.outage_patience,
            sleep=self.stop.wait,
        )

    def _signals(self) -> contextlib.AbstractContextManager[None]:
        def on_signal(signum: int, _frame: FrameType | None) -> None:
            name = signal.Signals(signum).name
            if self.stop.is_set() and self._in_backend:
                log.warning("%s: %s again, aborting the current job", self.owner, name)
                raise _Abort
            log.warning("%s: %s, stopping after the current job", self.owner, name)
            self.stop.set()

        return on_stop_signals(on_signal, enabled=self.handle_signals)


def step_of(backend: Backend, work: JobWork | SearchWork, phase: Phase) -> Callable[[Any], Outcome]:
    """The backend call that does ``phase`` of ``work``."""
    if isinstance(work, SearchWork):
        return search_step(backend, phase)
    return backend.compile if phase is Phase.COMPILE else backend.evaluate


def _outcome_type(phase: Phase, job: ClaimedJob) -> type[CompileOutcome] | type[EvalOutcome]:
    if is_search_job(job):
        return search_outcome_type(phase)
    return CompileOutcome if phase is Phase.COMPILE else EvalOutcome


def run_worker(
    db: Database,
    session_id: int,
    phase: Phase | str,
    settings: WorkerSettings | None = None,
    *,
    backend: Backend | None = None,
    hooks: Sequence[Hook] = (),
    stop: threading.Event | None = None,
    handle_signals: bool = True,
    **changes: Any,
) -> WorkerReport:
    """Work ``phase`` of session ``session_id`` until stopped (or drained, with ``burst``).

    ``settings`` says how (:class:`WorkerSettings`); keyword arguments named after its
    fields change single settings (``run_worker(db, 3, "eval", burst=True)``).
    ``backend`` defaults to the session's. ``stop`` lets another thread stop the worker as
    SIGTERM would; ``handle_signals`` installs the SIGTERM/SIGINT handlers (main thread).
    """
    unknown = changes.keys() - WorkerSettings.field_names()
    if unknown:
        raise TypeError(f"run_worker() got unknown settings: {', '.join(sorted(unknown))}")
    return Worker(
        db,
        session_id,
        Phase(phase),
        (settings or WorkerSettings()).but(**changes),
        backend=backend,
        hooks=hooks,
        stop=stop,
        handle_signals=handle_signals,
    ).run()
