from __future__ import annotations

import sqlite3

import pymysql
import pytest
from sqlalchemy import exc as sa_exc

from tuna.errors import DatabaseError
from tuna.jobs.errors import TransientDatabaseError
from tuna.jobs.retry import transient_cause, with_retry


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
