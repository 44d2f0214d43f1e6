"""The job queue: the state machine (claims, leases, fenced results) and its retries.

``tuna.jobs.states`` is the one module that assigns ``job.state``; see its docstring.
"""

from __future__ import annotations

from tuna.jobs.errors import IllegalTransition, LostLease, TransientDatabaseError
from tuna.jobs.states import (
    DEFAULT_LEASE_SECONDS,
    DEFAULT_MAX_RETRIES,
    TRANSITIONS,
    ClaimedJob,
    JobCounts,
    JobFilter,
    Phase,
    Reaped,
    Recorded,
    check_transition,
    claim_jobs,
    compare_and_set,
    count_jobs,
    extend_leases,
    job_counts,
    reap_expired,
    record_outcome,
    record_outcomes,
    release_jobs,
    requeue_jobs,
    reset_jobs,
)

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "DEFAULT_MAX_RETRIES",
    "TRANSITIONS",
    "ClaimedJob",
    "IllegalTransition",
    "JobCounts",
    "JobFilter",
    "LostLease",
    "Phase",
    "Reaped",
    "Recorded",
    "TransientDatabaseError",
    "check_transition",
    "claim_jobs",
    "compare_and_set",
    "count_jobs",
    "extend_leases",
    "job_counts",
    "reap_expired",
    "record_outcome",
    "record_outcomes",
    "release_jobs",
    "requeue_jobs",
    "reset_jobs",
]
