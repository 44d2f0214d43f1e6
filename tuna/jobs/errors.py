"""Errors of the job queue: illegal transitions and lost leases."""

from __future__ import annotations

from tuna.db.enums import JobState
from tuna.errors import TunaError


class IllegalTransition(TunaError):
    """Raised when a write asks for a (from, to) job state pair the state machine does not allow.

    ``allowed`` lists the states reachable from ``from_state`` (by ``event``, when the
    write named one), for the message.
    """

    def __init__(
        self,
        from_state: JobState,
        to_state: JobState,
        allowed: list[JobState],
        event: str | None = None,
    ) -> None:
        self.from_state = from_state
        self.to_state = to_state
        self.event = event
        targets = ", ".join(s.value for s in allowed) or "nothing"
        by = f" by {event}" if event else ""
        super().__init__(
            f"job state {from_state.value} -> {to_state.value} is not allowed{by}; "
            f"from {from_state.value} a job may go{by} to: {targets}"
        )


class LostLease(TunaError):
    """Raised when a worker writes for a job it no longer holds.

    Its lease expired and the reaper handed the job back, or another worker claimed it
    since: the fenced write changed nothing and wrote no result rows. Losing a lease is
    an expected outcome of a slow or partitioned worker, not a crash.
    """

    def __init__(self, job_ids: list[int], owner: str) -> None:
        self.job_ids = job_ids
        self.owner = owner
        shown = ", ".join(str(i) for i in job_ids[:10]) + (" ..." if len(job_ids) > 10 else "")
        super().__init__(f"job {shown}: lease lost by {owner}; its result was not recorded")
