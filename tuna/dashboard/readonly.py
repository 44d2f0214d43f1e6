"""The dashboard's database: opened read-only, schema checked, never upgraded.

Every connection is made read-only by the server itself before the dashboard uses it:
``SET SESSION TRANSACTION READ ONLY`` on MySQL / MariaDB (a write then fails with
"Cannot execute statement in a READ ONLY transaction") and ``PRAGMA query_only`` on
SQLite. A database user with only SELECT grants (README, "tuna dashboard") adds a second
wall. Unlike :func:`tuna.db.open_database`, an embedded SQLite database is not created or
upgraded here: a dashboard must not change what it shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url

from tuna.db import Database, migrate
from tuna.db.engine import describe_db_error
from tuna.errors import DatabaseError


def open_readonly(url: URL | str) -> Database:
    """The database at ``url``, every connection read-only, at this Tuna's schema revision."""
    url = make_url(url)
    db = Database(url)
    path = url.database
    if db.is_sqlite and path not in (None, "", ":memory:") and not Path(str(path)).is_file():
        db.dispose()
        raise DatabaseError(
            f"no database at {path}; run `tuna db upgrade` (or `tuna quickstart`) "
            "to create one, or set TUNA_DB_URL to the database to show"
        )
    _make_readonly(db)
    try:
        with db.engine.connect() as conn:
            migrate.check_revision(conn, f"database {db.url_masked}")
    except sa_exc.OperationalError as e:
        db.dispose()
        raise DatabaseError(
            f"cannot use database {describe_db_error(e, db.url)}; check that the server is "
            "running and TUNA_DB_URL names it"
        ) from e
    except BaseException:
        db.dispose()
        raise
    return db


def _make_readonly(db: Database) -> None:
    @event.listens_for(db.engine, "connect")
    def _readonly(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        if db.is_sqlite:
            cur.execute("PRAGMA query_only=ON")
        else:
            cur.execute("SET SESSION TRANSACTION READ ONLY")
        cur.close()
