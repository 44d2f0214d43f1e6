"""Cross-cutting concerns around each job a worker runs, as small hook classes.

A hook sees every job before and after the backend runs it; the loop stays free of
time limits, logging and metrics. ``after_job`` is always called, with ``outcome`` None
when the job was aborted (a second Ctrl-C).
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

from tuna.backends.base import JobWork, Outcome
from tuna.errors import TunaError

log = logging.getLogger(__name__)


class Hook:
    """Base class: override what you need."""

    def before_job(self, work: JobWork) -> None:
        """Called just before the backend runs ``work``."""

    def after_job(self, work: JobWork, outcome: Outcome | None, seconds: float) -> None:
        """Called once the backend returned (or raised, or was aborted: ``outcome`` None)."""


class TimeLimitExceeded(TunaError):
    """Raised inside a backend call that ran past the worker's time limit."""


class TimeLimit(Hook):
    """Fail a job whose backend call runs longer than ``seconds``.

    Uses SIGALRM, so it only acts in the main thread of a process (which is where
    ``tuna worker`` runs jobs); elsewhere it does nothing.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._previous: signal.Handlers | None | object = None
        self._armed = False

    def before_job(self, work: JobWork) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def expired(_signum: int, _frame: FrameType | None) -> None:
            raise TimeLimitExceeded(f"time limit of {self.seconds:g} s exceeded")

        self._previous = signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        self._armed = True

    def after_job(self, work: JobWork, outcome: Outcome | None, seconds: float) -> None:
        if not self._armed:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)  # type: ignore[arg-type]
        self._armed = False


class JobLog(Hook):
    """Log every job at INFO: job, phase, solver, outcome and time."""

    def after_job(self, work: JobWork, outcome: Outcome | None, seconds: float) -> None:
        if outcome is None:
            what = "aborted"
        elif outcome.ok:
            what = "ok"
        else:
            what = ("not applicable: " if outcome.not_applicable else "failed: ") + str(
                outcome.reason
            )
        log.info(
            "job %d: %s %s attempt %d %s in %.3f s",
            work.job_id,
            work.phase,
            work.solver,
            work.attempt,
            what,
            seconds,
        )
