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
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sqlalchemy import Table
from sqlalchemy.dialects import sqlite

if TYPE_CHECKING:  # a worker creating a session's solvers needs neither at run time
    from sqlalchemy.orm import Session

    from tuna.db.models import Base

T = TypeVar("T")

BATCH = 5000
STATEMENT_BYTES = 4 << 20
"""The most characters of rows in one statement (MySQL's max_allowed_packet is 16 MiB by
default, and 4 MiB on old servers: the head and tail come on top)."""


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


Columns = dict[str, Sequence[Any]]
"""Rows given column by column: each column's name and its values, all of one length."""


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
    if rows:
        insert_missing_columns(session, model, _columns_of(rows), progress=progress, stage=stage)


def insert_missing_columns(
    session: Session,
    model: type[Base],
    columns: Columns,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    stage: str = "",
) -> None:
    """:func:`insert_missing` of rows given column by column (no dict per row)."""
    count = _count(columns)
    if not count:
        return
    table = cast(Table, model.__table__)
    conn = session.connection()
    if conn.dialect.name == "sqlite":
        stmt = sqlite.insert(table).on_conflict_do_nothing()
        rows = _rows_of(columns)
        for start in range(0, count, BATCH):
            conn.execute(stmt, rows[start : start + BATCH])
            if progress:
                progress(stage, min(start + BATCH, count), count)
        return
    pk = next(iter(table.primary_key.columns)).name
    tail = f" ON DUPLICATE KEY UPDATE {_quote(pk)} = {_quote(pk)}"
    _write_mysql(conn, table, columns, tail, progress, stage)


def upsert(
    session: Session, model: type[Base], rows: Sequence[dict[str, Any]], keys: Sequence[str]
) -> None:
    """Insert ``rows`` or overwrite the rows with the same ``keys`` (a unique key's columns).

    ``INSERT ... ON DUPLICATE KEY UPDATE c = VALUES(c)`` rendered as in
    :func:`insert_missing` on MySQL; ``INSERT ... ON CONFLICT DO UPDATE`` with
    ``executemany`` on SQLite. The rows must all have the same keys.
    """
    if rows:
        upsert_columns(session, model, _columns_of(rows), keys)


def upsert_columns(
    session: Session, model: type[Base], columns: Columns, keys: Sequence[str]
) -> None:
    """:func:`upsert` of rows given column by column (no dict per row)."""
    count = _count(columns)
    if not count:
        return
    table = cast(Table, model.__table__)
    updated = [c for c in columns if c not in keys]
    conn = session.connection()
    if conn.dialect.name == "sqlite":
        lite = sqlite.insert(table)
        stmt = lite.on_conflict_do_update(
            index_elements=list(keys), set_={c: lite.excluded[c] for c in updated}
        )
        rows = _rows_of(columns)
        for start in range(0, count, BATCH):
            conn.execute(stmt, rows[start : start + BATCH])
        return
    tail = " ON DUPLICATE KEY UPDATE " + ", ".join(
        f"{_quote(c)} = VALUES({_quote(c)})" for c in updated
    )
    _write_mysql(conn, table, columns, tail, None, "")


def _count(columns: Columns) -> int:
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns of different lengths: {sorted(lengths)}")
    return lengths.pop() if lengths else 0


def _columns_of(rows: Sequence[dict[str, Any]]) -> Columns:
    return {c: [row[c] for row in rows] for c in rows[0]}


def _rows_of(columns: Columns) -> list[dict[str, Any]]:
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def _write_mysql(
    conn: Any,
    table: Table,
    columns: Columns,
    tail: str,
    progress: Callable[[str, int, int], None] | None,
    stage: str,
) -> None:
    """Multi-row INSERTs of up to ``BATCH`` rows, each value rendered as a literal, column by
    column (a type check per column, not per value).

    With PyMySQL the next statement is rendered while the server runs the one sent before
    (the client's and the server's work overlap: on one machine they use two cores); with
    another driver the statements go one after the other."""
    dbapi: Any = conn.connection.dbapi_connection
    escape = _string_escaper(dbapi)
    head = f"INSERT INTO {_quote(table.name)} ({', '.join(_quote(c) for c in columns)}) VALUES "
    count = _count(columns)

    def statements() -> Iterator[tuple[int, str]]:
        values = list(columns.values())
        for start in range(0, count, BATCH):
            part = [_column_literals(v[start : start + BATCH], escape) for v in values]
            rows = ["(" + ",".join(row) + ")" for row in zip(*part, strict=True)]
            done = start
            for group in _by_size(rows):
                done += len(group)
                yield done, head + ",".join(group) + tail

    send, receive = _pipeline(dbapi)
    pending = False
    try:
        for done, sql in statements():  # rendered while the server runs the one before
            if pending:
                pending = False
                receive()
            send(sql)
            pending = True
            if progress:
                progress(stage, done, count)
    finally:
        if pending:  # an error while rendering: read the answer so the connection stays usable
            receive()


def _by_size(rows: list[str]) -> Iterator[list[str]]:
    """``rows`` in groups of at most ``STATEMENT_BYTES`` characters (one row at least), so a
    statement of long values stays far below the server's ``max_allowed_packet``."""
    if sum(map(len, rows)) <= STATEMENT_BYTES:
        yield rows
        return
    group: list[str] = []
    size = 0
    for row in rows:
        if group and size + len(row) > STATEMENT_BYTES:
            yield group
            group, size = [], 0
        group.append(row)
        size += len(row) + 1
    if group:
        yield group


def _pipeline(dbapi: Any) -> tuple[Callable[[str], None], Callable[[], None]]:
    """(send a statement, read its answer) on the raw connection.

    PyMySQL's ``query`` is exactly these two steps; done apart, the client can work while the
    server runs the statement. The statement goes with no arguments, so the driver applies no
    %-formatting and a '%' in a value (e.g. a driver line's -% flag) stays as it is."""
    from pymysql.connections import Connection  # here: a worker on SQLite never loads PyMySQL
    from pymysql.constants import COMMAND

    if isinstance(dbapi, Connection):
        encoding = dbapi.encoding

        def send(sql: str) -> None:
            dbapi._execute_command(COMMAND.COM_QUERY, sql.encode(encoding))

        def receive() -> None:
            dbapi._affected_rows = dbapi._read_query_result()

        return send, receive
    cursor = dbapi.cursor()
    return cursor.execute, lambda: None


def _column_literals(values: Sequence[Any], escape: Callable[[str], str]) -> Sequence[str]:
    """The SQL literal of every value of a column: one pass in C for a column of one type
    (ints, floats, NULLs; strings escaped once per distinct value), else value by value."""
    kinds = set(map(type, values))
    if kinds == {int}:
        return list(map(str, values))
    if kinds == {float}:
        return list(map(repr, values))
    if kinds == {type(None)}:
        return ["NULL"] * len(values)
    if kinds <= {str, type(None)}:
        distinct = set(values)
        if len(distinct) * 4 <= len(values):  # repeated strings (layouts, algorithms)
            quoted = {v: _literal(v, escape) for v in distinct}
            return [quoted[v] for v in values]
        if kinds == {str}:
            return ["'" + v + "'" for v in map(escape, values)]
    return [_literal(v, escape) for v in values]


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
