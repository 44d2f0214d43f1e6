"""A worker's heartbeat: the leases of the jobs it holds, extended from a thread of its own.

The heartbeat extends every held job's lease each ``interval`` seconds (on the database
clock, :func:`tuna.jobs.claims.extend_leases`); a job whose lease was lost (it expired and
the reaper or another worker took it) is marked lost, and the worker then writes nothing
for it. A failed beat is retried at the next one: the lease has slack for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from tuna.db import Database
from tuna.jobs import claims
from tuna.jobs.beat import Beat
from tuna.jobs.values import ClaimedJob

log = logging.getLogger(__name__)


class Heartbeat:
    """Extends the leases of the jobs a worker holds, from its own thread."""

    def __init__(self, db: Database, owner: str, lease_seconds: float, interval: float) -> None:
        self.db, self.owner = db, owner
        self.lease_seconds, self.interval = lease_seconds, interval
        self._held: dict[int, ClaimedJob] = {}
        self._lost: set[int] = set()
        self._lock = threading.Lock()
        self._beat = Beat(self._extend, interval, owner, log)

    def hold(self, jobs: Sequence[ClaimedJob]) -> None:
        with self._lock:
            self._held.update((j.id, j) for j in jobs)

    def forget(self, ids: Sequence[int]) -> None:
        with self._lock:
            for i in ids:
                self._held.pop(i, None)
                self._lost.discard(i)

    def held(self) -> list[ClaimedJob]:
        with self._lock:
            return list(self._held.values())

    def is_lost(self, job_id: int) -> bool:
        with self._lock:
            return job_id in self._lost

    def start(self) -> None:
        self._beat.start()

    def stop(self) -> None:
        self._beat.stop()

    def _extend(self) -> None:
        jobs = self.held()
        if not jobs:
            return
        lost = claims.extend_leases(self.db, self.owner, jobs, self.lease_seconds)
        with self._lock:
            # A job recorded (or released) by this worker since the list was taken is
            # gone from the running state too, but it was forgotten before that write.
            really = [i for i in lost if i in self._held]
            self._lost.update(really)
        for job_id in really:
            log.warning("job %d: lease lost by %s", job_id, self.owner)
