"""export_db: a session's or a golden version's results as the files MIOpen reads.

Every row is checked first (:mod:`tuna.results.validate`); one failing row refuses the
whole export and no file is written. Then:

* ``find``: ``<base>.HIP.fdb.txt`` (``.OpenCL.`` for a session of MIOpen's OpenCL runtime),
  one line per key, keys sorted; per key the 4 fastest solvers, fastest first, equal times
  ordered as MIOpen orders them: by the solver's numeric id (then by name, for a solver
  whose id Tuna does not know). A record exported unchanged since import_db read it keeps
  its entries and their order (``find_db.import_order``), and a session's key-only records
  (keys that are no problem) are written as they were imported;
* ``perf``: ``<base>.db`` (sqlite, MIOpen's ``config`` + ``perf_db``) and ``<base>.db.txt``
  (x-joined keys, sorted), one entry per (perf-db key, solver);
* ``kern``: ``<base>.kdb``, the kernels of each key's fastest solver: all the kernels of the
  chosen solution, as the backend named them in the evaluate phase (``job_kernel.chosen`` of
  the job that produced the row; for a golden version, the kernels frozen with the row in
  ``golden_kernel``, else its job's) or, where the job has none chosen, every kernel it
  compiled (counted as ``winners_with_all_job_kernels`` in the report and the manifest);
  under the name and args MIOpen looks them up by
  (:func:`~tuna.results.formats.kdb_name_args`), re-packed with bzip2 and checked against
  their md5.

Rows are streamed from the database as plain tuples (:mod:`tuna.results.rows`). A manifest
with the provenance of every session and the sha256 of every file is written beside them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tuna.db import Database
from tuna.db.bulk import chunks
from tuna.db.models import (
    GoldenKernel,
    JobKernel,
    KernelCache,
    KeyOnlyRecord,
    Solver,
    TuningSession,
)
from tuna.errors import NotFoundError, TunaError
from tuna.problems.keys import perf_db_columns
from tuna.results.dbfiles import (
    KernDbWriter,
    write_perf_sqlite,
    write_text_lines,
)
from tuna.results.formats import (
    KdbRow,
    PerfColumns,
    db_basename,
    export_file_names,
    is_gpu_arch,
    kdb_name_args,
    perf_db_line,
)
from tuna.results.manifest import (
    ExportedFile,
    build_manifest,
    manifest_path,
    write_manifest,
)
from tuna.results.rows import (
    Source,
    config_keys,
    config_problems,
    find_config_ids,
    find_groups,
    left_out_rows,
    perf_rows,
    resolve_source,
    row_config_ids,
    stream_rows,
    trans_config_ids,
)
from tuna.results.validate import KeyChecks, KeyItem, RowChecks

log = logging.getLogger(__name__)

Kind = Literal["find", "perf", "kern"]
KINDS: tuple[Kind, ...] = ("find", "perf", "kern")
FIND_ENTRIES_PER_KEY = 4
PARALLEL_MIN_CONFIGS = 20_000
"""From this many configs on, keys are checked in worker processes (see ``KeyChecks``)."""
_KEY_CHUNK = 5_000
_KERNELS_PER_QUERY = 50  # code objects can be megabytes each

CHECKS = {
    "find": [
        "key parses back to itself",
        "solver known to the session's backend",
        "solver applicable to the problem",
        "time and workspace finite and not negative",
        "ids and values fit the text format",
    ],
}
CHECKS["perf"] = [*CHECKS["find"][:3], "perf-db key parses back", "params fit the text format"]
CHECKS["kern"] = [
    *CHECKS["find"],
    "kernel unpacks to uncompressed_size bytes with md5 kernel_hash",
    "one binary per (kernel_name, kernel_args)",
]


@dataclass(frozen=True)
class ExportSpec:
    """What to export: exactly one of ``session`` and ``golden_v`` (which needs ``arch``)."""

    kind: Kind
    session: int | None = None
    golden_v: int | None = None
    arch: str | None = None
    num_cu: int | None = None
    config_tag: str | None = None
    filename: str | None = None
    out_dir: Path = Path(".")
    opencl: bool = False  # name the find db .OpenCL. whatever the session's runtime says
    include_retired: bool = False  # a golden version's rows of retired sessions too


@dataclass
class ExportReport:
    kind: Kind
    source: str
    arch: str
    num_cu: int
    basename: str
    rows: int
    keys: int
    files: list[ExportedFile]
    manifest: Path
    counts: dict[str, int] = field(default_factory=dict)
    left_out: tuple[int, ...] = ()  # retired sessions whose golden rows were left out


def export_db(db: Database, spec: ExportSpec) -> ExportReport:
    """Check and write one export; ``ExportRefusedError`` lists every failing row."""
    if spec.kind not in KINDS:
        raise TunaError(f"unknown export kind {spec.kind!r}; use one of {', '.join(KINDS)}")
    if spec.filename is not None and (not spec.filename or "/" in spec.filename):
        raise TunaError(
            f"--filename {spec.filename!r}: give a base name (no directory; -o sets the directory)"
        )
    with db.session() as s:
        source = resolve_source(
            s,
            spec.session,
            spec.golden_v,
            spec.arch,
            spec.num_cu,
            include_retired=spec.include_retired,
        )
        left_out = left_out_rows(s, source, spec.config_tag)
        basename = spec.filename or db_basename(source.arch, source.num_cu)
        names = export_file_names(
            basename, spec.kind, gpu=is_gpu_arch(source.arch), runtime=_runtime(source, spec)
        )
        paths = [spec.out_dir / n for n in names]
        backends = {sid: row.backend for sid, row in source.sessions.items()}
        checks = RowChecks(backends, library_solvers(s, set(backends.values())))
        if spec.kind == "find":
            files, counts = _export_find(s, source, spec, checks, paths[0])
        elif spec.kind == "perf":
            files, counts = _export_perf(s, source, spec, checks, paths[0], paths[1])
        else:
            files, counts = _export_kern(s, source, spec, checks, paths[0])
    counts = {"rows_checked": checks.rows, **counts}
    if source.left_out:
        counts["retired_rows_left_out"] = left_out
    src: dict[str, Any] = (
        {"session": source.session}
        if source.golden is None
        else {"golden_version": source.golden.version, "parent": source.golden.parent}
    )
    if source.left_out:
        src["retired_sessions_left_out"] = sorted(source.left_out)
    manifest = build_manifest(
        kind=f"{spec.kind}_db",
        source=src,
        arch=source.arch,
        num_cu=source.num_cu,
        basename=basename,
        config_tag=spec.config_tag,
        sessions=source.sessions.values(),
        counts=counts,
        files=files,
        checks=CHECKS[spec.kind],
    )
    where = manifest_path(files[0].path)
    write_manifest(where, manifest)
    log.info("export %s: %s -> %s", spec.kind, source.label, ", ".join(str(f.path) for f in files))
    return ExportReport(
        kind=spec.kind,
        source=source.label,
        arch=source.arch,
        num_cu=source.num_cu,
        basename=basename,
        rows=checks.rows,
        keys=counts.get("keys", 0),
        files=files,
        manifest=where,
        counts=counts,
        left_out=tuple(sorted(source.left_out)),
    )


def _runtime(source: Source, spec: ExportSpec) -> str:
    """``OpenCL`` when asked, or when every session of the source is an OpenCL one.

    Asked of a source that is no GPU's: refused, since the name's runtime field is MIOpen's
    GPU runtime and such a find db has none (``export_file_names``)."""
    if spec.opencl and not is_gpu_arch(source.arch):
        name = export_file_names(db_basename(source.arch, source.num_cu), "find", gpu=False)[0]
        raise TunaError(
            f"-c/--opencl: {source.label} tuned {source.arch}, not a GPU: its find db is "
            f"{name}, with no runtime in the name (HIP and OpenCL are MIOpen's GPU runtimes); "
            "leave out -c"
        )
    if spec.opencl:
        return "OpenCL"
    runtimes = {row.runtime or "HIP" for row in source.sessions.values()}
    return "OpenCL" if runtimes == {"OpenCL"} else "HIP"


def _none_found(source: Source, what: str, tag: str | None) -> NotFoundError:
    tagged = f" for configs tagged {tag!r}" if tag else ""
    retired = (
        f" (the rows of retired session(s) {', '.join(map(str, sorted(source.left_out)))} are "
        "left out; --include_retired exports them)"
        if source.left_out
        else ""
    )
    return NotFoundError(f"nothing to export: {source.label} has no {what}{tagged}{retired}")


# --- find db -------------------------------------------------------------------------------------


@dataclass
class _Winner:
    """The fastest row of a key: its job and, from a golden version, the golden row's id."""

    key: str
    solver: str
    job: int | None
    golden: int | None


def _checked_find(
    s: Session, source: Source, tag: str | None, checks: RowChecks, links: bool
) -> tuple[list[tuple[str, str]], dict[int, _Winner], int]:
    """(key, line) per config, the fastest row per config, and the entries written.

    Rows are read and their values checked here; each key's round trip and its solvers'
    applicability are checked by :class:`KeyChecks`, in worker processes when the export is
    large. The failures of both are in ``checks.failures`` on return.
    """
    config_ids = find_config_ids(source, tag)
    n_configs = s.scalar(select(func.count()).select_from(config_ids.distinct().subquery())) or 0
    real = config_problems(s, trans_config_ids(s, config_ids))
    names = dict(s.execute(select(Solver.id, Solver.name)).all())
    order = solver_order(s)
    sessions = {sid: row.backend for sid, row in source.sessions.items()}
    lines: list[tuple[str, str]] = []
    winners: dict[int, _Winner] = {}
    entries = 0
    items: list[KeyItem] = []

    def unreadable(key: str, row: str) -> None:
        checks.fail(key, "-", f"cannot read a find row: {row!r}")

    with KeyChecks(checks, sessions, parallel=n_configs >= PARALLEL_MIN_CONFIGS) as keys:
        for config, key, found in find_groups(s, source, tag, True, unreadable):
            good: list[tuple[float, int, str, int, str, Any, Any, Any]] = []
            known: list[tuple[int, str]] = []
            for session, solver_id, time_ms, workspace, algorithm, job, kernel, place in found:
                solver = names[solver_id]
                imported = job is None and checks.library_said(session)
                if checks.find_values(key, session, solver, time_ms, workspace, algorithm):
                    good.append((time_ms, order[solver_id], solver, workspace, algorithm, job,
                                 kernel, place))  # fmt: skip
                    if not imported:
                        known.append((session, solver))
                elif checks.known(session, solver) and not imported:
                    known.append((session, solver))
            items.append((key, real.get(config), known))
            if len(items) >= _KEY_CHUNK:
                keys.submit(items)
                items = []
            if checks.failures or not good:
                continue  # nothing will be written; keep checking to list every failure
            if len(good) == len(found) and _as_imported(good):
                top = sorted(good, key=itemgetter(7))
            else:
                good.sort(key=itemgetter(0, 1))
                top = good[:FIND_ENTRIES_PER_KEY]
            entries += len(top)
            text = ";".join(f"{sv}:{t:g},{ws},{alg}" for t, _o, sv, ws, alg, _j, _k, _p in top)
            lines.append((key, f"{key}={text}"))
            if links:
                best = min(top, key=itemgetter(0, 1))
                winners[config] = _Winner(key, best[2], best[5], best[6])
        keys.submit(items)
        keys.finish()
    return lines, winners, entries


def _as_imported(rows: list[tuple[float, int, str, int, str, Any, Any, Any]]) -> bool:
    """Whether a key's rows are one db record as it was imported: no job wrote any of them
    and their import orders are 0, 1, ... (a later import of part of the record, or a job's
    result, breaks it). Such a record is written as it came, all its entries in their order:
    MIOpen's files order equal times either way, and cap no record at four entries."""
    places = [r[7] for r in rows]
    if None in places or any(r[5] is not None for r in rows):
        return False
    return sorted(places) == list(range(len(rows)))


def check_session_find(s: Session, session: TuningSession) -> int:
    """Run the find-db export checks on all of a session's find rows; returns how many.

    ``ExportRefusedError`` lists every failing row.
    """
    source = Source(
        f"session {session.id}", session.arch, session.num_cu, session.id, None,
        {session.id: session},
    )  # fmt: skip
    checks = RowChecks({session.id: session.backend}, library_solvers(s, {session.backend}))
    _checked_find(s, source, None, checks, links=False)
    checks.raise_if_failed(f"find rows of {source.label}")
    return checks.rows


def _export_find(
    s: Session, source: Source, spec: ExportSpec, checks: RowChecks, path: Path
) -> tuple[list[ExportedFile], dict[str, int]]:
    lines, _winners, entries = _checked_find(s, source, spec.config_tag, checks, links=False)
    checks.raise_if_failed(f"find db of {source.label}")
    key_only = _key_only_lines(s, source, spec.config_tag)
    if not lines and not key_only:
        raise _none_found(source, "find results", spec.config_tag)
    lines += key_only
    entries += sum(line.count(";") + 1 for _key, line in key_only)
    lines.sort(key=itemgetter(0))
    write_text_lines(path, (line for _key, line in lines))
    counts = {"keys": len(lines), "entries": entries}
    if key_only:
        counts["key_only_records"] = len(key_only)
    return [ExportedFile.of(path, len(lines), entries)], counts


def _key_only_lines(s: Session, source: Source, tag: str | None) -> list[tuple[str, str]]:
    """A session's key-only records (import_db), as they were imported: their keys are no
    problem, so no config and no tag holds them, and a golden version takes none."""
    if source.session is None or tag is not None:
        return []
    q = select(KeyOnlyRecord.fdb_key, KeyOnlyRecord.entries).where(
        KeyOnlyRecord.session == source.session
    )
    return [(key, f"{key}={text}") for key, text in s.execute(q)]


# --- perf db -------------------------------------------------------------------------------------


def _export_perf(
    s: Session, source: Source, spec: ExportSpec, checks: RowChecks, db_path: Path, txt: Path
) -> tuple[list[ExportedFile], dict[str, int]]:
    configs = config_keys(s, row_config_ids(perf_rows(source, spec.config_tag)))
    real = config_problems(s, [cid for cid, (_k, mode) in configs.items() if mode != "conv"])
    names = dict(s.execute(select(Solver.id, Solver.name)).all())
    columns: dict[str, PerfColumns] = {}
    # perf-db key -> solver -> (find-db key, params): several configs can share a perf-db key
    # (it has one layout, no casts, no out dims); the smallest find-db key's row is kept.
    records: dict[str, dict[str, tuple[str, str]]] = {}
    merged = 0
    for config, group in groupby(stream_rows(s, perf_rows(source, spec.config_tag)), itemgetter(0)):
        key, _mode = configs[config]
        problem = checks.key(key)
        pkey = checks.perf_key(key, problem) if problem is not None else None
        target = real.get(config, problem)
        good = []
        for _c, session, solver_id, params in group:
            solver = names[solver_id]
            if checks.perf_row(key, target, session, solver, params) and pkey is not None:
                good.append((solver, params))
        if checks.failures or pkey is None or problem is None:
            continue
        if pkey not in columns:
            columns[pkey] = perf_db_columns(problem)
        entry = records.setdefault(pkey, {})
        for solver, params in good:
            if solver in entry:
                merged += 1
                if entry[solver][0] < key:
                    continue
            entry[solver] = (key, params)
    checks.raise_if_failed(f"perf db of {source.label}")
    if not records:
        raise _none_found(source, "perf results", spec.config_tag)
    keys = sorted(records)
    entries = [[(sv, records[k][sv][1]) for sv in sorted(records[k])] for k in keys]
    rows = write_perf_sqlite(db_path, ((columns[k], e) for k, e in zip(keys, entries, strict=True)))
    write_text_lines(txt, (perf_db_line(k, e) for k, e in zip(keys, entries, strict=True)))
    files = [ExportedFile.of(db_path, len(keys), rows), ExportedFile.of(txt, len(keys), rows)]
    return files, {"keys": len(keys), "entries": rows, "merged_perf_rows": merged}


# --- kernel db -----------------------------------------------------------------------------------


def _export_kern(
    s: Session, source: Source, spec: ExportSpec, checks: RowChecks, path: Path
) -> tuple[list[ExportedFile], dict[str, int]]:
    _lines, winners, _entries = _checked_find(s, source, spec.config_tag, checks, links=True)
    checks.raise_if_failed(f"kernel db of {source.label}")
    if not winners:
        raise _none_found(source, "find results", spec.config_tag)
    users: dict[int, _Winner] = {}  # kernel id -> a winner that uses it (for messages)
    frozen = _frozen_kernels(s, [w for w in winners.values() if w.golden is not None], users)
    by_job = {w.job: w for w in winners.values() if w.golden not in frozen and w.job is not None}
    chosen = _job_kernels(s, by_job, users, chosen_only=True)
    all_of_job = _job_kernels(s, {j: w for j, w in by_job.items() if j not in chosen}, users)
    if not users:
        raise TunaError(
            f"nothing to export: no kernel is linked to the fastest solvers of {source.label} "
            "(a kernel db needs the compiled code objects)"
        )
    if all_of_job:
        log.warning(
            "export kern: %s: for %d of %d key(s) the backend did not name the fastest "
            "solver's kernels; every kernel its job compiled was taken",
            source.label, len(all_of_job), len(winners),
        )  # fmt: skip
    if source.golden is not None and by_job:
        log.warning(
            "export kern: %s: %d of %d key(s) have no kernels frozen with the version; "
            "their jobs' current kernels were taken",
            source.label, len(by_job), len(winners),
        )  # fmt: skip
    writer = KernDbWriter(path)
    try:
        seen: dict[tuple[str, str], str] = {}
        for part in chunks(sorted(users), _KERNELS_PER_QUERY):
            q = select(
                KernelCache.id,
                KernelCache.kernel_name,
                KernelCache.kernel_args,
                KernelCache.kernel_hash,
                KernelCache.uncompressed_size,
                KernelCache.blob,
            ).where(KernelCache.id.in_(part))
            for kid, name, args, digest, size, blob in s.execute(q):
                who = users[kid]
                code = checks.kernel(who.key, who.solver, f"kernel {kid} ({name})", blob, size,
                                     digest)  # fmt: skip
                if code is None:
                    continue
                row = KdbRow.of(*kdb_name_args(name, args, source.arch), code)
                name_args = (row.kernel_name, row.kernel_args)
                if seen.setdefault(name_args, digest) != digest:
                    checks.fail(
                        who.key,
                        who.solver,
                        f"kernel {kid} ({row.kernel_name}, {row.kernel_args!r}) differs from "
                        "another kernel with the same name and args",
                    )
                    continue
                if not checks.failures:
                    writer.add(row)
        checks.raise_if_failed(f"kernel db of {source.label}")
        writer.commit()
    except BaseException:
        writer.discard()
        raise
    kernels = len(seen)
    named = len(frozen) + len(chosen)
    counts = {
        "keys": len(winners),
        "kernels": kernels,
        "winners_with_chosen_kernels": named,
        "winners_with_all_job_kernels": len(all_of_job),
        "winners_without_kernels": len(winners) - named - len(all_of_job),
    }
    if source.golden is not None:
        counts["winners_with_frozen_kernels"] = len(frozen)
    return [ExportedFile.of(path, kernels, kernels)], counts


def _frozen_kernels(s: Session, winners: list[_Winner], users: dict[int, _Winner]) -> set[int]:
    """Add the kernels frozen with golden winners to ``users``; returns the golden rows found."""
    by_row = {w.golden: w for w in winners if w.golden is not None}
    found: set[int] = set()
    for part in chunks(sorted(by_row), 1000):
        q = select(GoldenKernel.golden, GoldenKernel.kernel).where(GoldenKernel.golden.in_(part))
        for row, kernel in s.execute(q):
            users.setdefault(kernel, by_row[row])
            found.add(row)
    return found


def _job_kernels(
    s: Session, by_job: dict[int, _Winner], users: dict[int, _Winner], *, chosen_only: bool = False
) -> set[int]:
    """Add the kernels of the winners' jobs (only the chosen ones, or all) to ``users``;
    returns the jobs that had any."""
    found: set[int] = set()
    for part in chunks(sorted(by_job), 1000):
        q = select(JobKernel.job, JobKernel.kernel).where(JobKernel.job.in_(part))
        if chosen_only:
            q = q.where(JobKernel.chosen)
        for job, kernel in s.execute(q):
            users.setdefault(kernel, by_job[job])
            found.add(job)
    return found


def solver_order(s: Session) -> dict[int, int]:
    """Solver id -> its rank among equal times, as MIOpen orders them: by the library's
    numeric solver id, then (no numeric id known) by name."""
    rows = s.execute(select(Solver.id, Solver.numeric_id, Solver.name)).all()
    ranked = sorted(rows, key=lambda r: (r[1] is None, r[1] or 0, r[2]))
    return {r[0]: rank for rank, r in enumerate(ranked)}


def library_solvers(s: Session, backends: set[str]) -> dict[str, frozenset[str]]:
    """The valid solvers of the ``solver`` table, per backend (see :class:`RowChecks`)."""
    found: dict[str, set[str]] = {b: set() for b in backends}
    rows = s.execute(
        select(Solver.backend, Solver.name).where(
            Solver.backend.in_(sorted(backends)), Solver.valid.is_(True)
        )
    )
    for backend, name in rows:
        found[backend].add(name)
    return {b: frozenset(n) for b, n in found.items()}
