"""Checks of the test infrastructure itself: the fixtures and the MySQL-tier server."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

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
