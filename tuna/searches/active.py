"""The active searches of one session, driven together: go_fish's and ``tuna search run``'s
loop over :class:`~tuna.searches.drive.SearchDriver` s.

Each round looks for the session's active searches (a ``tuna.tune`` study excepted: its
own process measures it), ticks each one's driver, and fails a search whose driver raises
(its searcher, its replay) with the reason, so one broken search never stops the others.
"""

from __future__ import annotations

import logging
import threading
import time

from sqlalchemy import select, update

from tuna.db import Database
from tuna.db.clock import db_now
from tuna.db.models import Search
from tuna.errors import TunaError
from tuna.searches.create import IN_PROCESS
from tuna.searches.drive import SearchDriver

log = logging.getLogger(__name__)


class SessionSearches:
    """Drives every active search of one session (go_fish's and ``tuna search run``'s)."""

    def __init__(self, db: Database, session_id: int, only: int | None = None) -> None:
        self.db = db
        self.session_id = session_id
        self.only = only
        self.drivers: dict[int, SearchDriver] = {}
        self.ended: dict[int, tuple[str, str | None]] = {}
        self.active = 0

    def active_ids(self) -> list[int]:
        """The active searches, but for a ``tuna.tune`` study: its own process measures it."""
        with self.db.session() as s:
            q = select(Search.id, Search.spec).where(
                Search.session == self.session_id, Search.state == "active"
            )
            if self.only is not None:
                q = q.where(Search.id == self.only)
            rows = s.execute(q.order_by(Search.id)).all()
        return [r.id for r in rows if not (r.spec or {}).get(IN_PROCESS)]

    def tick(self, *, look: bool = True) -> int:
        """One round over the active searches; returns how many are still active.

        ``look=False`` skips the look for searches started meanwhile (a fast round for a
        Run awaited)."""
        ids = self.active_ids() if look or not self.drivers else list(self.drivers)
        for gone in set(self.drivers) - set(ids):
            del self.drivers[gone]  # ended elsewhere (another driver, an operator)
        for search_id in ids:
            driver = self.drivers.get(search_id)
            try:
                if driver is None:
                    driver = self.drivers[search_id] = SearchDriver(self.db, search_id)
                if not driver.tick():
                    self.ended[search_id] = (driver.ended_as, driver.ended_reason)
                    del self.drivers[search_id]
            except TunaError as e:  # the search's trouble (its searcher, its replay)
                log.warning("search %d: %s", search_id, e)
                self._fail(search_id, str(e))
        self.active = len(self.drivers)
        return self.active

    def _fail(self, search_id: int, reason: str) -> None:
        driver = self.drivers.pop(search_id, None)
        if driver is not None:
            driver.end("failed", reason)
        else:
            with self.db.transaction(immediate=True) as conn:
                conn.execute(
                    update(Search)
                    .where(Search.id == search_id, Search.state == "active")
                    .values(
                        {Search.state: "failed", Search.reason: reason, Search.finished: db_now()}
                    )
                )
        self.ended[search_id] = ("failed", reason)

    def run(self, stop: threading.Event, *, poll_s: float = 0.02, idle_s: float = 0.5) -> None:
        """Tick until ``stop`` is set or nothing is active; every ``poll_s`` while a
        dynamic search waits for a Run (its next point goes out as soon as the Run lands),
        every ``idle_s`` otherwise."""
        last_look = 0.0
        while not stop.is_set():
            now = time.monotonic()
            look = now - last_look >= idle_s
            if look:
                last_look = now
            if self.tick(look=look) == 0:
                return
            waiting = any(d.waiting for d in self.drivers.values())
            stop.wait(poll_s if waiting else idle_s)
