"""Result rows a phase writes, inside the fenced transaction that completes the job.

* compile: kernels go to ``kernel_cache``, content-addressed by ``identity`` (identical
  binaries are stored once: insert the missing ones, reuse the rest) and are linked from
  the job (``job_kernel``, replaced on every compile);
* evaluate: ``perf_db`` and ``find_db`` rows are upserted, keyed (session, config, solver),
  with the id of the job that produced them; the job's links to the kernels of the chosen
  solution (``EvalOutcome.kernels``, one or several) are marked ``job_kernel.chosen``.
  **The stored winner is the fastest**: a find row is replaced only by a result as fast or
  faster (:func:`_best_upsert`, one conditional statement, so concurrent writers of a key
  cannot undo each other), and the perf row follows the find row (written where this job's
  result is the one stored). Two searches of one (config, solver), or a job evaluated again,
  that end in any order leave the best valid time any of them measured.

Everything is written in a few multi-row statements per batch, never a round trip per row,
on the Core connection of the recording transaction, through statements built once per
process (an ``executemany`` of one prebuilt INSERT, which SQLAlchemy sends as multi-row
VALUES).
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    Executable,
    Integer,
    Table,
    bindparam,
    case,
    delete,
    insert,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects import mysql, sqlite

from tuna.backends.base import CompileOutcome, EvalOutcome, KernelBinary
from tuna.db import tables
from tuna.db.blobs import pack_kernel
from tuna.db.precompiled import Precompiled
from tuna.jobs.values import ClaimedJob

# The tables' columns, named as the ORM classes: statements here are Core (tuna.db.tables),
# so a worker never imports the ORM.
FindDb = tables.find_db.c
JobKernel = tables.job_kernel.c
KernelCache = tables.kernel_cache.c
PerfDb = tables.perf_db.c

log = logging.getLogger(__name__)

_ROWS_PER_STATEMENT = 200


def kernel_identity(kernel: KernelBinary) -> str:
    """The content address of a kernel: sha256 over its name, args and bytes."""
    h = hashlib.sha256()
    for part in (kernel.name.encode(), kernel.args.encode(), kernel.binary):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


def _is_mysql(conn: Connection) -> bool:
    return conn.dialect.name in ("mysql", "mariadb")


def _chunks(rows: Sequence[Any]) -> list[Sequence[Any]]:
    return [rows[i : i + _ROWS_PER_STATEMENT] for i in range(0, len(rows), _ROWS_PER_STATEMENT)]


@functools.lru_cache(maxsize=32)
def _upsert_statement(
    mysql_dialect: bool, table: Table, keys: tuple[str, ...], columns: tuple[str, ...]
) -> Executable:
    """INSERT of ``keys`` + ``columns``; where ``keys`` exist, the ``columns`` given win.
    With no ``columns``, an existing row is kept as it is (``keys`` a unique key)."""
    if mysql_dialect:
        ins = mysql.insert(table)
        # MySQL needs something to update: a no-op assignment keeps the row.
        update_ = {c: ins.inserted[c] for c in columns or keys[:1]}
        return ins.on_duplicate_key_update(update_)
    lite = sqlite.insert(table)
    if not columns:
        return lite.on_conflict_do_nothing(index_elements=list(keys))
    return lite.on_conflict_do_update(
        index_elements=list(keys), set_={c: lite.excluded[c] for c in columns}
    )


def _upsert(
    conn: Connection, table: Table, rows: list[dict[str, Any]], keys: Sequence[str]
) -> None:
    """Insert ``rows`` or, where their ``keys`` exist, overwrite the other columns given."""
    if not rows:
        return
    columns = tuple(c for c in rows[0] if c not in keys)
    stmt = _upsert_statement(_is_mysql(conn), table, tuple(keys), columns)
    for chunk in _chunks(rows):
        conn.execute(stmt, list(chunk))


def _insert_missing(conn: Connection, table: Table, rows: list[dict[str, Any]], key: str) -> None:
    """Insert ``rows``; a row whose unique ``key`` exists already (a racing writer) is kept."""
    if not rows:
        return
    stmt = _upsert_statement(_is_mysql(conn), table, (key,), ())
    for chunk in _chunks(rows):
        conn.execute(stmt, list(chunk))


def store_kernels(conn: Connection, kernels: Sequence[KernelBinary]) -> dict[str, int]:
    """Store ``kernels`` once each; returns identity -> ``kernel_cache.id`` for all of them."""
    wanted = {kernel_identity(k): k for k in kernels}
    if not wanted:
        return {}
    ids = _kernel_ids(conn, list(wanted))
    missing = [ident for ident in wanted if ident not in ids]
    if missing:
        rows = []
        for ident in missing:
            k = wanted[ident]
            blob, size = pack_kernel(k.binary)
            rows.append(
                {
                    "identity": ident,
                    "kernel_name": k.name,
                    "kernel_args": k.args,
                    "kernel_hash": hashlib.md5(k.binary).hexdigest(),
                    "uncompressed_size": size,
                    "blob": blob,
                }
            )
        _insert_missing(conn, tables.kernel_cache, rows, "identity")
        ids.update(_kernel_ids(conn, missing))
    return ids


@functools.cache
def _kernel_ids_query() -> Precompiled:
    return Precompiled(
        select(KernelCache.identity, KernelCache.id).where(
            KernelCache.identity.in_(bindparam("idents", expanding=True))
        ),
        expanding=["idents"],
    )


def _kernel_ids(conn: Connection, identities: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for chunk in _chunks(identities):
        rows = _kernel_ids_query().execute(conn, {"idents": list(chunk)}).rows
        found.update({ident: kid for ident, kid in rows})
    return found


@functools.cache
def _unlink_jobs() -> Precompiled:
    return Precompiled(
        delete(tables.job_kernel).where(JobKernel.job.in_(bindparam("jobs", expanding=True))),
        expanding=["jobs"],
    )


@functools.cache
def _link_kernel() -> Precompiled:
    """One job -> kernel link (an executemany of it is one multi-row INSERT on MySQL)."""
    return Precompiled(
        insert(tables.job_kernel).values(
            job=bindparam("job", type_=Integer),
            kernel=bindparam("kernel", type_=Integer),
            chosen=False,
        )
    )


def write_compile_results(
    conn: Connection, done: Sequence[tuple[ClaimedJob, CompileOutcome]]
) -> None:
    """Kernels of completed compile phases, linked from their jobs (old links replaced).

    Its statements are precompiled (:mod:`tuna.db.precompiled`): at one job per claim a
    compile worker runs them for every job."""
    if not done:
        return
    ids = store_kernels(conn, [k for _, o in done for k in o.kernels])
    # A job's first claim has attempt 1: only a job claimed before can have old links.
    again = [job.id for job, _ in done if job.attempt > 1]
    for chunk in _chunks(again):
        _unlink_jobs().execute(conn, {"jobs": list(chunk)})
    links = {(job.id, ids[kernel_identity(k)]) for job, outcome in done for k in outcome.kernels}
    rows = [{"job": j, "kernel": k} for j, k in sorted(links)]
    for chunk in _chunks(rows):
        _link_kernel().execute(conn, list(chunk))


def choose_kernels(
    conn: Connection, named: Sequence[tuple[int, Sequence[KernelBinary]]]
) -> dict[int, list[int]]:
    """Mark each evaluated job's chosen kernels; returns job id -> their ``kernel_cache`` ids.

    ``named`` pairs a job with the kernels its outcome says the chosen solution runs (all of
    them: a solution can run several). They are found by identity among the job's own
    compile links (``job_kernel``), so a kernel the job did not compile is never chosen.
    Their links get ``chosen`` set and the job's other links get it cleared (a
    re-evaluation may choose differently). A job whose outcome names no kernel, or one it
    did not compile (logged), has none chosen: the kernel db then takes all of its kernels.

    The links are read first and written by primary key, only where ``chosen`` changes.
    """
    wanted = {job: {kernel_identity(k) for k in kernels} for job, kernels in named}
    # job -> (link id, kernel identity, kernel id, chosen now) of its named or chosen links
    links: dict[int, list[tuple[int, str, int, bool]]] = defaultdict(list)
    for chunk in _chunks(sorted(wanted)):
        idents = sorted({i for job in chunk for i in wanted[job]})
        q = (
            select(
                JobKernel.id, JobKernel.job, KernelCache.identity, KernelCache.id, JobKernel.chosen
            )
            .join(tables.kernel_cache, KernelCache.id == JobKernel.kernel)
            .where(
                JobKernel.job.in_(chunk),
                or_(JobKernel.chosen, KernelCache.identity.in_(idents)),
            )
        )
        for link, job, identity, kid, was in conn.execute(q):
            links[job].append((link, identity, kid, bool(was)))
    chosen: dict[int, list[int]] = {}
    to_set: list[int] = []
    to_clear: list[int] = []
    for job, identities in wanted.items():
        found = {ident: link for link, ident, _kid, _was in links[job] if ident in identities}
        missing = len(identities - found.keys())
        if missing:
            log.warning(
                "job %d: the evaluate phase named %d kernel(s) its compile phase did not "
                "produce; none of its kernels is chosen",
                job, missing,
            )  # fmt: skip
            found = {}
        keep = set(found.values())
        chosen[job] = sorted(kid for link, _i, kid, _w in links[job] if link in keep)
        to_set += [link for link, _i, _k, was in links[job] if link in keep and not was]
        to_clear += [link for link, _i, _k, was in links[job] if was and link not in keep]
    for ids, value in ((sorted(to_clear), False), (sorted(to_set), True)):
        for chunk in _chunks(ids):
            conn.execute(
                update(tables.job_kernel).where(JobKernel.id.in_(chunk)).values(chosen=value)
            )
    return chosen


def write_eval_results(conn: Connection, done: Sequence[tuple[ClaimedJob, EvalOutcome]]) -> None:
    """perf_db and find_db rows of completed evaluate phases, upserted, and chosen kernels.

    Every row names its job; the job's links to the chosen solution's kernels are marked
    (:func:`choose_kernels`). The rows' ``kernel`` column still names the chosen kernel
    where there is exactly one, else None; it is redundant with ``job_kernel.chosen``,
    which the kernel db export reads, and kept for readers of the old column. A row
    written again by another job loses the old link.
    """
    if not done:
        return
    perf: dict[_Key, dict[str, Any]] = {}
    find: dict[_Key, dict[str, Any]] = {}
    kernels = choose_kernels(
        conn, [(job.id, o.kernels) for job, o in done if o.perf is not None or o.find is not None]
    )
    for job, outcome in done:
        key = (job.session, job.config, job.solver)
        base: Mapping[str, Any] = {
            "session": job.session,
            "config": job.config,
            "solver": job.solver,
        }
        chosen = kernels.get(job.id, [])
        kernel = chosen[0] if len(chosen) == 1 else None
        f = outcome.find
        if f is not None and key in find and find[key]["time_ms"] < f.time_ms:
            continue  # one batch, two results of a key: the faster is the one stored
        if outcome.perf is not None:
            perf[key] = {**base, "params": outcome.perf.params, "job": job.id, "kernel": kernel}
        elif f is not None:
            perf.pop(key, None)  # a faster find row without a perf row: none goes with it
        if f is not None:
            find[key] = {
                **base,
                "time_ms": f.time_ms,
                "workspace": f.workspace,
                "algorithm": f.algorithm,
                "params": f.params,
                "job": job.id,
                "kernel": kernel,
            }
    keys = ("session", "config", "solver")
    rows = [find[k] for k in sorted(find)]
    stmt = _best_upsert(_is_mysql(conn))
    for chunk in _chunks(rows):
        conn.execute(stmt, list(chunk))
    won = _stored_by(conn, find)
    # a perf row goes with the find row of its result: written where that one is stored
    _upsert(
        conn, tables.perf_db, [perf[k] for k in sorted(perf) if k not in find or k in won], keys
    )


_Key = tuple[int, "int | None", "int | None"]


@functools.cache
def _best_upsert(mysql_dialect: bool) -> Executable:
    """INSERT of a find row; where its key exists, the new row replaces the stored one only
    when its time is as fast or faster (the stored winner is the fastest measured).

    One statement, atomic on both databases: MariaDB's ``ON DUPLICATE KEY UPDATE`` assigns
    left to right, so ``time_ms`` goes last (the other columns compare against the stored
    time); SQLite's upsert takes a ``WHERE``."""
    t = tables.find_db
    columns = ("workspace", "algorithm", "params", "job", "kernel", "time_ms")
    if mysql_dialect:
        ins = mysql.insert(t)
        faster = ins.inserted.time_ms <= t.c.time_ms
        return ins.on_duplicate_key_update(
            [(c, case((faster, ins.inserted[c]), else_=t.c[c])) for c in columns]
        )
    lite = sqlite.insert(t)
    return lite.on_conflict_do_update(
        index_elements=["session", "config", "solver"],
        set_={c: lite.excluded[c] for c in columns},
        where=lite.excluded.time_ms <= t.c.time_ms,
    )


def _stored_by(conn: Connection, find: Mapping[_Key, Mapping[str, Any]]) -> set[_Key]:
    """The keys whose stored find row is the one in ``find`` (its job, time and params).

    On MariaDB the rows are read as they are now, not as this transaction's snapshot has
    them (``FOR UPDATE``), one unique-key lookup per key: the upsert above already holds
    their record locks, so the read takes no new lock. A read of several keys at once
    (``(session, config, solver) IN (...)``) is a range scan that also locks the gaps after
    each key, and those gap locks deadlocked concurrent workers inserting neighbouring find
    rows (tests/worker/test_mysql.py's sixteen workers, 3 runs in 10)."""
    won: set[_Key] = set()
    if _is_mysql(conn):
        stmt = _stored_row_for_update()
        found = []
        for session, config, solver in sorted(find):
            if config is None or solver is None:
                found.extend(_stored_rows(conn, [(session, config, solver)]))
                continue
            found.extend(conn.execute(stmt, {"s": session, "c": config, "v": solver}))
    else:
        found = _stored_rows(conn, sorted(find))
    for r in found:
        key = (r.session, r.config, r.solver)
        mine = find.get(key)
        if mine is not None and (r.job, r.time_ms, r.params) == (
            mine["job"],
            mine["time_ms"],
            mine["params"],
        ):
            won.add(key)
    return won


_STORED_COLUMNS = (
    FindDb.session,
    FindDb.config,
    FindDb.solver,
    FindDb.job,
    FindDb.time_ms,
    FindDb.params,
)


@functools.cache
def _stored_row_for_update() -> Executable:
    return (
        select(*_STORED_COLUMNS)
        .where(
            FindDb.session == bindparam("s"),
            FindDb.config == bindparam("c"),
            FindDb.solver == bindparam("v"),
        )
        .with_for_update()
    )


def _stored_rows(conn: Connection, keys: Sequence[_Key]) -> list[Any]:
    rows: list[Any] = []
    for chunk in _chunks(keys):
        rows.extend(
            conn.execute(
                select(*_STORED_COLUMNS)
                .where(tuple_(FindDb.session, FindDb.config, FindDb.solver).in_(list(chunk)))
                .with_for_update()
            )
        )
    return rows
