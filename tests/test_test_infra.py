"""Checks of the test infrastructure itself: the fixtures and the MySQL-tier server."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from tests.support.databases import (
    FreshDatabase,
    MysqlPool,
    copy_sqlite_template,
    read_schema,
)
from tests.support.seed import seed
from tuna.db import migrate, open_database
from tuna.db.models import TuningSession

_metadata = sa.MetaData()
_jobs = sa.Table(
    "infra_jobs",
    _metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("state", sa.String(16), nullable=False),
    mysql_engine="InnoDB",
)


# --- MySQL tier -----------------------------------------------------------------------------------


def test_server_is_recent_mariadb_or_mysql(mysql_server_url: str) -> None:
    engine = sa.create_engine(mysql_server_url)
    try:
        with engine.connect() as conn:
            version = conn.exec_driver_sql("SELECT VERSION()").scalar_one()
        dialect = engine.dialect
        info = dialect.server_version_info
        assert info is not None
        if getattr(dialect, "is_mariadb", False):
            assert tuple(info[:2]) >= (10, 6), f"MariaDB >= 10.6 needed, server is {version}"
        else:
            assert tuple(info[:1]) >= (8,), f"MySQL >= 8 needed, server is {version}"
    finally:
        engine.dispose()


def test_mysql_url_is_a_fresh_utf8mb4_database(mysql_url: str, mysql_server_url: str) -> None:
    url = make_url(mysql_url)
    assert url.database is not None and url.database.startswith("tuna_t_")
    assert url.database != make_url(mysql_server_url).database
    engine = sa.create_engine(mysql_url)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT DATABASE()").scalar_one() == url.database
            assert conn.exec_driver_sql("SELECT @@character_set_database").scalar_one() == "utf8mb4"
            assert conn.exec_driver_sql("SHOW TABLES").fetchall() == []
    finally:
        engine.dispose()


def test_skip_locked_between_two_connections(mysql_url: str) -> None:
    engine = sa.create_engine(mysql_url)
    try:
        _metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(sa.insert(_jobs), [{"id": i, "state": "new"} for i in range(1, 7)])

        claim = (
            sa.select(_jobs.c.id)
            .where(_jobs.c.state == "new")
            .order_by(_jobs.c.id)
            .limit(2)
            .with_for_update(skip_locked=True)
        )
        assert "FOR UPDATE SKIP LOCKED" in str(claim.compile(dialect=engine.dialect))

        with engine.connect() as a, engine.connect() as b:
            # If SKIP LOCKED were ignored, B would block on A's locks: keep that wait short.
            b.exec_driver_sql("SET SESSION innodb_lock_wait_timeout = 3")
            b.commit()
            with a.begin():
                assert a.execute(claim).scalars().all() == [1, 2]
                with b.begin():
                    started = time.monotonic()
                    assert b.execute(claim).scalars().all() == [3, 4]
                    assert time.monotonic() - started < 2.0, "SKIP LOCKED blocked"
                # The rows A holds really are locked: NOWAIT on them fails at once.
                with b.begin(), pytest.raises(sa.exc.OperationalError):
                    b.execute(_jobs.select().where(_jobs.c.id == 1).with_for_update(nowait=True))
            # Once A commits, its rows are free again.
            with b.begin():
                assert b.execute(claim).scalars().all() == [1, 2]
    finally:
        engine.dispose()


def _rows_and_next_ids(url: str) -> tuple[dict[str, int], int]:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            tables = [
                r[0]
                for r in conn.exec_driver_sql("SHOW FULL TABLES WHERE Table_type = 'BASE TABLE'")
            ]
            counts = {
                t: conn.exec_driver_sql(f"SELECT COUNT(*) FROM `{t}`").scalar_one() for t in tables
            }
            conn.execute(
                sa.insert(TuningSession).values(arch="a", num_cu=1, backend="noop", fingerprint="f")
            )
            first_id = conn.exec_driver_sql("SELECT MAX(id) FROM session").scalar_one()
            conn.rollback()
    finally:
        engine.dispose()
    return counts, first_id


def test_a_pooled_mysql_database_comes_back_as_a_fresh_migration_leaves_it(
    mysql_server_url: str, _mysql_admin_engine: sa.Engine, mysql_url: str
) -> None:
    engine = sa.create_engine(mysql_url)
    try:
        with engine.begin() as conn:
            migrate.upgrade(conn)
        with engine.connect() as conn:
            fresh = read_schema(conn, make_url(mysql_url).database or "")
    finally:
        engine.dispose()
    fresh_counts, fresh_id = _rows_and_next_ids(mysql_url)
    assert fresh_counts["alembic_version"] == 1 and fresh_id == 1

    pool = MysqlPool(mysql_server_url, _mysql_admin_engine)
    try:
        with pool.database() as db:
            name = db.url.database
            seed(db, configs=5)
        with pool.database() as db:
            assert db.url.database == name, "the database was not reused"
            with _mysql_admin_engine.connect() as conn:
                assert read_schema(conn, name) == fresh
            assert _rows_and_next_ids(str(db.url.render_as_string(hide_password=False))) == (
                fresh_counts,
                fresh_id,
            )
        assert pool.stats.migrated == 1 and pool.stats.reused == 1 and not pool.stats.dropped
    finally:
        pool.close()


def test_a_pooled_mysql_database_with_a_changed_schema_or_a_leftover_connection_is_dropped(
    mysql_server_url: str, _mysql_admin_engine: sa.Engine
) -> None:
    pool = MysqlPool(mysql_server_url, _mysql_admin_engine)

    def exists(name: str) -> bool:
        with _mysql_admin_engine.connect() as conn:
            rows = conn.exec_driver_sql("SHOW DATABASES LIKE %s", (name,)).fetchall()
        return bool(rows)

    # A connection left open stays open: waiting a tenth of the usual grace for it to go
    # proves as much (the grace is for connections closed a moment before, above).
    leaky = MysqlPool(mysql_server_url, _mysql_admin_engine, closing_s=0.2)
    try:
        with pool.database() as db:
            changed = db.url.database
            with db.engine.begin() as conn:
                conn.exec_driver_sql("ALTER TABLE job ADD COLUMN extra INT")
        assert not exists(changed)
        assert pool.stats.dropped == {"the test changed its schema": 1}
        left_open = sa.create_engine(leaky.url(leaky.take()))
        name = left_open.url.database
        try:
            with left_open.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            leaky.give_back(name)  # left_open's pool still holds the connection
        finally:
            left_open.dispose()
        assert not exists(name)
        assert leaky.stats.dropped == {"a connection to it was left open": 1}
        with pool.database() as db:
            assert db.url.database not in (changed, name)
    finally:
        pool.close()
        leaky.close()


def test_a_fresh_database_is_cleaned_between_tests_and_recreated_when_its_schema_changed(
    _mysql_admin_engine: sa.Engine, mysql_url: str
) -> None:
    fresh = FreshDatabase(_mysql_admin_engine, mysql_url)
    fresh.make_fresh()
    counts, first_id = _rows_and_next_ids(mysql_url)
    db = open_database(mysql_url)
    seed(db, configs=3)
    left = sa.create_engine(mysql_url)
    with left.connect() as conn:  # a connection the test leaves open, in a transaction
        conn.exec_driver_sql("SELECT COUNT(*) FROM job FOR UPDATE")
        fresh.make_fresh()  # kills it, then cleans
        with pytest.raises(sa.exc.OperationalError):
            conn.exec_driver_sql("SELECT 1")
    left.dispose()
    db.dispose()
    assert (fresh.migrated, fresh.cleaned) == (1, 1)
    assert _rows_and_next_ids(mysql_url) == (counts, first_id)
    engine = sa.create_engine(mysql_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP VIEW conv_job")
    engine.dispose()
    fresh.make_fresh()
    assert (fresh.migrated, fresh.cleaned) == (2, 1)
    with _mysql_admin_engine.connect() as conn:
        views = {v for v, _ in read_schema(conn, make_url(mysql_url).database or "").views}
    assert "conv_job" in views


# --- SQLite tier ----------------------------------------------------------------------------------


def test_sqlite_url_points_into_tmp_path(sqlite_url: str, tmp_path: Path) -> None:
    url = make_url(sqlite_url)
    assert url.get_backend_name() == "sqlite"
    assert url.database == str(tmp_path / "tuna.db")
    engine = sa.create_engine(sqlite_url)
    try:
        _metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(sa.insert(_jobs), [{"id": 1, "state": "new"}])
        with engine.connect() as conn:
            assert conn.execute(sa.select(_jobs.c.state)).scalars().all() == ["new"]
    finally:
        engine.dispose()
    assert (tmp_path / "tuna.db").is_file()


def test_a_sqlite_copy_of_the_template_is_what_migrating_gives(tmp_path: Path) -> None:
    def schema(path: Path) -> list[tuple[object, ...]]:
        with sqlite3.connect(path) as conn:
            rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
            # Alembic's batch mode writes a rebuilt table's constraints in no fixed order.
            found = [
                (*r[:3], sorted(x.strip(" ,") for x in (r[3] or "").splitlines())) for r in rows
            ]
            found.append(
                tuple(r[0] for r in conn.execute("SELECT version_num FROM alembic_version"))
            )
            found.append((conn.execute("PRAGMA journal_mode").fetchone()[0],))
        return found

    migrated = open_database(f"sqlite:///{tmp_path / 'migrated.db'}")
    migrated.dispose()
    copy_sqlite_template(tmp_path / "copy.db")
    assert schema(tmp_path / "copy.db") == schema(tmp_path / "migrated.db")
    assert len(schema(tmp_path / "copy.db")) > 20


def test_db_url_round_trip_on_each_backend(db_url: str) -> None:
    engine = sa.create_engine(db_url)
    try:
        _metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(sa.insert(_jobs), [{"id": 7, "state": "ünïcode ✓"}])
        with engine.connect() as conn:
            assert conn.execute(sa.select(_jobs.c.state)).scalar_one() == "ünïcode ✓"
    finally:
        engine.dispose()


def test_users_settings_are_isolated() -> None:
    for name in ("TUNA_DB_URL", "TUNA_DB_USER_NAME", "TUNA_DB_USER_PASSWORD", "TUNA_DB_HOSTNAME"):
        assert name not in os.environ
    assert "TUNA_DB_NAME" not in os.environ
    data_dir = os.environ.get("TUNA_DATA_DIR")
    assert data_dir and Path(data_dir).is_dir()
    assert Path(data_dir).resolve() != (Path.home() / ".local" / "share" / "tuna").resolve()


# --- self-contained tests -------------------------------------------------------------------------


def test_opening_a_file_outside_the_repo_is_caught(tmp_path: Path) -> None:
    from tests.support import isolation

    beside = isolation.REPO.parent / "shared" / "data" / "no-such-file.txt"
    with pytest.raises(FileNotFoundError):
        beside.open()  # seen before the open fails: reading it is what counts
    (tmp_path / "ok.txt").write_text("in tmp_path")
    (isolation.REPO / "README.md").read_text()
    assert isolation.take() == [str(beside)]  # taken, so this test itself passes
    assert isolation.outside("/work/shared/data/miopen/x.txt")
    assert not isolation.outside(str(tmp_path / "ok.txt"))
    assert not isolation.outside(str(isolation.REPO / "tests" / "data" / "SOURCES.md"))
