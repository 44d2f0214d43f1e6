"""The database clock: lease expiries and phase timestamps never come from a worker's clock.

Workers run on many hosts whose clocks drift; the database server is the one clock they
share. ``db_now(seconds)`` renders as ``NOW(6) + INTERVAL s SECOND`` on MySQL / MariaDB and
as ``strftime('%Y-%m-%d %H:%M:%f', 'now', 's seconds')`` on SQLite, whose DATETIME values
are text that compares in time order as long as every value is written in this format.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Float, literal
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from tuna.db.tables import Timestamp


class db_now(FunctionElement[dt.datetime]):  # noqa: N801 - reads as a SQL function
    """The database's current time plus ``seconds`` (which may be negative or fractional)."""

    type = Timestamp
    name = "db_now"
    inherit_cache = True

    def __init__(self, seconds: float = 0.0) -> None:
        super().__init__(literal(float(seconds), Float()))


@compiles(db_now, "mysql")
@compiles(db_now, "mariadb")
def _mysql_now(element: db_now, compiler: Any, **kw: Any) -> str:
    return f"(NOW(6) + INTERVAL {compiler.process(element.clauses, **kw)} SECOND)"


@compiles(db_now, "sqlite")
def _sqlite_now(element: db_now, compiler: Any, **kw: Any) -> str:
    offset = compiler.process(element.clauses, **kw)
    return f"strftime('%Y-%m-%d %H:%M:%f', 'now', ({offset}) || ' seconds')"
