from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from tuna.db import migrate, open_database
from tuna.db.engine import make_engine
from tuna.db.models import Base
from tuna.errors import DatabaseError, SchemaOutOfDateError

REPO = Path(__file__).resolve().parents[2]


def test_schema_sql_is_current():
    assert (REPO / "schema.sql").read_text() == migrate.schema_sql(), (
        "schema.sql is stale: run `tuna db schema -o schema.sql`"
    )


def test_schema_sql_is_innodb_utf8mb4():
    ddl = migrate.schema_sql()
    tables = ddl.count("CREATE TABLE ") - 1  # less alembic_version
    assert ddl.count("ENGINE=InnoDB CHARSET=utf8mb4") == tables


def test_models_and_migrations_agree(db_url):
    engine = make_engine(db_url)
    with engine.connect() as conn:
        migrate.upgrade(conn)
        conn.commit()
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(ctx, Base.metadata)
    engine.dispose()
    assert diff == [], f"models and migrations differ; write a migration: {diff}"


def test_every_migration_goes_down_to_nothing_and_up_again(db_url):
    from alembic import command

    engine = make_engine(db_url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
        command.downgrade(migrate.alembic_config(conn), "base")
        left = set(inspect(conn).get_table_names()) - {"alembic_version"}
        assert left == set(), f"downgrade to base left tables: {sorted(left)}"
        views = inspect(conn).get_view_names()
        assert views == [], f"downgrade to base left views: {sorted(views)}"
        migrate.upgrade(conn)
        assert migrate.current_revision(conn) == migrate.head_revision()
    engine.dispose()


def test_sqlite_database_is_created_and_upgraded_on_first_use(tmp_path):
    path = tmp_path / "new" / "tuna.db"
    db = open_database(f"sqlite:///{path}")
    with db.engine.connect() as conn:
        assert migrate.current_revision(conn) == migrate.head_revision()
        assert "job" in inspect(conn).get_table_names()
    db.dispose()
    assert path.is_file()


def test_empty_mysql_database_names_the_upgrade_command(mysql_url):
    with pytest.raises(SchemaOutOfDateError, match="run `tuna db upgrade`"):
        open_database(mysql_url)


def test_mysql_at_an_older_revision_names_the_upgrade_command(mysql_url):
    engine = make_engine(mysql_url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'ffff'"))
    engine.dispose()
    with pytest.raises(SchemaOutOfDateError, match="ffff.*does not know"):
        open_database(mysql_url)


def test_mysql_at_head_opens(mysql_url):
    engine = make_engine(mysql_url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
        assert conn.execute(text("SELECT @@character_set_database")).scalar() == "utf8mb4"
    engine.dispose()
    db = open_database(mysql_url)
    with db.session() as s:
        assert s.execute(text("SELECT COUNT(*) FROM job")).scalar() == 0
    db.dispose()


def test_connection_errors_never_show_the_password(mysql_server_url):
    from sqlalchemy.engine import make_url

    url = make_url(mysql_server_url).set(password="wrong-pass-123")
    with pytest.raises(DatabaseError) as e:
        open_database(url)
    assert "wrong-pass-123" not in str(e.value)
    assert "***" in str(e.value)


def test_sqlite_immediate_transactions_take_the_write_lock(tmp_path):
    url = f"sqlite:///{tmp_path / 'lock.db'}"
    db = open_database(url)
    other = create_engine(url, connect_args={"timeout": 0.1})
    with db.session(immediate=True) as s:
        s.execute(text("SELECT 1"))
        with other.connect() as conn, pytest.raises(Exception, match="locked"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
    other.dispose()
    db.dispose()


def test_0027_turns_a_json_null_curve_into_sql_null(db):
    """Runs stored before 0027 hold an empty curve as the JSON text ``null``; the upgrade
    makes it SQL NULL (what ``intermediate IS NOT NULL`` leaves out), a curve stays."""
    from alembic import command

    from tests.searches.helpers import bench_session, new_search
    from tuna.searches import SearchDriver

    search = new_search(db, bench_session(db))
    SearchDriver(db, search).tick()
    with db.engine.begin() as conn:
        ids = [r[0] for r in conn.execute(text("SELECT id FROM search_run ORDER BY id"))]
        conn.execute(text("UPDATE search_run SET intermediate = 'null'"))  # as written before
        conn.execute(text(f"UPDATE search_run SET intermediate = '[[0, 1.5]]' WHERE id = {ids[0]}"))
        command.downgrade(migrate.alembic_config(conn), "0026")
        migrate.upgrade(conn)
        rows = conn.execute(text("SELECT id, intermediate IS NULL FROM search_run ORDER BY id"))
        assert [(i, bool(n)) for i, n in rows] == [(i, i != ids[0]) for i in ids]
