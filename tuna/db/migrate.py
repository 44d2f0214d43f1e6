"""Schema revisions through Alembic: upgrade, current revision, checks, generated DDL.

The migrations live in ``migrations/`` at the repo root (inside an installed wheel, in
``tuna/_migrations``). SQLite databases are upgraded on first use; a MySQL database is
only ever upgraded by ``tuna db upgrade``, so an operator decides when.
"""

from __future__ import annotations

import functools
import io
import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect
from sqlalchemy import exc as sa_exc

from tuna.errors import DatabaseError, SchemaOutOfDateError

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic is imported where it is used: opening a database at the head revision (every
# worker start) needs only :func:`is_at_head`, a query and a look at the file names.

_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def migrations_dir() -> Path:
    for candidate in (_PACKAGE_DIR / "_migrations", _PACKAGE_DIR.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise DatabaseError("Tuna's migrations are missing from this installation; reinstall Tuna")


def alembic_config(connection: Connection | None = None, out: io.StringIO | None = None) -> Config:
    from alembic.config import Config

    cfg = Config(output_buffer=out)
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def current_revision(connection: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def upgrade(connection: Connection, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(connection), revision)


_REVISION = re.compile(r"^revision\s*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)
_DOWN = re.compile(r"^down_revision\s*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)


@functools.cache
def _quick_head() -> str | None:
    """The head revision read from the migration files' ``revision`` / ``down_revision``
    lines, without Alembic; None where that is not one clear answer (Alembic decides)."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for path in (migrations_dir() / "versions").glob("*.py"):
        text = path.read_text()
        revisions.update(_REVISION.findall(text))
        downs.update(_DOWN.findall(text))
    heads = revisions - downs
    return heads.pop() if len(heads) == 1 else None


def is_at_head(connection: Connection) -> bool:
    """True when the database's ``alembic_version`` is the head revision: the quick check
    every open makes; False means "ask Alembic" (it may still be at the head)."""
    head = _quick_head()
    if head is None:
        return False
    try:
        rows = connection.exec_driver_sql("SELECT version_num FROM alembic_version").all()
    except sa_exc.DBAPIError:
        connection.rollback()
        return False
    return [r[0] for r in rows] == [head]


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
    from alembic.script import ScriptDirectory

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
    from alembic import command

    out = io.StringIO()
    cfg = alembic_config(out=out)
    cfg.attributes["offline_dialect"] = "mysql"
    command.upgrade(cfg, "head", sql=True)
    return out.getvalue()
