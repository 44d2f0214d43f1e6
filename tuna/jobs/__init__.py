"""The job queue: loading jobs, the state machine (claims, leases, fenced results), its counts.

``tuna.jobs.states`` is the one module that assigns ``job.state``; see its docstring.
``tuna.jobs.status`` reads where a session's jobs are.
"""

from __future__ import annotations

from tuna.jobs.errors import IllegalTransition, LostLease
from tuna.jobs.states import (
    DEFAULT_LEASE_SECONDS,
    DEFAULT_MAX_RETRIES,
    TRANSITIONS,
    ClaimedJob,
    JobFilter,
    Phase,
    Reaped,
    Recorded,
    check_transition,
    claim_jobs,
    compare_and_set,
    extend_leases,
    reap_expired,
    record_and_claim,
    record_outcome,
    record_outcomes,
    release_jobs,
    requeue_jobs,
    reset_jobs,
)
from tuna.jobs.status import JobCounts, count_jobs, job_counts

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
    "check_transition",
    "claim_jobs",
    "compare_and_set",
    "count_jobs",
    "extend_leases",
    "job_counts",
    "reap_expired",
    "record_outcome",
    "record_and_claim",
    "record_outcomes",
    "release_jobs",
    "requeue_jobs",
    "reset_jobs",
]
