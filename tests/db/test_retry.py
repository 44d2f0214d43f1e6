from __future__ import annotations

import sqlite3

import pymysql
import pytest
from sqlalchemy import exc as sa_exc

from tests.support.clock import FakeClock
from tuna.db.retry import (
    connection_lost_cause,
    through_outages,
    transient_cause,
    with_retry,
)
from tuna.errors import DatabaseError, TransientDatabaseError


def wrapped(orig: Exception) -> DatabaseError:
    """What Database.session raises: our error from SQLAlchemy's from the driver's."""
    try:
        try:
            raise sa_exc.OperationalError("UPDATE job ...", {}, orig)
        except sa_exc.OperationalError as e:
            raise DatabaseError("db: failed") from e
    except DatabaseError as e:
        return e


@pytest.mark.parametrize(
    ("orig", "cause"),
    [
        (pymysql.err.OperationalError(1213, "Deadlock found"), "MySQL error 1213"),
        (pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"), "MySQL error 1205"),
        (sqlite3.OperationalError("database is locked"), "SQLite busy"),
    ],
)
def test_lock_races_are_transient(orig, cause):
    assert transient_cause(wrapped(orig)) == cause


@pytest.mark.parametrize(
    "orig",
    [
        pymysql.err.OperationalError(2003, "Can't connect to MySQL server"),
        pymysql.err.IntegrityError(1062, "Duplicate entry"),
        sqlite3.OperationalError("no such table: job"),
    ],
)
def test_other_errors_are_not(orig):
    assert transient_cause(wrapped(orig)) is None


def test_a_transient_failure_is_retried_with_bounded_jittered_sleeps():
    calls, sleeps = [], []

    def txn():
        calls.append(1)
        if len(calls) < 3:
            raise wrapped(pymysql.err.OperationalError(1213, "Deadlock found"))
        return "ok"

    assert with_retry(txn, what="claim", sleep=sleeps.append, base_delay=0.1, max_delay=0.3) == "ok"
    assert len(calls) == 3 and len(sleeps) == 2
    assert all(0 <= s <= 0.3 for s in sleeps)


def test_retries_are_bounded():
    calls = []

    def txn():
        calls.append(1)
        raise wrapped(sqlite3.OperationalError("database is locked"))

    with pytest.raises(TransientDatabaseError, match="claim: gave up after 4 tries"):
        with_retry(txn, what="claim", attempts=4, sleep=lambda _s: None)
    assert len(calls) == 4


def test_other_errors_propagate_at_once():
    calls = []

    def txn():
        calls.append(1)
        raise wrapped(pymysql.err.IntegrityError(1062, "Duplicate entry"))

    with pytest.raises(DatabaseError, match="db: failed"):
        with_retry(txn, what="claim", sleep=lambda _s: None)
    assert len(calls) == 1


# -- outages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("orig", "cause"),
    [
        (pymysql.err.OperationalError(2003, "Can't connect to MySQL server"), "MySQL error 2003"),
        (pymysql.err.OperationalError(2013, "Lost connection during query"), "MySQL error 2013"),
        (pymysql.err.OperationalError(1927, "Connection was killed"), "MySQL error 1927"),
        (ConnectionRefusedError(111, "refused"), "ConnectionRefusedError"),
    ],
)
def test_an_unreachable_server_is_an_outage(orig, cause):
    assert connection_lost_cause(wrapped(orig)) == cause


@pytest.mark.parametrize(
    "orig",
    [
        pymysql.err.OperationalError(1213, "Deadlock found"),
        pymysql.err.IntegrityError(1062, "Duplicate entry"),
        sqlite3.OperationalError("database is locked"),
    ],
)
def test_other_errors_are_not_outages(orig):
    assert connection_lost_cause(wrapped(orig)) is None


def test_an_outage_is_ridden_out_with_growing_pauses():
    clock = FakeClock()
    calls = []

    def fn():
        calls.append(clock.now)
        if len(calls) < 5:
            raise wrapped(pymysql.err.OperationalError(2003, "Can't connect"))
        return "ok"

    assert through_outages(fn, what="t", sleep=clock.sleep, clock=lambda: clock.now) == "ok"
    assert len(calls) == 5
    assert clock.sleeps == sorted(clock.sleeps) and clock.sleeps[0] < clock.sleeps[-1]


def test_an_outage_longer_than_the_patience_raises_the_last_error():
    clock = FakeClock()

    def fn():
        raise wrapped(pymysql.err.OperationalError(2013, "Lost connection"))

    with pytest.raises(DatabaseError):
        through_outages(fn, what="t", patience=30, sleep=clock.sleep, clock=lambda: clock.now)
    assert 20 <= clock.now <= 30


def test_other_errors_are_not_repeated_through_outages():
    calls = []

    def fn():
        calls.append(1)
        raise wrapped(pymysql.err.IntegrityError(1062, "Duplicate entry"))

    with pytest.raises(DatabaseError):
        through_outages(fn, what="t", sleep=lambda s: None)
    assert calls == [1]
