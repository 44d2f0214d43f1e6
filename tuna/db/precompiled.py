"""Core statements compiled once into the driver's SQL, for the claim and record hot path.

``conn.execute(statement, params)`` does, on every call, what only needs doing once for a
statement that never changes: look the compiled form up in the cache by the statement's
key, build the parameters from every bind of the statement, expand the ``IN`` lists into
a new SQL string, and run each value through its type's bind processor. At one job per
claim a worker sends four statements per job, and that work was about a quarter of its
CPU (issue #30). :class:`Precompiled` does it once per dialect and ``IN``-list length:
the SQL string, the bind processors and the statement's own constant values are kept,
and each call only fills in the caller's values.

The statement then runs on the driver's cursor of the connection's current transaction,
not through ``exec_driver_sql``: SQLAlchemy's execution context and result set-up (an
execution context, a cursor result, its metadata) cost as much client CPU per statement as
PyMySQL itself (issue #30, session 10). What SQLAlchemy's execution does that matters is
kept: a driver error is raised as SQLAlchemy's ``DBAPIError`` (``from`` the driver's),
and a lost connection (the dialect's ``is_disconnect``) or an interrupted one is
invalidated, so the pool connects afresh, as :func:`tuna.db.retry.through_outages` expects.
What is not: ``before_cursor_execute`` / ``after_cursor_execute`` events and the engine's
``echo`` do not see these statements (the driver's own tracing does).

The statement is the one its module built (``cas_statement`` for every move of
``job.state``): nothing here writes SQL. Rows come back as the driver's tuples, in the
statement's column order, without result processing: the caller converts what needs it
(an enum column's string). A statement with parameters rendered into the SQL at execution
(``literal_execute``) or a Python-side default runs through ``conn.execute`` as before,
since its string or values change per execution; it returns the same :class:`Executed`.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, NoReturn

from sqlalchemy import Connection, Executable
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler

MAX_SHAPES = 64
"""IN-list lengths kept per statement and dialect; other lengths run through conn.execute."""


class Executed(NamedTuple):
    """What a statement returned: its rows (the driver's tuples; none for a write) and the
    rows it matched or changed (the driver's ``rowcount``: summed over an executemany)."""

    rows: Sequence[Sequence[Any]]
    rowcount: int


class _Shape:
    """The statement for one dialect and one length of each ``IN`` list."""

    def __init__(
        self, compiled: SQLCompiler, params: Mapping[str, Any], expanding: Sequence[str]
    ) -> None:
        dialect = compiled.dialect
        state = compiled.construct_expanded_state(dict(params))
        self.sql = state.statement
        self.positiontup = state.positiontup if compiled.positional else None
        self.expanding = expanding
        # Each bind's type processor (an enum member to its string, ...), by bind name.
        self.processors: dict[str, Callable[[Any], Any]] = {}
        for name, bind in compiled.binds.items():
            fn = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if fn is not None:
                self.processors[name] = fn
        # The statement's own values (the states a compare-and-set names, ...), processed once.
        self.constants = {
            name: self._process(name, value)
            for name, value in state.parameters.items()
            if name not in params and _base_name(name, expanding) not in params
        }

    def _process(self, name: str, value: Any) -> Any:
        fn = self.processors.get(name)
        return value if fn is None or value is None else fn(value)

    def parameters(self, params: Mapping[str, Any]) -> Any:
        out = dict(self.constants)
        for name, value in params.items():
            if name in self.expanding:
                for i, v in enumerate(value, 1):
                    out[f"{name}_{i}"] = self._process(name, v)
            else:
                out[name] = self._process(name, value)
        if self.positiontup is not None:
            return tuple(out[k] for k in self.positiontup)
        return out


def _base_name(name: str, expanding: Sequence[str]) -> str | None:
    """The expanding parameter ``name`` (``ids_3``) is one value of, if any."""
    base, _, n = name.rpartition("_")
    return base if n.isdigit() and base in expanding else None


class Precompiled:
    """``statement``, compiled once per dialect and per length of its ``expanding`` lists.

    ``expanding`` names its expanding bind parameters (``bindparam(..., expanding=True)``);
    every call must give a non-empty list for each.
    """

    def __init__(self, statement: Executable, expanding: Sequence[str] = ()) -> None:
        self.statement = statement
        self.expanding = tuple(expanding)
        # Per dialect (an engine's: one goes with its engine): its compiled form, or None
        # where conn.execute must do it, and its shapes by IN-list lengths.
        self._dialects: weakref.WeakKeyDictionary[
            Dialect, tuple[SQLCompiler | None, dict[Any, _Shape]]
        ] = weakref.WeakKeyDictionary()

    def _compile(self, dialect: Dialect) -> tuple[SQLCompiler | None, dict[Any, _Shape]]:
        found = self._dialects.get(dialect)
        if found is None:
            compiled = self.statement.compile(dialect=dialect)  # type: ignore[attr-defined]
            late = {b for b in compiled.post_compile_params if b.key not in self.expanding}
            late |= set(compiled.literal_execute_params)
            python_defaults = compiled.insert_prefetch or compiled.update_prefetch
            # A value rendered into the SQL per execution, or a default computed in Python
            # per execution: conn.execute does that.
            usable = not late and not python_defaults
            found = self._dialects[dialect] = (compiled if usable else None, {})
        return found

    def execute(
        self, conn: Connection, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> Executed:
        """Run the statement on ``conn``, in its transaction, with ``params`` (a list of
        them: ``executemany``, every set with the same ``IN``-list lengths)."""
        sets = [params] if isinstance(params, Mapping) else list(params)
        compiled, shapes = self._compile(conn.dialect)
        lengths = tuple(len(sets[0][name]) for name in self.expanding)
        shape = shapes.get(lengths)
        if shape is None and compiled is not None and len(shapes) < MAX_SHAPES:
            shape = shapes[lengths] = _Shape(compiled, sets[0], self.expanding)
        if shape is None:  # not precompiled, or an operator's long, varied IN lists
            result = conn.execute(self.statement, sets[0] if len(sets) == 1 else sets)
            rows = [tuple(r) for r in result] if result.returns_rows else []
            return Executed(rows, result.rowcount)
        if isinstance(params, Mapping):
            return _run(conn, shape.sql, shape.parameters(params), many=False)
        return _run(conn, shape.sql, [shape.parameters(p) for p in sets], many=True)


def _run(conn: Connection, sql: str, params: Any, *, many: bool) -> Executed:
    """``sql`` on a cursor of ``conn``'s driver connection; errors as SQLAlchemy raises them."""
    dbapi_conn = conn.connection.driver_connection
    cursor = dbapi_conn.cursor()  # type: ignore[union-attr]
    try:
        if many:
            cursor.executemany(sql, params)
        else:
            cursor.execute(sql, params)
        rows = cursor.fetchall() if cursor.description is not None else ()
        cursor.close()
        return Executed(rows, cursor.rowcount)
    except BaseException as e:
        with contextlib.suppress(Exception):  # a lost connection's cursor: e is what matters
            cursor.close()
        _raise_as_sqlalchemy(conn, e, sql, params, cursor)


def _raise_as_sqlalchemy(
    conn: Connection, e: BaseException, sql: str, params: Any, cursor: Any
) -> NoReturn:
    """Raise ``e`` as ``Connection.execute`` would: a driver error as ``DBAPIError`` (from
    it), the connection invalidated when it is lost or was interrupted mid-statement."""
    dialect = conn.dialect
    driver_error = dialect.loaded_dbapi.Error
    if not isinstance(e, driver_error):
        if not isinstance(e, Exception):  # KeyboardInterrupt, ...: its state is unknown
            conn.invalidate(e)
        raise e
    lost = dialect.is_disconnect(e, conn.connection.driver_connection, cursor)
    if lost:
        conn.invalidate(e)
    raise sa_exc.DBAPIError.instance(
        sql, params, e, driver_error, connection_invalidated=lost, dialect=dialect
    ) from e
