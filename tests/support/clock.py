"""A fake clock for logic that is about time (retries, outages, leases, heartbeats)."""

from __future__ import annotations


class FakeClock:
    """Time that moves only when the code under test sleeps (or the test calls :meth:`advance`).

    Pass ``clock.sleep`` where the code takes a ``sleep`` and ``clock.monotonic`` (or
    ``clock``, which is callable) where it takes a clock. ``sleeps`` records every pause asked.
    """

    def __init__(self, now: float = 0.0) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def monotonic(self) -> float:
        return self.now

    def __call__(self) -> float:
        return self.now
