"""Retrying a transaction that lost a lock race: deadlocks, lock-wait timeouts, busy SQLite.

InnoDB breaks a deadlock by rolling one transaction back (error 1213) and gives up waiting
for a row lock after ``innodb_lock_wait_timeout`` (1205); SQLite answers "database is
locked" when its busy timeout runs out. All three mean "try the whole transaction again":
the work is repeated from the start after a short random sleep (full jitter, so racing
workers do not collide again in lock step), a bounded number of times.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import exc as sa_exc

from tuna.errors import TransientDatabaseError

log = logging.getLogger(__name__)

T = TypeVar("T")

MYSQL_DEADLOCK = 1213
MYSQL_LOCK_WAIT_TIMEOUT = 1205
MARIADB_RECORD_CHANGED = 1020  # snapshot isolation conflict (REPEATABLE READ only)
TRANSIENT_MYSQL_CODES = frozenset({MYSQL_DEADLOCK, MYSQL_LOCK_WAIT_TIMEOUT, MARIADB_RECORD_CHANGED})
SQLITE_BUSY_MESSAGES = ("database is locked", "database table is locked", "database is busy")

DEFAULT_ATTEMPTS = 8
DEFAULT_BASE_DELAY = 0.02
DEFAULT_MAX_DELAY = 1.0


def transient_cause(exc: BaseException) -> str | None:
    """Why ``exc`` (or an exception it was raised ``from``) is worth retrying, or None."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        orig = cur.orig if isinstance(cur, sa_exc.DBAPIError) else cur
        args = getattr(orig, "args", ())
        if args and isinstance(args[0], int) and args[0] in TRANSIENT_MYSQL_CODES:
            return f"MySQL error {args[0]}"
        text = str(orig).lower()
        if any(m in text for m in SQLITE_BUSY_MESSAGES):
            return "SQLite busy"
        cur = cur.__cause__
    return None


def with_retry(
    fn: Callable[[], T],
    *,
    what: str,
    attempts: int = DEFAULT_ATTEMPTS,
    base_delay: float = DEFAULT_BASE_DELAY,
    max_delay: float = DEFAULT_MAX_DELAY,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``fn`` (one whole transaction) until it does not fail for a transient reason.

    Other errors propagate at once. After ``attempts`` transient failures, raises
    :class:`TransientDatabaseError` from the last one.
    """
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as e:
            cause = transient_cause(e)
            if cause is None:
                raise
            if attempt == attempts:
                raise TransientDatabaseError(
                    f"{what}: gave up after {attempts} tries ({cause}); the database is "
                    "overloaded or a long transaction holds the rows, try again later"
                ) from e
            delay = random.uniform(0, min(max_delay, base_delay * 2**attempt))
            log.info("%s: %s, retry %d/%d in %.3f s", what, cause, attempt, attempts - 1, delay)
            sleep(delay)
    raise AssertionError("unreachable")


# -- The database went away: a restart, a failover, a cut network ---------------------------

# Client-side "can't reach / lost the server" and server-side "shutting down / killed".
CONNECTION_LOST_MYSQL_CODES = frozenset(
    {
        1053,  # server shutdown in progress
        1927,  # connection was killed (MariaDB)
        2003,  # can't connect to server
        2006,  # server has gone away
        2013,  # lost connection during query
        2055,  # lost connection (system error)
    }
)
DEFAULT_OUTAGE_PATIENCE = 300.0


def connection_lost_cause(exc: BaseException) -> str | None:
    """Why ``exc`` looks like the database being unreachable for now, or None."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, sa_exc.DBAPIError) and cur.connection_invalidated:
            return "connection invalidated"
        orig = cur.orig if isinstance(cur, sa_exc.DBAPIError) else cur
        args = getattr(orig, "args", ())
        if args and isinstance(args[0], int) and args[0] in CONNECTION_LOST_MYSQL_CODES:
            return f"MySQL error {args[0]}"
        if isinstance(orig, (ConnectionError, TimeoutError)):
            return type(orig).__name__
        cur = cur.__cause__ or cur.__context__
    return None


def through_outages(
    fn: Callable[[], T],
    *,
    what: str,
    patience: float = DEFAULT_OUTAGE_PATIENCE,
    max_delay: float = 5.0,
    sleep: Callable[[float], object] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Call ``fn`` (one whole transaction) again while the database is unreachable.

    For workers and go_fish, which must ride out a database restart: the transaction is
    repeated after a growing pause, for up to ``patience`` seconds, then the last error
    propagates. Repeating is safe for Tuna's writes because each is fenced: a write whose
    commit reached the server before the connection dropped finds the job already moved
    and changes nothing the second time.
    """
    deadline = clock() + patience
    delay = 0.25
    while True:
        try:
            return fn()
        except Exception as e:
            cause = connection_lost_cause(e)
            if cause is None or clock() + delay > deadline:
                raise
            log.warning("%s: database unreachable (%s), trying again in %.1f s", what, cause, delay)
            sleep(delay)
            delay = min(max_delay, delay * 2)
