"""Engines and the one session helper: commit, roll back, translate driver errors.

MySQL / MariaDB connections use utf8mb4, READ COMMITTED (claims with SKIP LOCKED then
take no gap locks) and ``pool_pre_ping`` so a restarted server costs one retry, not a
crash. SQLite connections use WAL, foreign keys and a busy timeout; a transaction can ask
for ``BEGIN IMMEDIATE`` (the SQLite stand-in for ``FOR UPDATE``) with
``execution_options(sqlite_immediate=True)``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

from tuna.config import mask_url
from tuna.errors import DatabaseError, TunaError

log = logging.getLogger(__name__)


def is_sqlite(url: URL) -> bool:
    return url.get_backend_name() == "sqlite"


def make_engine(url: URL | str, **kwargs: Any) -> Engine:
    """Create an engine for ``url`` with Tuna's per-dialect settings."""
    url = make_url(url)
    if is_sqlite(url):
        if url.database and url.database != ":memory:":
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30}, **kwargs)
        _configure_sqlite(engine)
        return engine
    if url.get_backend_name() in ("mysql", "mariadb"):
        url = url.update_query_dict({"charset": "utf8mb4"})
        kwargs.setdefault("pool_pre_ping", True)
        kwargs.setdefault("pool_recycle", 3600)
        kwargs.setdefault("isolation_level", "READ COMMITTED")
        return create_engine(url, **kwargs)
    raise DatabaseError(
        f"unsupported database {mask_url(url)}: Tuna runs on MySQL 8, MariaDB >= 10.6 or SQLite"
    )


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event below issue BEGIN, so IMMEDIATE is possible.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("sqlite_immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def describe_db_error(e: sa_exc.DBAPIError, url: URL) -> str:
    """A one-line, password-free description of a driver error."""
    orig = getattr(e, "orig", None)
    detail = str(orig) if orig is not None else str(e).splitlines()[0]
    return f"{mask_url(url)}: {detail}"


class Database:
    """A database Tuna works in: an engine plus the session helper.

    Use :func:`tuna.db.open_database` to get one whose schema has been checked.
    """

    def __init__(self, url: URL | str, engine: Engine | None = None) -> None:
        self.url = make_url(url)
        self.engine = engine or make_engine(self.url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def url_masked(self) -> str:
        return mask_url(self.url)

    @property
    def is_sqlite(self) -> bool:
        return is_sqlite(self.url)

    @contextmanager
    def session(self, *, immediate: bool = False) -> Iterator[Session]:
        """A session that commits on success and rolls back on any error.

        Driver errors become :class:`DatabaseError` naming the (masked) database.
        ``immediate`` takes SQLite's write lock at BEGIN; elsewhere it is a no-op.
        """
        session = self._sessions()
        if immediate and self.is_sqlite:
            session.connection(execution_options={"sqlite_immediate": True})
        try:
            yield session
            session.commit()
        except TunaError:
            session.rollback()
            raise
        except sa_exc.DBAPIError as e:
            session.rollback()
            raise DatabaseError(describe_db_error(e, self.url)) from e
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    def dispose(self) -> None:
        self.engine.dispose()
