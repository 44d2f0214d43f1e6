"""Bulk writes that tolerate rows another writer inserted first.

Imports write tens of thousands of rows; a round trip or a generic parameter-escaping
pass per value dominates that cost. On MySQL the rows are rendered into multi-row
``INSERT`` statements with the driver's own string escaping (which honours the server's
``sql_mode``); only ``int``, ``float``, ``bool``, ``str`` and ``None`` are accepted, so no
value can be rendered as anything but a literal. SQLite uses ``executemany`` (its
parameter binding is in C and already fast).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from sqlalchemy import Table
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session

from tuna.db.models import Base

T = TypeVar("T")

BATCH = 2000


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def insert_missing(
    session: Session,
    model: type[Base],
    rows: Sequence[dict[str, Any]],
    *,
    progress: Callable[[str, int, int], None] | None = None,
    stage: str = "",
) -> None:
    """Insert ``rows`` into ``model``'s table, skipping any that collide with a unique key.

    The rows must all have the same keys.

    ``INSERT ... ON DUPLICATE KEY UPDATE id=id`` on MySQL (unlike INSERT IGNORE it does not
    hide truncation or other errors), ``INSERT ... ON CONFLICT DO NOTHING`` on SQLite.
    """
    if not rows:
        return
    table = cast(Table, model.__table__)
    conn = session.connection()
    if conn.dialect.name == "sqlite":
        stmt = sqlite.insert(table).on_conflict_do_nothing()

        def write(part: Sequence[dict[str, Any]]) -> None:
            conn.execute(stmt, list(part))
    else:
        dbapi: Any = conn.connection.dbapi_connection
        escape = _string_escaper(dbapi)
        columns = list(rows[0])
        pk = next(iter(table.primary_key.columns)).name
        head = f"INSERT INTO {_quote(table.name)} ({', '.join(_quote(c) for c in columns)}) VALUES "
        tail = f" ON DUPLICATE KEY UPDATE {_quote(pk)} = {_quote(pk)}"

        def write(part: Sequence[dict[str, Any]]) -> None:
            values = ",".join(
                "(" + ",".join([_literal(row[c], escape) for c in columns]) + ")" for row in part
            )
            # The raw cursor with no arguments: the driver applies no %-formatting, so a
            # '%' in a value (e.g. a driver line's -% flag) stays as it is.
            with dbapi.cursor() as cursor:
                cursor.execute(head + values + tail)

    done = 0
    for part in chunks(rows, BATCH):
        write(part)
        done += len(part)
        if progress:
            progress(stage, done, len(rows))


def upsert(
    session: Session, model: type[Base], rows: Sequence[dict[str, Any]], keys: Sequence[str]
) -> None:
    """Insert ``rows`` or overwrite the rows with the same ``keys`` (a unique key's columns).

    ``INSERT ... ON DUPLICATE KEY UPDATE c = VALUES(c)`` rendered as in
    :func:`insert_missing` on MySQL; ``INSERT ... ON CONFLICT DO UPDATE`` with
    ``executemany`` on SQLite. The rows must all have the same keys.
    """
    if not rows:
        return
    table = cast(Table, model.__table__)
    columns = list(rows[0])
    updated = [c for c in columns if c not in keys]
    conn = session.connection()
    if conn.dialect.name == "sqlite":
        lite = sqlite.insert(table)
        stmt = lite.on_conflict_do_update(
            index_elements=list(keys), set_={c: lite.excluded[c] for c in updated}
        )
        for part in chunks(rows, BATCH):
            conn.execute(stmt, list(part))
        return
    dbapi: Any = conn.connection.dbapi_connection
    escape = _string_escaper(dbapi)
    head = f"INSERT INTO {_quote(table.name)} ({', '.join(_quote(c) for c in columns)}) VALUES "
    tail = " ON DUPLICATE KEY UPDATE " + ", ".join(
        f"{_quote(c)} = VALUES({_quote(c)})" for c in updated
    )
    with dbapi.cursor() as cursor:
        for part in chunks(rows, BATCH):
            values = ",".join(
                "(" + ",".join([_literal(row[c], escape) for c in columns]) + ")" for row in part
            )
            cursor.execute(head + values + tail)


def _string_escaper(dbapi: Any) -> Callable[[str], str]:
    """PyMySQL's escaping for the connection's current sql_mode (as its own ``escape`` does)."""
    from pymysql import converters  # here: a worker on SQLite never loads PyMySQL
    from pymysql.constants import SERVER_STATUS

    if dbapi.server_status & SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES:
        return lambda s: s.replace("'", "''")
    return converters.escape_string


def _quote(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise ValueError(f"unexpected SQL identifier {name!r}")
    return f"`{name}`"


def _literal(value: Any, escape: Callable[[str], str]) -> str:
    # Ordered by frequency in catalogue rows (ints, then NULLs, then strings): this runs
    # once per value of a bulk insert.
    kind = value.__class__
    if kind is int:
        return str(value)
    if value is None:
        return "NULL"
    if kind is str:
        return "'" + escape(value) + "'"
    if kind is bool:
        return "1" if value else "0"
    if kind is float:
        return repr(value)
    raise TypeError(f"cannot write a {kind.__name__} in a bulk insert")
