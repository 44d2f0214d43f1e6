"""Cross-cutting concerns around each job a worker runs, as small hook classes.

A hook sees every job, job work and search work alike, before and after the backend runs
it; the loop stays free of logging and metrics. ``after_job`` is always called, with
``outcome`` None when the job was aborted (a second Ctrl-C). The time limit is not a hook:
the worker enforces it from outside the backend call (:mod:`tuna.worker.horse`).
"""

from __future__ import annotations

import logging

from tuna.backends.base import JobWork, Outcome, SearchWork

log = logging.getLogger(__name__)


class Hook:
    """Base class: override what you need."""

    def before_job(self, work: JobWork | SearchWork) -> None:
        """Called just before the backend runs ``work``."""

    def after_job(
        self, work: JobWork | SearchWork, outcome: Outcome | None, seconds: float
    ) -> None:
        """Called once the backend returned (or raised, or was aborted: ``outcome`` None)."""


class JobLog(Hook):
    """Log every job at INFO: job, phase, solver, outcome and time."""

    def after_job(
        self, work: JobWork | SearchWork, outcome: Outcome | None, seconds: float
    ) -> None:
        if outcome is None:
            what = "aborted"
        elif outcome.ok:
            what = "ok"
        else:
            what = ("not applicable: " if outcome.not_applicable else "failed: ") + str(
                outcome.reason
            )
        if isinstance(work, JobWork):
            step, subject = work.phase, work.solver
        else:
            step, subject = work.step, f"search {work.search_id}"
        log.info(
            "job %d: %s %s attempt %d %s in %.3f s",
            work.job_id,
            step,
            subject,
            work.attempt,
            what,
            seconds,
        )
