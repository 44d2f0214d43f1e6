"""How a worker works, as one value: :class:`WorkerSettings`.

``tuna worker`` and ``go_fish`` take the same options for it (one click decorator in the
CLI); go_fish hands them on to the workers it starts with :meth:`WorkerSettings.argv`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from tuna.db.enums import JobStep
from tuna.db.retry import DEFAULT_OUTAGE_PATIENCE
from tuna.jobs.values import DEFAULT_LEASE_SECONDS, DEFAULT_MAX_RETRIES


@dataclass(frozen=True)
class WorkerSettings:
    """Everything about a worker's loop except what it works on (session, phase).

    * ``burst``: exit once no job of the phase is ready or in flight anywhere.
    * ``until_empty``: exit once a claim finds no job ready (jobs other workers hold are
      not waited for: a worker of several compile stages moves on to the next at once).
    * ``max_jobs``: stop after claiming that many jobs.
    * ``gpu``, ``machine``: where the worker runs (recorded on its jobs).
    * ``step``: an evaluation takes only jobs of this step (and a search's runs), and is
      drained when they are: other steps' compiled jobs stay compiled. Compiles take all.
    * ``owner``: the lease owner id (default: ``host:pid:random``).
    * ``claim_batch``: jobs claimed per transaction (more is cheaper for short jobs; a
      claimed job waits for the ones before it).
    * ``lease_seconds``: lease length; the heartbeat renews leases every
      ``heartbeat_interval`` (default a third of the lease).
    * ``max_retries``: failed tries of a phase retried before a job errors.
    * ``reap_interval``: how often the worker returns expired leases (default the lease).
    * ``idle_sleep``: the wait after a claim that found nothing.
    * ``record_interval``: outcomes are recorded at the latest this long after the last
      record, or when the batch is done.
    * ``outage_patience``: how long a transaction is retried while the database is down.
    * ``time_limit``: fail a job whose backend call runs longer than this (seconds); the
      call then runs in a child process killed past it (:mod:`tuna.worker.horse`).
    """

    burst: bool = False
    until_empty: bool = False
    max_jobs: int | None = None
    gpu: int | None = None
    machine: int | None = None
    step: JobStep | None = None
    owner: str | None = None
    claim_batch: int = 1
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    heartbeat_interval: float | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    reap_interval: float | None = None
    idle_sleep: float = 1.0
    record_interval: float = 1.0
    outage_patience: float = DEFAULT_OUTAGE_PATIENCE
    time_limit: float | None = None

    def __post_init__(self) -> None:
        if self.claim_batch < 1:
            raise ValueError(f"claim_batch must be at least 1, not {self.claim_batch}")
        if self.lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be positive, not {self.lease_seconds}")

    def but(self, **changes: Any) -> WorkerSettings:
        """A copy with ``changes`` (field names) applied."""
        return replace(self, **changes)

    def argv(self) -> list[str]:
        """The ``tuna worker`` options that give a worker these settings (those that differ
        from the defaults, among the ones go_fish passes on: see ``SHARED_OPTIONS``)."""
        out: list[str] = []
        default = WorkerSettings()
        for name, option in SHARED_OPTIONS.items():
            value = getattr(self, name)
            if value != getattr(default, name):
                out += [option, f"{value:g}" if isinstance(value, float) else str(value)]
        return out

    @classmethod
    def field_names(cls) -> frozenset[str]:
        return frozenset(f.name for f in fields(cls))


# The settings a user gives go_fish for all its workers, and their ``tuna worker`` option.
SHARED_OPTIONS = {
    "claim_batch": "--claim-batch",
    "lease_seconds": "--lease-seconds",
    "max_retries": "--max-retries",
    "time_limit": "--time-limit",
}
