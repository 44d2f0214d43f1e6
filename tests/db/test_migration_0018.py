"""Migration 0018 (a session's default strategy), on both databases: the sessions there
keep their rows and have none; a downgrade drops the column."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect

from tuna.db import Database, migrate
from tuna.sessions import SessionSpec, create_session, get_session


def _columns(conn) -> set[str]:
    return {c["name"] for c in inspect(conn).get_columns("session")}


def test_upgrade_from_0017_gives_the_sessions_there_no_default_strategy(db: Database) -> None:
    spec = SessionSpec(arch="cpu", num_cu=1, backend="cpuconv", label="before")
    old = create_session(db, spec).id
    with db.engine.connect() as conn:
        command.downgrade(migrate.alembic_config(conn), "0017")
        conn.commit()
        assert "default_strategy" not in _columns(conn)
        migrate.upgrade(conn)
        conn.commit()
        assert "default_strategy" in _columns(conn)
    row = get_session(db, old)
    assert (row.label, row.default_strategy) == ("before", {})
    default = {"strategy": "random", "budget": 16, "patience": None, "seed": 0, "round_size": 8,
               "transfer": False}  # fmt: skip
    new = create_session(db, SessionSpec(**{**spec.__dict__, "default_strategy": default}))
    assert get_session(db, new.id).default_strategy == default
