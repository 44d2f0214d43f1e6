"""Alembic environment for Tuna.

Tuna calls Alembic programmatically (``tuna db upgrade``) and passes its connection in
``config.attributes["connection"]``; run by hand (``alembic -c ...``) it falls back to the
database from Tuna's settings.
"""

from __future__ import annotations

from alembic import context

from tuna.db.models import Base

config = context.config
target_metadata = Base.metadata


def run_offline() -> None:
    dialect = config.attributes.get("offline_dialect", "mysql")
    context.configure(
        dialect_name=dialect,
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        from tuna.config import load_settings
        from tuna.db.engine import make_engine

        engine = make_engine(load_settings().db_url)
        with engine.connect() as conn:
            _run(conn)
        engine.dispose()
    else:
        _run(connection)


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=config.attributes.get(
            "render_as_batch", connection.dialect.name == "sqlite"
        ),
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
