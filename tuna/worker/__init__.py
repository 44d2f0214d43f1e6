"""Workers: the loop that claims jobs, runs a backend on them and records the outcomes."""

from __future__ import annotations

from tuna.worker.hooks import Hook, JobLog
from tuna.worker.horse import BackendDied, TimeLimitExceeded
from tuna.worker.loop import WorkerReport, make_owner, run_worker
from tuna.worker.settings import WorkerSettings

__all__ = [
    "BackendDied",
    "Hook",
    "JobLog",
    "TimeLimitExceeded",
    "WorkerReport",
    "WorkerSettings",
    "make_owner",
    "run_worker",
]
