"""A fake clock for logic that is about time (retries, outages, leases, heartbeats).

:class:`FakeClock` stands in for ``time.sleep``/``time.monotonic``. :func:`on_fake_clock` makes
it the *database* clock too: on the SQLite database it returns, ``db_now()`` (lease expiries,
phase stamps, the reaper's "expired") reads the fake clock, so a test moves a lease past its
expiry with :meth:`FakeClock.advance` instead of waiting for it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.compiler import compiles

from tuna.db import Database
from tuna.db import clock as db_clock


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


EPOCH = dt.datetime(2026, 1, 1)
"""The database time at which a fake clock reads 0."""

_FAKE = "_tuna_fake_clock"  # the attribute that marks an engine's dialect as on a fake clock


def database_time(clock: FakeClock, offset: float = 0.0) -> dt.datetime:
    """What ``db_now(offset)`` is on a database on ``clock`` (to the millisecond, as SQLite)."""
    exact = EPOCH + dt.timedelta(seconds=clock.now + offset)
    return exact.replace(microsecond=exact.microsecond // 1000 * 1000)


@compiles(db_clock.db_now, "sqlite")
def _sqlite_now(element: db_clock.db_now, compiler: Any, **kw: Any) -> str:
    """``db_now`` as Tuna compiles it, except on an engine that :func:`on_fake_clock` made."""
    if getattr(compiler.dialect, _FAKE, None) is None:
        return db_clock._sqlite_now(element, compiler, **kw)
    return f"tuna_fake_now({compiler.process(element.clauses, **kw)})"


def on_fake_clock(db: Database, clock: FakeClock) -> Database:
    """A :class:`Database` on ``db``'s SQLite file whose database clock is ``clock``.

    Every connection it opens (the worker's, its heartbeat thread's, a reaper's) computes
    ``db_now(s)`` as :data:`EPOCH` + ``clock.now`` + ``s``, in SQLite's own text format.
    Dispose of it at the end of the test.
    """
    if not db.is_sqlite:
        raise ValueError("on_fake_clock: the fake database clock is for SQLite databases")
    fake = Database(db.url)
    setattr(fake.engine.dialect, _FAKE, clock)

    def now(offset: float) -> str:
        return database_time(clock, offset).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

    @event.listens_for(fake.engine, "connect")
    def _register(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.create_function("tuna_fake_now", 1, now)

    return fake
