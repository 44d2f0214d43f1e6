"""Aggregates the dashboard shows, kept warm in memory so no page waits for a big count.

Counting a session's jobs by state reads one index entry per job (``ix_job_claim``): on a
session of 600,000 jobs that is a few hundred milliseconds of database time, more on a
loaded server, and nothing short of a counter table kept by every transition (a hot row
every claim would fight over) makes it cheaper. So a page takes the last count and, when
it is older than its freshness limit, asks for a new one in the background
(stale-while-revalidate); only the very first request for a value waits for it.

The freshness limit follows the cost: ``max(min_age_s, cost_factor x the time the last
count took)``. A small session is recounted every second (pages that refresh every few
seconds see it move); a huge one at most once every ten times its count's cost, so a
dashboard never spends more than a tenth of the database's time on counting it. One
background thread does the recounts, one at a time.

A stale value is served only where waiting would cost: a count cheaper than
``sync_below_s`` is simply redone (the page waits a few milliseconds and shows the
truth), and a value older than ``stale_factor`` times its freshness limit is recounted
before the page is served, however expensive. Serving any last value "while
revalidating" showed ``new=12`` 20 s after every job had compiled (the first view after
a quiet spell got the value of the last view, however old).

A value that no page should wait for at all (a search's parameter importance: a fit of
trees, about a second on a search of 10^6 runs) is read with :meth:`WarmCache.peek`: it
serves what :meth:`~WarmCache.get` would serve without computing, and otherwise starts the
computation in the background and says so (None); :meth:`~WarmCache.wait` then waits for
that same computation (a small endpoint the page fetches), never starting a second one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class _Entry:
    value: Any
    at: float
    cost: float
    refreshing: bool = False


class WarmCache:
    """Values by key, recomputed in the background once older than their freshness limit."""

    def __init__(
        self,
        *,
        min_age_s: float = 1.0,
        cost_factor: float = 10.0,
        sync_below_s: float = 0.05,
        stale_factor: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.min_age_s = min_age_s
        self.cost_factor = cost_factor
        self.sync_below_s = sync_below_s
        self.stale_factor = stale_factor
        self._clock = clock
        self._entries: dict[Hashable, _Entry] = {}
        self._first: dict[Hashable, Future[Any]] = {}  # first computations in the background
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dashboard-counts")

    def max_age(self, key: Hashable) -> float:
        entry = self._entries.get(key)
        cost = entry.cost if entry else 0.0
        return max(self.min_age_s, self.cost_factor * cost)

    def age(self, key: Hashable) -> float | None:
        """Seconds since the value served for ``key`` was computed (None: never)."""
        entry = self._entries.get(key)
        return None if entry is None else self._clock() - entry.at

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value for ``key``: the last one while fresh; a stale one (with a background
        recompute) only while an expensive value is not much older than its limit;
        else computed now."""
        with self._lock:
            found, value = self._served(key, compute, stale_when_cheap=False)
            if found:
                return value
        value, cost = self._compute(compute)
        with self._lock:
            self._entries[key] = _Entry(value, self._clock(), cost)
        return value

    def peek(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """What :meth:`get` would serve without computing in this thread (a stale value's
        recompute goes to the background); else None, with the value being computed in the
        background (:meth:`wait` waits for it)."""
        with self._lock:
            found, value = self._served(key, compute, stale_when_cheap=True)
            if found:
                return value
            if key not in self._first:
                self._first[key] = self._pool.submit(self._first_value, key, compute)
        return None

    def wait(
        self, key: Hashable, compute: Callable[[], Any], timeout_s: float | None = None
    ) -> Any:
        """The value for ``key``: the background computation :meth:`peek` started, waited
        for (its exception raised here), or else as :meth:`get` gives it."""
        with self._lock:
            first = self._first.get(key)
        if first is not None:
            return first.result(timeout=timeout_s)
        return self.get(key, compute)

    def _served(
        self, key: Hashable, compute: Callable[[], Any], *, stale_when_cheap: bool
    ) -> tuple[bool, Any]:
        """(True, value) where a stored value may be served (the caller holds the lock): a
        fresh one, or a stale one not much older than its limit (of an expensive value only,
        unless ``stale_when_cheap``), whose recompute then goes to the background."""
        entry = self._entries.get(key)
        if entry is None:
            return False, None
        age, limit = self._clock() - entry.at, self.max_age(key)
        if age <= limit:
            return True, entry.value
        if (
            stale_when_cheap or entry.cost >= self.sync_below_s
        ) and age <= self.stale_factor * limit:
            if not entry.refreshing:
                entry.refreshing = True
                self._pool.submit(self._refresh, key, compute)
            return True, entry.value
        return False, None

    def _first_value(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        try:
            value, cost = self._compute(compute)
            with self._lock:
                self._entries[key] = _Entry(value, self._clock(), cost)
            return value
        finally:
            with self._lock:
                self._first.pop(key, None)

    def _compute(self, compute: Callable[[], Any]) -> tuple[Any, float]:
        start = self._clock()
        value = compute()
        return value, self._clock() - start

    def _refresh(self, key: Hashable, compute: Callable[[], Any]) -> None:
        try:
            value, cost = self._compute(compute)
        except Exception:  # noqa: BLE001 - keep serving the last value; the next page retries
            log.exception("dashboard: recounting %s failed", key)
            with self._lock:
                if key in self._entries:
                    self._entries[key].refreshing = False
            return
        with self._lock:
            self._entries[key] = _Entry(value, self._clock(), cost)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
