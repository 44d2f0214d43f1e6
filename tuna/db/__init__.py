"""The database layer: models, engines, the session helper and schema revisions."""

from __future__ import annotations

import logging

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL

from tuna.config import load_settings
from tuna.db import migrate
from tuna.db.engine import Database, describe_db_error
from tuna.errors import DatabaseError

log = logging.getLogger(__name__)

__all__ = ["Database", "open_database"]


def open_database(url: URL | str | None = None, *, check_schema: bool = True) -> Database:
    """Open the database named by ``url`` (default: from the settings) and check its schema.

    An embedded SQLite database is created and upgraded to the head revision on first
    use. A MySQL database must already be at the head revision: if it is not, the error
    names the command that migrates it (``tuna db upgrade``).
    """
    db = Database(url if url is not None else load_settings().db_url)
    if not check_schema:
        return db
    try:
        with db.engine.connect() as conn:
            if migrate.is_at_head(conn):
                pass
            elif db.is_sqlite:
                if migrate.current_revision(conn) != migrate.head_revision():
                    log.info("database %s: upgrading schema", db.url_masked)
                    migrate.upgrade(conn)
                    conn.commit()
            else:
                migrate.check_revision(conn, f"database {db.url_masked}")
    except sa_exc.DatabaseError as e:  # OperationalError, or SQLite's "not a database"
        db.dispose()
        if db.is_sqlite and not isinstance(e, sa_exc.OperationalError):
            raise DatabaseError(
                f"cannot use database {describe_db_error(e, db.url)}; TUNA_DB_URL must name a "
                "Tuna SQLite database, or a file that does not exist yet"
            ) from e
        raise DatabaseError(
            f"cannot use database {describe_db_error(e, db.url)}; check that the server is "
            "running and TUNA_DB_URL (or TUNA_DB_HOSTNAME, TUNA_DB_NAME, TUNA_DB_USER_NAME, "
            "TUNA_DB_USER_PASSWORD) names it"
        ) from e
    except BaseException:
        db.dispose()
        raise
    return db
