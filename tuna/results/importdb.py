"""import_db: MIOpen's perf and find db files as a session's rows, e.g. to seed a baseline.

Reads text find dbs (v2.0 and legacy v1.0 entries), text perf dbs (x keys and legacy dash
keys) and sqlite perf dbs (``config`` + ``perf_db``). Every file is read and every key
parsed before anything is written; a bad record refuses the import and is listed, unless
the caller skips bad records.

* Keys become catalogue configs through ``import_configs`` (deduplicated by find-db key),
  with the MIOpenDriver line of their problem as the config's line.
* Solver names the session's backend does not know (MIOpen's, when importing into a
  session of another backend: there is no ``miopen`` backend yet) get solver rows of that
  backend marked ``valid = 0`` and a warning. An export of such a session refuses those
  rows (their solver is unknown to the backend) until it has a backend that knows them.
* Rows are upserted: a file's row replaces the session's row for the same (config,
  solver), and with several files the later file wins. Imported rows link no job.
* A perf-db x key holds y but not x for backward directions, so for B and W with a stride
  above 1 the smallest x that gives y is imported (``parse_perf_db_key``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.orm import Session

from tuna.backends import get_backend
from tuna.catalog.importer import import_configs
from tuna.db import Database
from tuna.db.bulk import chunks, insert_missing
from tuna.db.models import ConvConfig, FindDb, PerfDb, Solver
from tuna.errors import TunaError
from tuna.problems.conv import ConvProblem
from tuna.problems.driver import to_driver_line
from tuna.problems.keys import find_db_key, parse_find_db_key, parse_perf_db_key
from tuna.results.dbfiles import (
    file_format,
    read_perf_sqlite,
)
from tuna.results.formats import (
    DbFileError,
    FileFormat,
    FindEntry,
    db_basename,
    perf_key_of_columns,
    read_find_db,
    read_perf_db_text,
)
from tuna.sessions import session_row

log = logging.getLogger(__name__)

_SHOWN = 200
_ROWS_PER_STATEMENT = 500


@dataclass
class DbFile:
    """A db file, read and parsed: rows by find-db key, and the records that were bad."""

    path: Path
    format: FileFormat
    records: int = 0
    find: dict[str, list[FindEntry]] = field(default_factory=dict)
    perf: dict[str, dict[str, str]] = field(default_factory=dict)  # key -> solver -> params
    drivers: dict[str, str] = field(default_factory=dict)  # key -> MIOpenDriver line
    bad: list[str] = field(default_factory=list)

    @property
    def entries(self) -> int:
        return sum(len(e) for e in self.find.values()) + sum(len(e) for e in self.perf.values())


class DbFileRefusedError(DbFileError):
    """Raised when db files to import hold bad records, so nothing was imported."""

    def __init__(self, bad: list[str]) -> None:
        self.bad = bad
        shown = "\n".join(f"  {b}" for b in bad[:_SHOWN])
        more = f"\n  ... and {len(bad) - _SHOWN} more" if len(bad) > _SHOWN else ""
        super().__init__(
            f"{len(bad)} bad record(s); nothing was imported:\n{shown}{more}\n"
            "Fix the records above, or pass --skip-bad to import the good ones only."
        )


def read_db_file(path: Path) -> DbFile:
    """Read a MIOpen find or perf db file (kind told by its name and contents).

    Bad records are listed in ``bad`` in file order, each as ``path:line: reason``.
    """
    out = _read(path)
    at = re.compile(re.escape(f"{path}:") + r"(?:row )?([0-9]+)")

    def position(bad: str) -> int:
        m = at.match(bad)
        return int(m.group(1)) if m else 0

    out.bad.sort(key=position)
    return out


def _read(path: Path) -> DbFile:
    if not path.is_file():
        raise DbFileError(f"{path}: no such file")
    fmt = file_format(path)
    out = DbFile(path, fmt)
    if fmt == "kern-sqlite":
        raise DbFileError(f"{path}: a kernel db; import_db reads find and perf dbs")
    if fmt == "perf-sqlite":
        _read_perf_sqlite(out)
        return out
    with path.open(encoding="ascii", errors="replace") as f:
        if fmt == "find-text":
            records, bad = read_find_db(f)
            out.records = len(records) + len(bad)
            out.bad += [f"{path}:{b.line_no}: {b.reason}" for b in bad]
            for r in records:
                if _key(out, r.key, parse_find_db_key, r.line_no):
                    out.find[r.key] = list(r.entries)
        else:
            perf, bad = read_perf_db_text(f)
            out.records = len(perf) + len(bad)
            out.bad += [f"{path}:{b.line_no}: {b.reason}" for b in bad]
            for p in perf:
                key = _perf_key(out, p.key, p.line_no)
                if key is not None:
                    out.perf.setdefault(key, {}).update(dict(p.entries))
    return out


def _read_perf_sqlite(out: DbFile) -> None:
    config_keys: dict[str, str | None] = {}
    for n, (columns, solver, params) in enumerate(read_perf_sqlite(out.path), start=1):
        xkey = perf_key_of_columns(columns)
        if xkey not in config_keys:
            config_keys[xkey] = _perf_key(out, xkey, n, row=True)
        key = config_keys[xkey]
        if key is not None:
            out.perf.setdefault(key, {})[solver] = params
    out.records = len(config_keys)


def _key(out: DbFile, key: str, parse: Any, where: int, *, row: bool = False) -> str | None:
    """Parse ``key`` and record the find-db key's driver line; None (recorded bad) if it fails."""
    place = f"{out.path}:{'row ' if row else ''}{where}"
    try:
        problem: ConvProblem = parse(key)
        fdb_key = find_db_key(problem)
        driver = to_driver_line(problem)
    except TunaError as e:
        out.bad.append(f"{place}: {e}")
        return None
    out.drivers[fdb_key] = driver
    return fdb_key


def _perf_key(out: DbFile, key: str, where: int, *, row: bool = False) -> str | None:
    """The find-db key of a perf-db key (x-joined, or the legacy dash key)."""
    parse = parse_find_db_key if "-" in key else parse_perf_db_key
    return _key(out, key, parse, where, row=row)


@dataclass
class ImportDbReport:
    session: int
    files: list[DbFile]
    configs: int = 0
    configs_inserted: int = 0
    find_rows: int = 0
    perf_rows: int = 0
    new_solvers: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def import_db_files(
    db: Database,
    session_id: int,
    files: Sequence[DbFile],
    *,
    tag: str | None = None,
    skip_bad: bool = False,
) -> ImportDbReport:
    """Import parsed db files into session ``session_id`` (see the module's docstring)."""
    bad = [b for f in files for b in f.bad]
    if bad and not skip_bad:
        raise DbFileRefusedError(bad)
    with db.session() as s:
        sess = session_row(s, session_id)
        backend_name, basename = sess.backend, db_basename(sess.arch, sess.num_cu)
    known = {x.name: x for x in get_backend(backend_name).solvers()}
    report = ImportDbReport(session_id, list(files), skipped=bad)
    for f in files:
        target = f.path.name.split(".", 1)[0]
        if "gfx" in target and basename not in target:
            report.warnings.append(
                f"{f.path.name} looks like a db of {target}; session {session_id} is {basename}"
            )
    find: dict[tuple[str, str], FindEntry] = {}
    perf: dict[tuple[str, str], str] = {}
    drivers: dict[str, str] = {}
    for f in files:
        drivers.update(f.drivers)
        for key, entries in f.find.items():
            for e in entries:
                find[(key, e.solver)] = e
        for key, by_solver in f.perf.items():
            for solver, params in by_solver.items():
                perf[(key, solver)] = params
    algorithms = {solver: e.algorithm for (_k, solver), e in find.items()}
    names = sorted({sv for _k, sv in find} | {sv for _k, sv in perf})
    report.new_solvers = [n for n in names if n not in known]
    if report.new_solvers:
        report.warnings.append(
            f"{len(report.new_solvers)} solver(s) unknown to backend {backend_name!r} were "
            f"added as its solvers with valid=0 (an export of the session refuses their rows): "
            f"{', '.join(report.new_solvers)}"
        )
    for w in report.warnings:  # the report carries them to the caller, who shows them
        log.info("import_db session %d: %s", session_id, w)
    if not drivers:
        return report
    lines = list(enumerate(drivers.values(), start=1))
    configs = import_configs(db, lines, tag=tag, source="import_db")
    report.configs, report.configs_inserted = configs.configs, configs.inserted
    with db.session() as s:
        config_ids = _config_ids(s, sorted({k for k, _ in find} | {k for k, _ in perf}))
        solver_ids = _solver_ids(s, backend_name, known, report.new_solvers, algorithms)
        find_rows = [
            {
                "session": session_id,
                "config": config_ids[key],
                "solver": solver_ids[solver],
                "time_ms": e.time_ms,
                "workspace": e.workspace,
                "algorithm": e.algorithm,
                "params": None,
                "job": None,
                "kernel": None,
            }
            for (key, solver), e in sorted(find.items())
        ]
        perf_rows = [
            {
                "session": session_id,
                "config": config_ids[key],
                "solver": solver_ids[solver],
                "params": params,
                "job": None,
                "kernel": None,
            }
            for (key, solver), params in sorted(perf.items())
        ]
        _upsert(s, FindDb, find_rows)
        _upsert(s, PerfDb, perf_rows)
    report.find_rows, report.perf_rows = len(find_rows), len(perf_rows)
    log.info(
        "import_db session %d: %d configs (%d new), %d find rows, %d perf rows",
        session_id,
        report.configs,
        report.configs_inserted,
        report.find_rows,
        report.perf_rows,
    )
    return report


def _config_ids(s: Session, keys: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for part in chunks(keys, 1000):
        q = select(ConvConfig.fdb_key, ConvConfig.id).where(ConvConfig.fdb_key.in_(part))
        found.update({k: i for k, i in s.execute(q)})
    return found


def _solver_ids(
    s: Session,
    backend: str,
    known: dict[str, Any],
    new: list[str],
    algorithms: dict[str, str],
) -> dict[str, int]:
    rows = [
        {
            "backend": backend,
            "name": x.name,
            "tunable": x.tunable,
            "numeric_id": x.numeric_id,
            "algorithm": x.algorithm,
            "valid": True,
        }
        for x in known.values()
    ]
    rows += [
        {
            "backend": backend,
            "name": name,
            "tunable": False,
            "numeric_id": None,
            "algorithm": algorithms.get(name),
            "valid": False,
        }
        for name in new
    ]
    insert_missing(s, Solver, rows)
    q = select(Solver.name, Solver.id).where(Solver.backend == backend)
    return dict(s.execute(q).all())


def _upsert(s: Session, model: Any, rows: list[dict[str, Any]]) -> None:
    """Insert ``rows`` or overwrite the rows with the same (session, config, solver)."""
    if not rows:
        return
    keys = ("session", "config", "solver")
    columns = [c for c in rows[0] if c not in keys]
    conn = s.connection()
    for part in chunks(rows, _ROWS_PER_STATEMENT):
        if conn.dialect.name == "sqlite":
            lite = sqlite.insert(model).values(list(part))
            conn.execute(
                lite.on_conflict_do_update(
                    index_elements=list(keys), set_={c: lite.excluded[c] for c in columns}
                )
            )
        else:
            ins = mysql.insert(model).values(list(part))
            conn.execute(ins.on_duplicate_key_update({c: ins.inserted[c] for c in columns}))
