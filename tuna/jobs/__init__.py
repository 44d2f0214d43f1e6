"""The job queue: loading jobs, the state machine (claims, leases, fenced results), its counts.

``tuna.jobs.states`` is the one module that assigns ``job.state``; see its docstring. Its
writers: ``claims`` (claims, leases), ``recording`` (outcomes), ``requeue`` (the reaper,
operators); ``load`` creates jobs; ``values`` holds the types they share.
``tuna.jobs.status`` reads where a session's jobs are.
"""

from __future__ import annotations

from tuna.jobs.claims import claim_jobs, extend_leases, release_jobs
from tuna.jobs.errors import IllegalTransition, LostLease
from tuna.jobs.recording import record_and_claim, record_outcome, record_outcomes
from tuna.jobs.requeue import reap_expired, requeue_jobs, reset_jobs
from tuna.jobs.states import TRANSITIONS, check_transition, compare_and_set
from tuna.jobs.status import JobCounts, count_jobs, job_counts
from tuna.jobs.values import (
    DEFAULT_LEASE_SECONDS,
    DEFAULT_MAX_RETRIES,
    ClaimedJob,
    JobFilter,
    Phase,
    Reaped,
    Recorded,
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
