"""What an evaluation measured so far, saved while it runs: the backend's checkpoint.

A backend that times many candidates hands each new measurement to
``JobWork.checkpoint`` (a :class:`Progress`); every ``interval`` seconds the ones not
yet saved go to the database in a small fenced transaction
(:func:`tuna.jobs.measurements.save_progress`). A worker killed midway loses at most
the last interval's measurements, and the retried job starts from the rest
(``JobWork.measured``). The job's record then writes only what was not saved already
(:meth:`Progress.unsaved`).

A save that fails (the database is away) keeps its measurements for the next save or
for the record; one that finds the job no longer held writes nothing and tells the
backend so (it may stop).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence

from tuna.backends.base import EvalOutcome, Measurement, Outcome

log = logging.getLogger(__name__)

Save = Callable[[Sequence[Measurement]], bool]


class Progress:
    """The checkpoint of one evaluation (see the module's docstring)."""

    def __init__(
        self,
        save: Save,
        *,
        interval: float,
        lost: Callable[[], bool] = lambda: False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._save, self._interval, self._lost, self._clock = save, interval, lost, clock
        self._pending: list[Measurement] = []
        self._saved: set[Measurement] = set()
        self._last = clock()
        self.held = True
        self.saves = 0

    def __call__(self, measurements: Sequence[Measurement]) -> bool:
        self._pending.extend(measurements)
        if self.held and self._lost():
            self.held = False
        if self.held and self._clock() - self._last >= self._interval:
            self.flush()
        return self.held

    def flush(self) -> None:
        """Save what is pending now (while the job is held)."""
        self._last = self._clock()
        if not self._pending or not self.held:
            return
        batch = list(self._pending)
        try:
            self.held = self._save(batch)
        except Exception:  # kept for the next save or the record
            log.warning("saving %d measurement(s) failed", len(batch), exc_info=True)
            return
        if self.held:
            self._saved.update(batch)
            self.saves += 1
        del self._pending[: len(batch)]

    def unsaved(self, outcome: Outcome) -> Outcome:
        """``outcome`` less the measurements saved already (they are rows)."""
        if not isinstance(outcome, EvalOutcome) or not self._saved:
            return outcome
        rest = tuple(m for m in outcome.measurements if m not in self._saved)
        return dataclasses.replace(outcome, measurements=rest)
