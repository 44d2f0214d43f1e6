"""Where an export's rows come from: a session's or a golden version's results, streamed.

Rows are read as plain tuples in batches (a server-side cursor on MySQL), grouped by
config; no ORM object is built per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any

from pymysql.cursors import SSCursor
from sqlalchemy import ColumnElement, Select, func, literal, null, select, text
from sqlalchemy.orm import Session, aliased

from tuna.catalog.records import conv_problem
from tuna.db.bulk import chunks
from tuna.db.models import (
    ConfigTag,
    ConvConfig,
    FindDb,
    Golden,
    GoldenVersion,
    PerfDb,
    Tensor,
    TuningSession,
)
from tuna.errors import NotFoundError, TunaError
from tuna.problems.conv import ConvProblem
from tuna.results.formats import db_arch
from tuna.sessions import session_info, session_row
from tuna.sessions.history import check_not_retired

_YIELD = 20_000
_NO_LINKS = (None, None, None)


@dataclass(frozen=True)
class Source:
    """A session, or a golden version of one arch and CU count, and the sessions of its rows."""

    label: str
    arch: str
    num_cu: int
    session: int | None
    golden: GoldenVersion | None
    sessions: dict[int, TuningSession]
    # A golden version's rows of these (retired) sessions are left out of the export.
    left_out: frozenset[int] = frozenset()


def _arch_matches(given: str, stored: str) -> bool:
    return given == stored or db_arch(given) == db_arch(stored)


def resolve_source(
    s: Session,
    session: int | None,
    golden_v: int | None,
    arch: str | None,
    num_cu: int | None,
    *,
    include_retired: bool = False,
) -> Source:
    """The session, or the golden version (which must hold ``arch`` and ``num_cu`` if given).

    A golden version is immutable, but a session retired after it was made leaves every
    later export (``tuna session retire``): its rows are left out (``Source.left_out``)
    unless ``include_retired``."""
    if (session is None) == (golden_v is None):
        raise TunaError("give exactly one of --session S or --golden_v V")
    if session is not None:
        row = session_row(s, session)
        check_not_retired(session_info(row), "export")
        if arch is not None and not _arch_matches(arch, row.arch):
            raise TunaError(f"-a {arch}: session {row.id} tuned {row.arch}")
        if num_cu is not None and num_cu != row.num_cu:
            raise TunaError(f"-n {num_cu}: session {row.id} tuned {row.num_cu} CUs")
        return Source(f"session {row.id}", row.arch, row.num_cu, row.id, None, {row.id: row})
    golden = s.get(GoldenVersion, golden_v)
    if golden is None:
        raise NotFoundError(f"golden version {golden_v} does not exist; update_golden creates one")
    # A golden version holds one arch: -a/-n are checks, not needed to pick it.
    if (arch is not None and not _arch_matches(arch, golden.arch)) or (
        num_cu is not None and num_cu != golden.num_cu
    ):
        asked = " ".join(
            [*([arch] if arch is not None else []), *([f"{num_cu} CUs"] if num_cu else [])]
        )
        raise TunaError(
            f"golden version {golden.version} holds {golden.arch} {golden.num_cu} CUs, not {asked}"
        )
    ids = list(
        s.scalars(select(Golden.session).where(Golden.golden_v == golden.version).distinct())
    )
    sessions = {r.id: r for r in s.scalars(select(TuningSession).where(TuningSession.id.in_(ids)))}
    retired = frozenset(
        sid for sid, r in sessions.items() if r.retired is not None and not include_retired
    )
    sessions = {sid: r for sid, r in sessions.items() if sid not in retired}
    return Source(
        f"golden version {golden.version}",
        golden.arch,
        golden.num_cu,
        None,
        golden,
        sessions,
        retired,
    )


def left_out_rows(s: Session, source: Source, tag: str | None) -> int:
    """How many of a golden version's rows its retired sessions' rows are (left out)."""
    if source.golden is None or not source.left_out:
        return 0
    q = select(func.count()).where(
        Golden.golden_v == source.golden.version,
        Golden.session.in_(sorted(source.left_out)),
        *tagged(Golden.config, tag),
    )
    return int(s.scalar(q) or 0)


def tagged(column: Any, tag: str | None) -> list[ColumnElement[bool]]:
    if tag is None:
        return []
    return [column.in_(select(ConfigTag.config).where(ConfigTag.tag == tag))]


def find_source(q: Select[Any], source: Source, tag: str | None) -> Select[Any]:
    """``q`` restricted to the source's find rows."""
    model: Any = FindDb if source.golden is None else Golden
    if source.golden is None:
        q = q.where(FindDb.session == source.session)
    else:
        q = q.where(Golden.golden_v == source.golden.version, *_not_left_out(source))
    return q.where(*tagged(model.config, tag))


def _not_left_out(source: Source) -> list[ColumnElement[bool]]:
    # One plain comparison per retired session (a handful): stream_rows binds plain
    # parameters only, not an expanding IN list.
    return [Golden.session != sid for sid in sorted(source.left_out)]


def _link_columns(source: Source) -> list[Any]:
    """The job of a find row and, for a golden row, its id (its frozen kernels' key); then
    a session's row's import order (None for a golden row)."""
    if source.golden is None:
        return [FindDb.job, null(), FindDb.import_order]
    return [Golden.job, Golden.id, null()]


_FIELD, _ENTRY = "\x1f", "\x1e"  # ASCII unit and record separators
_GROUP_CONCAT_MAX = 1 << 30

FindRow = tuple[int, int, float, int, str, Any, Any, Any]
"""(session, solver id, time, workspace, algorithm, job, golden row, import order) of one
find row.

With links, ``job`` is the job that produced the row, ``golden row`` the golden row's id
(None for a session's rows) and ``import order`` a session's row's place in the db record
it was imported from (None if a job wrote it, and for a golden row); without, all three
are None.
"""


def find_groups(
    s: Session,
    source: Source,
    tag: str | None,
    links: bool,
    unreadable: Callable[[str, str], None],
) -> Iterator[tuple[int, str, list[FindRow]]]:
    """(config, find-db key, its rows) for each config of the source's find rows, by config.

    On MySQL the server groups each config's rows into one string (GROUP_CONCAT): a third
    of the rows to read, which is where most of the reading time goes with a pure-Python
    driver. A DOUBLE becomes its shortest round-trip decimal form there (checked on MariaDB
    10.11), so times come back exactly. SQLite reads the rows themselves.
    """
    model: Any = FindDb if source.golden is None else Golden
    link_cols = _link_columns(source) if links else []
    if s.get_bind().dialect.name == "sqlite":
        cols: list[Any] = [model.config, ConvConfig.fdb_key, model.session, model.solver,
                           model.time_ms, model.workspace, model.algorithm, *link_cols]  # fmt: skip
        q = select(*cols).join(ConvConfig, ConvConfig.id == model.config)
        q = find_source(q, source, tag).order_by(model.config, model.solver)
        tail = () if links else _NO_LINKS
        for config, group in groupby(stream_rows(s, q), key=itemgetter(0)):
            rows = list(group)
            yield config, rows[0][1], [(*r[2:], *tail) for r in rows]
        return
    s.execute(text(f"SET SESSION group_concat_max_len = {_GROUP_CONCAT_MAX}"))
    fields: list[Any] = [model.session, model.solver, model.time_ms, model.workspace]
    fields += [func.ifnull(c, "") for c in link_cols]
    fields.append(model.algorithm)  # last: it is the one free-text field
    entry = func.concat_ws(literal(_FIELD), *fields)
    grouped = func.group_concat(entry.op("SEPARATOR")(literal(_ENTRY)))
    # MIN: one key per config, and valid under ONLY_FULL_GROUP_BY (MySQL 8's default).
    cols = [model.config, func.min(ConvConfig.fdb_key), grouped]
    q = select(*cols).join(ConvConfig, ConvConfig.id == model.config)
    q = find_source(q, source, tag).group_by(model.config).order_by(model.config)
    n = len(fields)
    for config, key, blob in stream_rows(s, q):
        found: list[FindRow] = []
        for text_row in blob.split(_ENTRY):
            parts = text_row.split(_FIELD, n - 1)
            if len(parts) != n:
                unreadable(key, text_row)
                continue
            job, golden, order = (
                (_int_or_none(parts[4]), _int_or_none(parts[5]), _int_or_none(parts[6]))
                if links
                else _NO_LINKS
            )
            found.append(
                (int(parts[0]), int(parts[1]), float(parts[2]), int(parts[3]), parts[-1], job,
                 golden, order)
            )  # fmt: skip
        yield config, key, found


def _int_or_none(text: str) -> int | None:
    return int(text) if text else None


def find_config_ids(source: Source, tag: str | None) -> Select[Any]:
    model: Any = FindDb if source.golden is None else Golden
    return find_source(select(model.config), source, tag)


def perf_rows(source: Source, tag: str | None) -> Select[Any]:
    """(config, session, solver id, params) ordered by config."""
    model: Any = PerfDb if source.golden is None else Golden
    cols: list[Any] = [model.config, model.session, model.solver, model.params]
    q = select(*cols)
    if source.golden is None:
        q = q.where(PerfDb.session == source.session)
    else:
        q = q.where(
            Golden.golden_v == source.golden.version,
            Golden.params.is_not(None),
            Golden.params != "",
            *_not_left_out(source),
        )
    return q.where(*tagged(model.config, tag)).order_by(model.config, model.solver)


def stream_rows(s: Session, query: Select[Any]) -> Iterator[tuple[Any, ...]]:
    """The rows of ``query`` as plain tuples, fetched in batches (a server-side cursor on MySQL).

    Read through the session's DBAPI connection: SQLAlchemy's per-row result processing
    would cost a third of an export's reading time, and these queries read only integers,
    floats and strings, which the drivers return as they are. Their parameters are plain
    integers and strings, bound by the driver.
    """
    conn = s.connection()
    compiled = query.compile(dialect=conn.dialect)
    params: Any = compiled.params
    if compiled.positional:
        params = tuple(params[name] for name in compiled.positiontup or ())
    dbapi: Any = conn.connection.dbapi_connection
    cursor = dbapi.cursor() if conn.dialect.name == "sqlite" else dbapi.cursor(SSCursor)
    try:
        cursor.execute(compiled.string, params)
        while batch := cursor.fetchmany(_YIELD):
            yield from batch
    finally:
        cursor.close()


def config_keys(s: Session, config_ids: Select[Any]) -> dict[int, tuple[str, str]]:
    """config id -> (find-db key, mode) for the configs ``config_ids`` selects."""
    cols: list[Any] = [ConvConfig.id, ConvConfig.fdb_key, ConvConfig.mode]
    q = select(*cols).where(ConvConfig.id.in_(config_ids))
    return {cid: (key, mode) for cid, key, mode in stream_rows(s, q)}


def trans_config_ids(s: Session, config_ids: Select[Any]) -> list[int]:
    """The configs ``config_ids`` selects whose key is not the problem itself (mode trans)."""
    q = select(ConvConfig.id).where(ConvConfig.mode != "conv", ConvConfig.id.in_(config_ids))
    return list(s.scalars(q))


def config_problems(s: Session, ids: list[int]) -> dict[int, ConvProblem]:
    """The problems of configs whose key is not the problem itself (transposed convolutions)."""
    found: dict[int, ConvProblem] = {}
    x, w = aliased(Tensor), aliased(Tensor)
    for part in chunks(ids, 500):
        rows = s.execute(
            select(ConvConfig, x, w)
            .join(x, x.id == ConvConfig.input_tensor)
            .join(w, w.id == ConvConfig.weight_tensor)
            .where(ConvConfig.id.in_(part))
        )
        for cfg, xt, wt in rows:
            found[cfg.id] = conv_problem(cfg, xt, wt)
    return found


def row_config_ids(query: Select[Any]) -> Select[Any]:
    """The config column of a row query, as a subquery for ``IN``."""
    return select(query.subquery().c[0]).order_by(None)
