"""Schema revisions through Alembic: upgrade, current revision, checks, generated DDL.

The migrations live in ``migrations/`` at the repo root (inside an installed wheel, in
``tuna/_migrations``). SQLite databases are upgraded on first use; a MySQL database is
only ever upgraded by ``tuna db upgrade``, so an operator decides when.
"""

from __future__ import annotations

import io
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect

from tuna.errors import DatabaseError, SchemaOutOfDateError

_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def migrations_dir() -> Path:
    for candidate in (_PACKAGE_DIR / "_migrations", _PACKAGE_DIR.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise DatabaseError("Tuna's migrations are missing from this installation; reinstall Tuna")


def alembic_config(connection: Connection | None = None, out: io.StringIO | None = None) -> Config:
    cfg = Config(output_buffer=out)
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def upgrade(connection: Connection, revision: str = "head") -> None:
    command.upgrade(alembic_config(connection), revision)


def is_empty(connection: Connection) -> bool:
    return not inspect(connection).get_table_names()


def check_revision(connection: Connection, where: str) -> None:
    """Raise :class:`SchemaOutOfDateError` unless the database is at the head revision."""
    current = current_revision(connection)
    head = head_revision()
    if current == head:
        return
    if current is None:
        raise SchemaOutOfDateError(
            f"{where} has no Tuna schema yet; run `tuna db upgrade` to create it"
        )
    known = {s.revision for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()}
    if current not in known:
        raise SchemaOutOfDateError(
            f"{where} is at schema revision {current}, which this Tuna does not know "
            f"(newer Tuna?); upgrade Tuna to match the database"
        )
    raise SchemaOutOfDateError(
        f"{where} is at schema revision {current}, this Tuna needs {head}; "
        "run `tuna db upgrade` to migrate it"
    )


def schema_sql() -> str:
    """The MySQL DDL of the head revision, as the migrations produce it (offline mode)."""
    out = io.StringIO()
    cfg = alembic_config(out=out)
    cfg.attributes["offline_dialect"] = "mysql"
    command.upgrade(cfg, "head", sql=True)
    return out.getvalue()
