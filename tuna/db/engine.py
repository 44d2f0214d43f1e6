"""Engines and the transaction helpers: commit, roll back, translate driver errors.

MySQL / MariaDB connections use utf8mb4 and READ COMMITTED (claims with SKIP LOCKED then
take no gap locks). The pool spends no round trip it does not need, because a claim is
only three (SELECT ... FOR UPDATE SKIP LOCKED, UPDATE, COMMIT) and workers claim in tight
loops:

* a connection is pinged on checkout only when it sat idle in the pool for
  :data:`PING_AFTER_IDLE_S` or longer (HikariCP's "alive bypass window"); a dead one is
  replaced, so a restarted server costs a reconnect, not a crash. One used moments ago
  was alive moments ago; if it died since, the transaction fails with the connection
  invalidated (a "connection lost" error that workers repeat, see
  :func:`tuna.db.retry.through_outages`) and the pool connects afresh.
* on return, a connection is rolled back only when the server says a transaction is
  still open (the protocol's ``SERVER_STATUS_IN_TRANS`` flag, which PyMySQL keeps from
  every reply); after a COMMIT there is nothing to roll back.

Passing ``pool_pre_ping`` or ``pool_reset_on_return`` to :func:`make_engine` restores
SQLAlchemy's own behaviour. SQLite connections use WAL, foreign keys and a busy timeout;
a transaction can ask for ``BEGIN IMMEDIATE`` (the SQLite stand-in for ``FOR UPDATE``)
with ``execution_options(sqlite_immediate=True)``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import ConnectionPoolEntry, PoolResetState

from tuna.config import mask_url
from tuna.errors import DatabaseError, TunaError

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)

PING_AFTER_IDLE_S = 0.5
"""A pooled MySQL connection idle this long is pinged before it is handed out."""

_SERVER_STATUS_IN_TRANS = 0x0001  # MySQL protocol: a transaction is open on this connection
_IDLE_SINCE = "tuna_idle_since"


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
        kwargs.setdefault("pool_recycle", 3600)
        kwargs.setdefault("isolation_level", "READ COMMITTED")
        ping_if_idle = "pool_pre_ping" not in kwargs
        reset_if_open = "pool_reset_on_return" not in kwargs
        if reset_if_open:
            kwargs["pool_reset_on_return"] = None
        engine = create_engine(url, **kwargs)
        if engine.dialect.driver == "pymysql":
            event.listen(engine, "do_connect", _connect_pymysql)
        if ping_if_idle:
            _ping_when_idle(engine)
        if reset_if_open:
            event.listen(engine, "reset", _rollback_if_open)
        return engine
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


def _connect_pymysql(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
    """Connect with PyMySQL, building the TLS context of its "preferred" mode once per process.

    Given no ``ssl*`` option, PyMySQL (2.x) offers TLS when the server supports it and makes a
    new default context for it on every connection: loading the system's CA certificates
    takes ~25 ms, and the context verifies nothing (no CA given: ``CERT_NONE``, no host name
    check), so each one is the same. The connection, its options and what it negotiates are
    PyMySQL's; only that context is shared (an ``SSLContext`` is made to be). Explicit TLS
    options still get a context of their own.
    """
    return _pymysql_connection()(*cargs, **cparams)


@cache
def _pymysql_connection() -> Any:
    import pymysql.connections

    preferred: list[Any] = []  # the shared context, once made

    class Connection(pymysql.connections.Connection):
        def _create_ssl_ctx(self, sslp: Any) -> Any:
            if sslp != {}:
                return super()._create_ssl_ctx(sslp)
            if not preferred:
                preferred.append(super()._create_ssl_ctx({}))
            return preferred[0]

    return Connection


def _ping_when_idle(engine: Engine) -> None:
    """Ping a connection on checkout when it sat idle for :data:`PING_AFTER_IDLE_S`.

    A failed ping raises ``DisconnectionError``, on which the pool discards the connection
    and checks out a fresh one (SQLAlchemy's documented pessimistic disconnect handling).
    """

    @event.listens_for(engine, "connect")
    def _connected(_dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_conn: Any, record: ConnectionPoolEntry) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_conn: Any, record: ConnectionPoolEntry, _proxy: Any) -> None:
        if time.monotonic() - record.info.get(_IDLE_SINCE, 0.0) < PING_AFTER_IDLE_S:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as e:
            raise sa_exc.DisconnectionError(f"ping failed: {e}") from e


def _rollback_if_open(dbapi_conn: Any, _record: Any, state: PoolResetState) -> None:
    """The pool's reset on return: ROLLBACK unless no transaction can be open.

    After a COMMIT (every :meth:`Database.session` that succeeds) the server reports no
    open transaction and the ROLLBACK would be a wasted round trip. A driver that does not
    expose the server's status flags (anything but PyMySQL) is always rolled back.
    """
    if state.transaction_was_reset:
        return
    status = getattr(dbapi_conn, "server_status", None)
    if isinstance(status, int) and not status & _SERVER_STATUS_IN_TRANS:
        return
    dbapi_conn.rollback()


def one_line_error(e: BaseException) -> str:
    """``e`` on one line: the driver's own error for a driver error (SQLAlchemy's text adds
    the statement and a link over several lines), else the exception's first line."""
    orig = getattr(e, "orig", None)
    detail = str(orig) if orig is not None else (str(e).splitlines() or [""])[0]
    return " ".join(detail.split()) or type(e).__name__


def describe_db_error(e: sa_exc.DBAPIError, url: URL) -> str:
    """A one-line, password-free description of a driver error."""
    return f"{mask_url(url)}: {one_line_error(e)}"


class Database:
    """A database Tuna works in: an engine plus the session helper.

    Use :func:`tuna.db.open_database` to get one whose schema has been checked.
    """

    def __init__(self, url: URL | str, engine: Engine | None = None) -> None:
        self.url = make_url(url)
        self.engine = engine or make_engine(self.url)
        self._sessions: sessionmaker[Session] | None = None

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
        if self._sessions is None:
            # Here, not at import: a worker's claims and records run on Core statements
            # (:meth:`transaction`) and never load the ORM.
            from sqlalchemy.orm import sessionmaker

            self._sessions = sessionmaker(self.engine, expire_on_commit=False)
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

    @contextmanager
    def transaction(self, *, immediate: bool = False) -> Iterator[Connection]:
        """A Core connection in a transaction: committed on success, rolled back on error.

        For hot paths that need no ORM (a claim): it skips the Session's bookkeeping,
        about a quarter of a millisecond of CPU per transaction. Errors are translated as
        in :meth:`session`; ``immediate`` is SQLite's BEGIN IMMEDIATE there too.
        """
        try:
            with self.engine.connect() as conn:
                if immediate and self.is_sqlite:
                    conn.execution_options(sqlite_immediate=True)
                with conn.begin():
                    yield conn
        except sa_exc.DBAPIError as e:
            raise DatabaseError(describe_db_error(e, self.url)) from e

    def dispose(self) -> None:
        self.engine.dispose()
