"""Test databases at the head revision, migrated once per test process and then reused.

Migrating takes 1-3 s on MariaDB (every DDL statement syncs files to disk) and a few tenths
of a second on SQLite, and about 300 tests need a database at the head revision. So:

* **SQLite**: one file per process is migrated (the template); a test's database is a byte
  copy of it (:func:`copy_sqlite_template`), which is exactly what migrating it would give.
* **MariaDB / MySQL**: a per-process pool of migrated databases (:class:`MysqlPool`). A test
  takes one; when it ends, the database goes back to the pool only if

  - no other connection to it is left (a leaked engine, a worker still running), and
  - its schema is still the head schema: the same ``SHOW CREATE`` text for every table and
    view (AUTO_INCREMENT counters aside), no triggers, routines or events, the same default
    collation and the same ``alembic_version`` rows as a fresh migration;

  then every row is deleted, the rows a fresh migration holds are put back and the
  AUTO_INCREMENT counters are reset, so the next test sees what a fresh migration gives
  (ids start at 1 again). Otherwise the database is dropped and a new one is migrated
  when needed. ``tests/test_test_infra.py`` checks a reused database against a freshly
  migrated one.

Tests that need an empty database (migrations, ``tuna db upgrade``) keep using the
``mysql_url`` / ``sqlite_url`` fixtures, which are never pooled.
"""

from __future__ import annotations

import atexit
import contextlib
import re
import secrets
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, make_url

from tuna.db import Database, migrate, open_database
from tuna.db.engine import make_engine

# --- SQLite ---------------------------------------------------------------------------------------

_template_lock = threading.Lock()
_template_dir: Path | None = None


def _sqlite_template() -> Path:
    """This process's SQLite database at the head revision (migrated on first use)."""
    global _template_dir
    with _template_lock:
        if _template_dir is None:
            folder = Path(tempfile.mkdtemp(prefix="tuna-test-template-"))
            atexit.register(shutil.rmtree, folder, True)
            database = open_database(f"sqlite:///{folder / 'tuna.db'}")  # migrates it
            database.dispose()  # the last connection checkpoints and removes the WAL
            _template_dir = folder
        return _template_dir / "tuna.db"


def copy_sqlite_template(path: Path) -> None:
    """Make ``path`` a SQLite database at the head revision (a copy of the template)."""
    copy_sqlite(_sqlite_template(), path)


def copy_sqlite(source: Path, path: Path) -> None:
    """Make ``path`` a copy of the SQLite database ``source`` (closed: no connection open)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    for suffix in ("-wal", "-shm"):  # not there after a clean close; copied if they are
        extra = source.with_name(source.name + suffix)
        target = path.with_name(path.name + suffix)
        if extra.exists():
            shutil.copyfile(extra, target)
        elif target.exists():  # a WAL of the file replaced would be replayed into the copy
            target.unlink()


# --- MariaDB / MySQL ------------------------------------------------------------------------------

_CLOSING_S = 2.0  # how long a connection just closed may stay listed by the server
_AUTO_INCREMENT = re.compile(r" AUTO_INCREMENT=\d+")


def create_database(admin: Engine, name: str) -> None:
    with admin.connect() as conn:
        conn.exec_driver_sql(
            f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
        )


def drop_database(admin: Engine, name: str) -> None:
    """Drop ``name``, killing connections a test left to it (with a warning) if they block."""
    with admin.connect() as conn:
        # Don't wait the default metadata-lock timeout (a day) if a test left a transaction open.
        conn.exec_driver_sql("SET SESSION lock_wait_timeout = 10")
        try:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
            return
        except sa.exc.OperationalError:
            pass
        killed = _kill_connections(conn, name)
        warnings.warn(
            f"database {name} was still in use after the test (leaked connection/transaction?); "
            f"killed {killed} connection(s) to drop it",
            stacklevel=1,
        )
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")


def _kill_connections(conn: Connection, name: str) -> int:
    rows = conn.exec_driver_sql(
        "SELECT id FROM information_schema.processlist WHERE db = %s AND id <> CONNECTION_ID()",
        (name,),
    ).fetchall()
    for (conn_id,) in rows:
        with contextlib.suppress(sa.exc.OperationalError):  # it may be gone meanwhile
            conn.exec_driver_sql(f"KILL {int(conn_id)}")
    return len(rows)


@dataclass(frozen=True)
class Schema:
    """What a database's schema is, written so that two databases can be compared."""

    tables: tuple[tuple[str, str], ...]  # (name, SHOW CREATE text without AUTO_INCREMENT=n)
    views: tuple[tuple[str, str], ...]  # (name, SHOW CREATE VIEW text without the db name)
    others: tuple[tuple[Any, ...], ...]  # triggers, routines, events: none in Tuna's schema
    collation: str
    revision: tuple[str, ...]


def read_schema(conn: Connection, name: str) -> Schema:
    kinds = conn.exec_driver_sql(
        "SELECT table_name, table_type FROM information_schema.tables"
        " WHERE table_schema = %s ORDER BY table_name",
        (name,),
    ).fetchall()
    tables, views = [], []
    for table, kind in kinds:
        if kind == "VIEW":
            text = conn.exec_driver_sql(f"SHOW CREATE VIEW `{name}`.`{table}`").fetchone()[1]
            views.append((table, text.replace(f"`{name}`.", "")))
        else:
            text = conn.exec_driver_sql(f"SHOW CREATE TABLE `{name}`.`{table}`").fetchone()[1]
            tables.append((table, _AUTO_INCREMENT.sub("", text)))
    others = conn.exec_driver_sql(
        "SELECT 'trigger', trigger_name, event_object_table, action_statement"
        " FROM information_schema.triggers WHERE trigger_schema = %s"
        " UNION ALL SELECT 'routine', routine_name, routine_type, routine_definition"
        " FROM information_schema.routines WHERE routine_schema = %s"
        " UNION ALL SELECT 'event', event_name, event_type, event_definition"
        " FROM information_schema.events WHERE event_schema = %s",
        (name, name, name),
    ).fetchall()
    collation = conn.exec_driver_sql(
        "SELECT default_collation_name FROM information_schema.schemata WHERE schema_name = %s",
        (name,),
    ).scalar_one()
    revision: tuple[str, ...] = ()
    if any(t == "alembic_version" for t, _ in tables):
        rows = conn.exec_driver_sql(f"SELECT version_num FROM `{name}`.alembic_version")
        revision = tuple(sorted(r[0] for r in rows))
    return Schema(tuple(tables), tuple(views), tuple(tuple(r) for r in others), collation, revision)


@dataclass
class _Baseline:
    """What a freshly migrated database holds: its schema, rows and AUTO_INCREMENT counters."""

    schema: Schema
    rows: dict[str, tuple[list[str], list[tuple[Any, ...]]]]  # table -> (columns, rows)
    auto_increment: dict[str, int]


@dataclass
class PoolStats:
    migrated: int = 0
    reused: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # why -> how many


class MysqlPool:
    """Migrated databases on the test server, reused from test to test (see the module doc)."""

    def __init__(
        self, server_url: str, admin: Engine, prefix: str = "tuna_t_", closing_s: float = _CLOSING_S
    ) -> None:
        self.server_url = server_url
        self.admin = admin
        self.prefix = prefix
        self.closing_s = closing_s  # how long a connection to a database given back may linger
        self.stats = PoolStats()
        self._free: list[str] = []
        self._lock = threading.Lock()
        self._baseline: _Baseline | None = None

    def url(self, name: str) -> str:
        return make_url(self.server_url).set(database=name).render_as_string(hide_password=False)

    def take(self) -> str:
        """The name of a database at the head revision with no rows but a fresh migration's."""
        with self._lock:
            if self._free:
                self.stats.reused += 1
                return self._free.pop()
        name = f"{self.prefix}{secrets.token_hex(6)}"
        create_database(self.admin, name)
        try:
            engine = make_engine(self.url(name))
            try:
                with engine.begin() as conn:
                    migrate.upgrade(conn)
            finally:
                engine.dispose()
            with self._lock:
                self.stats.migrated += 1
                first = self._baseline is None
            if first:
                baseline = self._read_baseline(name)
                with self._lock:
                    self._baseline = self._baseline or baseline
        except BaseException:
            drop_database(self.admin, name)
            raise
        return name

    def give_back(self, name: str) -> None:
        """Return ``name`` to the pool as a fresh migration would leave it, or drop it."""
        why = self._why_not_reusable(name)
        if why is None:
            try:
                self._clean(name)
            except sa.exc.DBAPIError as e:
                why = f"cleaning failed: {type(e.orig or e).__name__}"
        if why is None:
            with self._lock:
                self._free.append(name)
            return
        with self._lock:
            self.stats.dropped[why] = self.stats.dropped.get(why, 0) + 1
        with self.admin.connect() as conn:
            _kill_connections(conn, name)
        drop_database(self.admin, name)

    def close(self) -> None:
        with self._lock:
            names, self._free = self._free, []
        for name in names:
            drop_database(self.admin, name)

    @contextmanager
    def database(self) -> Iterator[Database]:
        """A :class:`Database` from the pool, given back when the block ends."""
        name = self.take()
        try:
            database = open_database(self.url(name))
        except BaseException:
            self.give_back(name)
            raise
        try:
            yield database
        finally:
            database.dispose()
            self.give_back(name)

    # --- internals ---

    def _read_baseline(self, name: str) -> _Baseline:
        return read_baseline(self.admin, name)

    def _why_not_reusable(self, name: str) -> str | None:
        assert self._baseline is not None
        try:
            with self.admin.connect() as conn:
                # A connection closed a moment ago may still be listed until the server
                # has read the client's goodbye: give those a moment to go.
                deadline = time.monotonic() + self.closing_s
                while self._connections(conn, name):
                    if time.monotonic() > deadline:
                        return "a connection to it was left open"
                    time.sleep(0.02)
                if read_schema(conn, name) != self._baseline.schema:
                    return "the test changed its schema"
        except sa.exc.DBAPIError as e:
            return f"could not read its schema: {type(e.orig or e).__name__}"
        return None

    @staticmethod
    def _connections(conn: Connection, name: str) -> int:
        return int(
            conn.exec_driver_sql(
                "SELECT COUNT(*) FROM information_schema.processlist"
                " WHERE db = %s AND id <> CONNECTION_ID()",
                (name,),
            ).scalar_one()
        )

    def _clean(self, name: str) -> None:
        assert self._baseline is not None
        clean(self.admin, name, self._baseline)


def read_baseline(admin: Engine, name: str) -> _Baseline:
    """What the freshly migrated database ``name`` holds, to clean it back to later."""
    with admin.connect() as conn:
        schema = read_schema(conn, name)
        rows: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
        for table, _ in schema.tables:
            result = conn.exec_driver_sql(f"SELECT * FROM `{name}`.`{table}`")
            found = [tuple(r) for r in result]
            if found:
                rows[table] = (list(result.keys()), found)
        return _Baseline(schema, rows, _auto_increments(conn, name))


def _auto_increments(conn: Connection, name: str) -> dict[str, int]:
    rows = conn.exec_driver_sql(
        "SELECT table_name, auto_increment FROM information_schema.tables"
        " WHERE table_schema = %s AND auto_increment IS NOT NULL",
        (name,),
    )
    return {t: int(n) for t, n in rows}


def clean(admin: Engine, name: str, baseline: _Baseline) -> None:
    """Delete every row of ``name``, put back the baseline's and reset AUTO_INCREMENT."""
    with admin.connect() as conn:
        conn.exec_driver_sql("SET SESSION lock_wait_timeout = 10")
        conn.exec_driver_sql("SET SESSION innodb_lock_wait_timeout = 10")
        conn.exec_driver_sql("SET SESSION foreign_key_checks = 0")
        try:
            for table, _ in baseline.schema.tables:
                conn.exec_driver_sql(f"DELETE FROM `{name}`.`{table}`")
            for table, (columns, rows) in baseline.rows.items():
                cols = ", ".join(f"`{c}`" for c in columns)
                marks = ", ".join(["%s"] * len(columns))
                conn.exec_driver_sql(
                    f"INSERT INTO `{name}`.`{table}` ({cols}) VALUES ({marks})", rows
                )
            conn.commit()
            for table, n in _auto_increments(conn, name).items():
                want = baseline.auto_increment.get(table, 1)
                if n != want:
                    conn.exec_driver_sql(f"ALTER TABLE `{name}`.`{table}` AUTO_INCREMENT = {want}")
        finally:
            conn.rollback()
            conn.exec_driver_sql("SET SESSION foreign_key_checks = 1")


class FreshDatabase:
    """One named database made fresh before each test (the cluster's, which its hosts know by
    name): cleaned like a pooled one when its schema is still the head's, else dropped,
    recreated and migrated. Connections the previous test left (workers on a host it cut
    off, a killed go_fish's) are killed first."""

    def __init__(self, admin: Engine, url: str) -> None:
        self.admin, self.url = admin, url
        name = make_url(url).database
        assert name
        self.name = name
        self._baseline: _Baseline | None = None
        self.cleaned = self.migrated = 0

    def make_fresh(self) -> None:
        with self.admin.connect() as conn:
            conn.exec_driver_sql("SET SESSION lock_wait_timeout = 10")
            exists = conn.exec_driver_sql(
                "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = %s",
                (self.name,),
            ).scalar_one()
            _kill_connections(conn, self.name)
            same = (
                exists
                and self._baseline is not None
                and read_schema(conn, self.name) == self._baseline.schema
            )
        if same:
            assert self._baseline is not None
            try:
                clean(self.admin, self.name, self._baseline)
                self.cleaned += 1
                return
            except sa.exc.DBAPIError:
                pass  # recreated below
        drop_database(self.admin, self.name)
        create_database(self.admin, self.name)
        engine = make_engine(self.url)
        try:
            with engine.begin() as conn:
                migrate.upgrade(conn)
        finally:
            engine.dispose()
        self._baseline = read_baseline(self.admin, self.name)
        self.migrated += 1
