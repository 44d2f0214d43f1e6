# Over 600 lines: one import: its readers, checks and writers share the record types.
"""import_db: MIOpen's perf and find db files as a session's rows, e.g. to seed a baseline.

Reads text find dbs (v2.0 and legacy v1.0 entries), text perf dbs (x keys and legacy dash
keys) and sqlite perf dbs (``config`` + ``perf_db``). Every file is read and every record
checked before anything is written; a bad record refuses the import and is listed, unless
the caller skips bad records. A record is bad when its key does not parse (MIOpen's
malformed legacy keys: 2D pads with 3D filters), a value does not fit a C int as MIOpen
keeps it, or a key, name or value does not fit its column (the same bound on every
database, so SQLite and MySQL refuse the same records).

* Each key becomes a catalogue config from the key alone (deduplicated by find-db key),
  with the MIOpenDriver line of its problem where one exists: INT8 keys and MIOpen's
  "same"-padding keys have none, and their configs have no line.
* A perf-db x key holds y but not x for backward directions, so with a stride above 1
  several configs share it: the one already in the catalogue is taken (with a warning
  naming the others when several are), else the smallest x.
* Solver names are recorded as solvers of the session's backend. For a backend whose
  solver table is its library's word (MIOpen's: ``LibraryQueries``), names the backend's
  own catalogue lacks are real solvers of that library build and are recorded valid, so
  the session exports; for another backend they get ``valid = 0`` and a warning.
* Rows are upserted: a file's row replaces the session's row for the same (config,
  solver), and with several files the later file wins. Imported rows link no job.
* Everything is written in one transaction, the new session's row too when the import
  creates it: a refused, failed or killed import changes nothing.
  On MySQL, imports into one database take turns on the named lock
  ``tuna.import_db.<database>`` (two at once would wait on each other's new catalogue rows
  until one timed out); the second says what it waits for. Imports into other databases
  of the same server do not wait.
* A find db named ``*.OpenCL.*`` is MIOpen's OpenCL backend's: the session's ``runtime``
  becomes ``OpenCL`` (an export then writes ``.OpenCL.fdb.txt``); files of both runtimes,
  or OpenCL files into a HIP session that has rows, are refused.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from tuna.backends import LibraryQueries, backend_names, get_backend
from tuna.catalog.importer import ImportReport, store_entries
from tuna.catalog.parsing import KEY_MAX, ConvEntry, check_tag, without_cyclic_gc
from tuna.db import Database
from tuna.db.bulk import chunks, insert_missing, upsert_columns
from tuna.db.models import ConvConfig, FindDb, KeyOnlyRecord, PerfDb, Solver, TuningSession
from tuna.errors import DbKeyError, TunaError
from tuna.problems.conv import ConvProblem, InvalidProblemError
from tuna.problems.driver import to_driver_line
from tuna.problems.keys import (
    ALGORITHMS,
    find_db_key,
    is_algorithm_name,
    is_key_form,
    is_legacy_find_entry,
    parse_find_db_key,
    parse_text_db_line,
    perf_db_key_problems,
)
from tuna.results.dbfiles import file_format, read_perf_sqlite
from tuna.results.formats import (
    DbFileError,
    FileFormat,
    FindEntry,
    db_basename,
    parse_find_entry,
    perf_key_of_columns,
)
from tuna.sessions import SessionSpec, add_session, session_row

log = logging.getLogger(__name__)

_SHOWN = 200
LOCK_PREFIX = "tuna.import_db."
LOCK_NAME_MAX = 64  # MySQL's limit on a named lock


def lock_name(database: str) -> str:
    """The named lock imports into ``database`` take turns on (MySQL locks are server-wide)."""
    name = LOCK_PREFIX + database
    if len(name) <= LOCK_NAME_MAX:
        return name
    return (
        LOCK_PREFIX
        + hashlib.sha256(database.encode()).hexdigest()[: LOCK_NAME_MAX - len(LOCK_PREFIX)]
    )


LOCK_WAIT_S = 3600
SQLITE_POLL_S = 0.25  # each try for SQLite's write lock waits this long for it

# Column bounds, the same on every database (checked here, so SQLite refuses what MySQL would).
NAME_MAX = 128  # solver.name
ALGORITHM_MAX = 64  # find_db.algorithm, solver.algorithm
PARAMS_MAX = 65_535  # perf_db.params: TEXT on MySQL, bytes
WORKSPACE_MAX = 2**63 - 1  # find_db.workspace: BIGINT
_NAME = re.compile(r"[!-~]+")  # printable ASCII, no white space

Waiting = Callable[[str], None]
"""Called with a sentence when an import has to wait for another one."""


@dataclass
class DbFile:
    """A db file, read and checked: rows by key, the problems of the keys, the bad records."""

    path: Path
    format: FileFormat
    records: int = 0
    find: dict[str, list[FindEntry]] = field(default_factory=dict)  # find-db key -> entries
    perf: dict[str, dict[str, str]] = field(default_factory=dict)  # source key -> solver -> params
    problems: dict[str, ConvProblem] = field(default_factory=dict)  # find-db key -> problem
    perf_problems: dict[str, list[ConvProblem]] = field(default_factory=dict)  # source key ->
    bad: list[str] = field(default_factory=list)
    # find-db records whose key is MIOpen's form but no problem: key -> entries, and why
    key_only: dict[str, list[FindEntry]] = field(default_factory=dict)
    key_only_reasons: dict[str, str] = field(default_factory=dict)

    @property
    def entries(self) -> int:
        return (
            sum(len(e) for e in self.find.values())
            + sum(len(e) for e in self.perf.values())
            + sum(len(e) for e in self.key_only.values())
        )

    @property
    def runtime(self) -> str | None:
        """``OpenCL`` or ``HIP`` when the file's name says so (``gfx906_60.OpenCL.fdb.txt``)."""
        fields = self.path.name.split(".")[1:]
        return next((f for f in fields if f in ("HIP", "OpenCL")), None)


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
    if not path.is_file():
        raise DbFileError(f"{path}: no such file")
    fmt = file_format(path)
    out = DbFile(path, fmt)
    if fmt == "kern-sqlite":
        raise DbFileError(f"{path}: a kernel db; import_db reads find and perf dbs")
    with without_cyclic_gc():
        if fmt == "perf-sqlite":
            _read_perf_sqlite(out)
        else:
            # undecodable bytes become lone surrogates, found per line by _not_ascii
            with path.open(encoding="ascii", errors="surrogateescape") as f:
                _read_text(out, f, find=fmt == "find-text")
    return out


def _read_text(out: DbFile, lines: Any, *, find: bool) -> None:
    keys: dict[str, str | None] = {}  # key as written -> its find-db key, None when bad
    fast = _FastFindLines()
    for no, line in enumerate(lines, start=1):
        if not line.isascii():
            out.records += 1
            out.bad.append(f"{out.path}:{no}: {_not_ascii(line)}")
            continue
        if find:
            record = fast.read(line)
            if record is not None:  # the common record, read in one pass
                out.records += 1
                key, entries = record
                fdb_key = keys[key] if key in keys else _parse_key(out, key, no, perf=False)
                keys[key] = fdb_key
                if fdb_key is not None:
                    out.find[fdb_key] = entries
                elif key in out.key_only_reasons:
                    out.key_only[key] = entries
                continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        out.records += 1
        try:
            key, raw = parse_text_db_line(line)
            if find:
                entries = _find_entries(raw)
                fast.learn(raw)
            else:
                entries_p = [(_name(sv), _params(sv, params)) for sv, params in raw]
        except DbKeyError as e:
            out.bad.append(f"{out.path}:{no}: {e}")
            continue
        fdb_key = keys[key] if key in keys else _parse_key(out, key, no, perf=not find)
        keys[key] = fdb_key
        if fdb_key is None:
            if key in out.key_only_reasons:
                out.key_only[key] = entries
            continue
        if find:
            out.find[fdb_key] = entries
        else:
            out.perf.setdefault(fdb_key, {}).update(entries_p)


def _not_ascii(line: str) -> str:
    """What is wrong with a line read with ``errors="surrogateescape"`` that is not ASCII."""
    column, char = next((i, c) for i, c in enumerate(line, start=1) if not c.isascii())
    raw = line[: column - 1].encode("ascii") + char.encode("utf-8", "surrogateescape")
    return (
        f"holds byte 0x{raw[column - 1]:02x} (column {column}), which is not ASCII: MIOpen's "
        "db files are ASCII"
    )


class _FastFindLines:
    """Reads the common find-db record (entries of solvers and algorithms seen before in the
    file, v2.0 or v1.0, plain times and workspaces) in one pass, with no object per entry
    but the entry itself.

    ``read`` gives None for any other line (blank, comment, a first sight of a solver or
    algorithm, anything doubtful or wrong): the full reader then reads it, gives the same
    entries or names what is wrong, and teaches this one the solvers and algorithms of a
    record it accepted (``learn``). ``test_importdb_files.py`` holds the two to the same
    result.
    """

    def __init__(self) -> None:
        self.solvers: set[str] = set()  # valid solver names that are no algorithm names
        self.algorithms: set[str] = set()  # v2.0 algorithms, stored as written
        self.legacy: set[str] = set()  # v1.0 entry ids (algorithm names)

    def learn(self, raw: list[tuple[str, str]]) -> None:
        """Learn from the entries of a record the full reader accepted."""
        for entry_id, values in raw:
            parts = values.split(",")
            if is_legacy_find_entry(entry_id):
                self.legacy.add(entry_id)
                if not is_legacy_find_entry(parts[0]):
                    self.solvers.add(parts[0])
            else:
                self.solvers.add(entry_id)
                self.algorithms.add(parts[2])

    def read(self, line: str) -> tuple[str, list[FindEntry]] | None:
        text = line.rstrip("\r\n")
        key, eq, body = text.partition("=")
        if (
            not key
            or ":" in key
            or ";" in key
            or "=" in body
            or key[0] == "#"
            or key[0].isspace()
            or key[-1].isspace()
        ):
            return None  # a blank line, a comment, or a record the full reader checks
        solvers, algorithms, legacy = self.solvers, self.algorithms, self.legacy
        entries: list[FindEntry] = []
        if _V2_BODY.fullmatch(body):  # v2.0 entries of plain numbers: split in C
            for solver, time_s, workspace, algorithm in _V2_ENTRY.findall(body):
                time_ms = float(time_s)  # digits, a point and an exponent: it parses
                if solver not in solvers or algorithm not in algorithms or time_ms == _INF:
                    return None
                entries.append(_entry((solver, time_ms, int(workspace), algorithm)))
            if len(entries) > 1 and len({e.solver for e in entries}) != len(entries):
                return None  # an id twice
            return key, entries
        ids: list[str] = []
        for entry in body.split(";"):
            entry_id, _colon, values = entry.partition(":")
            parts = values.split(",")
            if entry_id in solvers and len(parts) == 3:  # v2.0: solver:time,workspace,algo
                solver = entry_id
                time_s, workspace, algorithm = parts
                if algorithm not in algorithms:
                    return None
            elif entry_id in legacy and len(parts) == 5:  # v1.0: algo:solver,time,ws,-,-
                solver, time_s, workspace = parts[0], parts[1], parts[2]
                algorithm = entry_id
                if solver not in solvers:
                    return None
            else:
                return None
            if not workspace.isdigit() or not workspace.isascii() or len(workspace) > 18:
                return None  # 18 digits at most: within WORKSPACE_MAX
            try:
                time_ms = float(time_s)
            except ValueError:
                return None
            if not 0 <= time_ms < _INF:
                return None
            ids.append(entry_id)
            entries.append(_entry((solver, time_ms, int(workspace), algorithm)))
        if len(entries) > 1:
            if len(set(ids)) != len(ids):
                return None
            if len({e.solver for e in entries}) != len(entries):
                found: dict[str, FindEntry] = {}
                for e in entries:  # a v1.0 solver best for two algorithms: keep the faster
                    if e.solver in found:
                        e = min(found[e.solver], e, key=_time)
                    found[e.solver] = e
                entries = list(found.values())
        return key, entries


def _time(e: FindEntry) -> float:
    return e.time_ms


_INF = float("inf")
_V2 = r"([^:;,=]+):([0-9]+(?:\.[0-9]*)?(?:e[-+]?[0-9]+)?),([0-9]{1,18}),([^:;,=]+)"
_V2_ENTRY = re.compile(_V2)
_V2_BODY = re.compile(f"{_V2}(?:;{_V2})*".replace("(", "(?:").replace("(?:?:", "(?:"))


_entry = FindEntry._make
"""``FindEntry(...)`` from a tuple, without the keyword handling of its ``__new__``."""


def _find_entries(raw: list[tuple[str, str]]) -> list[FindEntry]:
    found: dict[str, FindEntry] = {}
    for entry_id, values in raw:
        e = parse_find_entry(entry_id, values)
        _name(e.solver)
        if not (e.time_ms >= 0):
            raise DbKeyError(f"find-db entry {entry_id}:{values}: time {e.time_ms:g} is negative")
        if not 0 <= e.workspace <= WORKSPACE_MAX:
            raise DbKeyError(
                f"find-db entry {entry_id}:{values}: workspace {e.workspace} is outside 0 to "
                f"{WORKSPACE_MAX} (the largest workspace Tuna stores)"
            )
        if not is_algorithm_name(e.algorithm) and e.algorithm not in backend_algorithms():
            raise DbKeyError(
                f"find-db entry of {e.solver}: algorithm {_shown(e.algorithm)!r} is not one of "
                f"MIOpen's algorithm names ({', '.join(ALGORITHMS)})"
            )
        if e.solver in found:  # a v1.0 solver best for two algorithms: keep the faster
            e = min(found[e.solver], e, key=lambda x: x.time_ms)
        found[e.solver] = e
    return list(found.values())


def _shown(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:12]}...({len(text)} characters)"


@functools.cache
def backend_algorithms() -> frozenset[str]:
    """The algorithm names Tuna's own backends give their solvers (a noop session's export
    says ``direct``): accepted on import beside MIOpen's names."""
    return frozenset(
        x.algorithm
        for name in backend_names()
        for x in get_backend(name).solvers()
        if x.algorithm and len(x.algorithm) <= ALGORITHM_MAX and _NAME.fullmatch(x.algorithm)
    )


def _name(solver: str) -> str:
    if len(solver) > NAME_MAX:
        raise DbKeyError(
            f"solver name {solver[:24]!r}... has {len(solver)} characters; Tuna stores names "
            f"of up to {NAME_MAX}"
        )
    if not _NAME.fullmatch(solver) or "," in solver:
        raise DbKeyError(
            f"solver name {solver!r} holds white space, a comma or a character outside "
            "printable ASCII (MIOpen's names never do)"
        )
    return solver


def _params(solver: str, params: str) -> str:
    if len(params.encode()) > PARAMS_MAX:
        raise DbKeyError(
            f"perf-db entry of {solver}: params have {len(params.encode())} bytes; Tuna stores "
            f"up to {PARAMS_MAX}"
        )
    return params


def _parse_key(out: DbFile, key: str, place: str | int, *, perf: bool) -> str | None:
    """The find-db key of ``key`` (a dash key, or for a perf db an x key), with its problem
    (or, for an x key, the problems that share it) recorded; None, recorded bad, if it fails."""
    try:
        if len(key) > KEY_MAX:
            raise DbKeyError(
                f"key {key[:40]!r}... has {len(key)} characters; Tuna stores keys of up to "
                f"{KEY_MAX}"
            )
        if perf and "-" not in key:
            problems = perf_db_key_problems(key)
            out.perf_problems[key] = problems
            return key  # resolved against the catalogue at import
        problem = parse_find_db_key(key)  # which refuses a key it would not write back as is
    except TunaError as e:
        if not perf and is_key_form(key):  # MIOpen's key all the same: kept as written
            out.key_only_reasons[key] = str(e)
            return None
        where = f"{out.path}:{place}" if isinstance(place, int) else place
        out.bad.append(f"{where}: {e}")
        return None
    out.problems[key] = problem
    return key


def _read_perf_sqlite(out: DbFile) -> None:
    keys: dict[str, str | None] = {}
    for n, (columns, solver, params) in enumerate(read_perf_sqlite(out.path), start=1):
        place = f"{out.path}:row {n}"
        xkey = perf_key_of_columns(columns)
        if xkey not in keys:
            keys[xkey] = _parse_key(out, xkey, place, perf=True)
        key = keys[xkey]
        if key is None:
            continue
        try:
            out.perf.setdefault(key, {})[_name(str(solver))] = _params(solver, str(params))
        except DbKeyError as e:
            out.bad.append(f"{place}: {e}")
    out.records = len(keys)


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
    runtime: str | None = None
    key_only: int = 0  # records kept by key alone (no problem Tuna can make of the key)


def import_db_files(
    db: Database,
    session_id: int,
    files: Sequence[DbFile],
    *,
    tag: str | None = None,
    skip_bad: bool = False,
    waiting: Waiting | None = None,
    lock_wait_s: float = LOCK_WAIT_S,
) -> ImportDbReport:
    """Import parsed db files into session ``session_id`` (see the module's docstring)."""
    return _import_db(db, session_id, files, tag, skip_bad, waiting, lock_wait_s)


def import_db_new_session(
    db: Database,
    spec: SessionSpec,
    files: Sequence[DbFile],
    *,
    tag: str | None = None,
    skip_bad: bool = False,
    waiting: Waiting | None = None,
    lock_wait_s: float = LOCK_WAIT_S,
) -> ImportDbReport:
    """Create a session of ``spec`` and import into it, in the import's one transaction: a
    refused, failed or killed import leaves no session (and none of its solver rows)."""
    return _import_db(db, spec, files, tag, skip_bad, waiting, lock_wait_s)


def _import_db(
    db: Database,
    into: int | SessionSpec,
    files: Sequence[DbFile],
    tag: str | None,
    skip_bad: bool,
    waiting: Waiting | None,
    lock_wait_s: float,
) -> ImportDbReport:
    bad = [b for f in files for b in f.bad]
    if bad and not skip_bad:
        raise DbFileRefusedError(bad)
    check_tag(tag)
    runtimes = {f.runtime for f in files if f.runtime is not None}
    if len(runtimes) > 1:
        raise TunaError(
            "the files are of both MIOpen runtimes (HIP and OpenCL); import each into its "
            "own session"
        )
    runtime = runtimes.pop() if runtimes else None
    with (
        _import_lock(db, waiting, lock_wait_s),
        db.session(immediate=True) as s,
        without_cyclic_gc(),
    ):
        session_id = into if isinstance(into, int) else add_session(s, into).id
        report = ImportDbReport(session_id, list(files), skipped=bad)
        _import(s, report, files, tag, runtime)
    for w in report.warnings:  # the report carries them to the caller, who shows them
        log.info("import_db session %d: %s", session_id, w)
    log.info(
        "import_db session %d: %d configs (%d new), %d find rows, %d perf rows",
        session_id, report.configs, report.configs_inserted, report.find_rows, report.perf_rows,
    )  # fmt: skip
    return report


class _import_lock:  # noqa: N801 - a context manager used like a function
    """MySQL's named lock :func:`lock_name`, held on a connection of its own. On SQLite,
    whose write lock (the import's immediate transaction) serialises imports already, a
    wait for that lock, said as MySQL's is: the import's own BEGIN IMMEDIATE gave up after
    its busy timeout with "database is locked" and said nothing while it waited."""

    def __init__(self, db: Database, waiting: Waiting | None, wait_s: float) -> None:
        self.db, self.waiting, self.wait_s = db, waiting, wait_s
        self.conn: Any = None
        self.name = ""

    def __enter__(self) -> None:
        if self.db.is_sqlite:
            self._wait_for_sqlite()
            return
        self.conn = self.db.engine.connect()
        name = self.name = lock_name(str(self.conn.scalar(text("SELECT DATABASE()"))))
        got = self.conn.scalar(text("SELECT GET_LOCK(:n, 0)"), {"n": name})
        if got == 1:
            return
        holder = self.conn.scalar(text("SELECT IS_USED_LOCK(:n)"), {"n": name})
        message = (
            f"waiting for another import_db to finish (it holds the lock {name!r}, "
            f"MySQL connection {holder}); nothing is written until it has"
        )
        log.info("import_db: %s", message)
        if self.waiting is not None:
            self.waiting(message)
        got = self.conn.scalar(text("SELECT GET_LOCK(:n, :t)"), {"n": name, "t": int(self.wait_s)})
        if got != 1:
            self.conn.close()
            raise TunaError(
                f"gave up after {self.wait_s:g} s waiting for another import_db (MySQL "
                f"connection {holder}, lock {name!r}); nothing was imported. Run it "
                "again when that one has finished."
            )

    def __exit__(self, *_exc: object) -> None:
        if self.conn is not None:
            try:
                self.conn.execute(text("SELECT RELEASE_LOCK(:n)"), {"n": self.name})
            finally:
                self.conn.close()

    def _wait_for_sqlite(self) -> None:
        """Return once the database's write lock is free (another writer may take it before
        the import's BEGIN IMMEDIATE: that waits the engine's busy timeout as before)."""
        path = self.db.engine.url.database
        if not path or path == ":memory:":
            return
        deadline = time.monotonic() + self.wait_s
        said = False
        probe = sqlite3.connect(path, timeout=SQLITE_POLL_S, isolation_level=None)
        try:
            while True:
                try:
                    probe.execute("BEGIN IMMEDIATE")
                    probe.execute("ROLLBACK")
                    return
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e) and "busy" not in str(e):
                        raise TunaError(f"SQLite database {path}: {e}") from e
                if not said:
                    said = True
                    message = (
                        f"waiting for another import_db (or another writer) to finish: it "
                        f"holds the write lock of the SQLite database {path}; nothing is "
                        "written until it has"
                    )
                    log.info("import_db: %s", message)
                    if self.waiting is not None:
                        self.waiting(message)
                if time.monotonic() >= deadline:
                    raise TunaError(
                        f"gave up after {self.wait_s:g} s waiting for the write lock of the "
                        f"SQLite database {path}; nothing was imported. Run it again when "
                        "the other writer has finished."
                    )
        finally:
            probe.close()


def _import(
    s: Session,
    report: ImportDbReport,
    files: Sequence[DbFile],
    tag: str | None,
    runtime: str | None,
) -> None:
    session_id = report.session
    sess = session_row(s, session_id)
    backend_name, basename = sess.backend, db_basename(sess.arch, sess.num_cu)
    report.runtime = _runtime(s, sess, runtime)
    backend = get_backend(backend_name)
    known = {x.name: x for x in backend.solvers()}
    library = isinstance(backend, LibraryQueries)
    for f in files:
        target = f.path.name.split(".", 1)[0]
        if "gfx" in target and basename not in target:
            report.warnings.append(
                f"{f.path.name} looks like a db of {target}; session {session_id} is {basename}"
            )
    problems: dict[str, ConvProblem] = {}
    for f in files:
        problems.update(f.problems)
    perf_keys = _resolve_perf_keys(s, files, problems, report)
    find, merged = _find_by_key(files)
    _store_key_only(s, session_id, files, report)
    perf: dict[tuple[str, str], str] = {}
    for f in files:
        for key, by_solver in f.perf.items():
            fdb_key = perf_keys.get(key, key)
            for solver, params in by_solver.items():
                perf[(fdb_key, solver)] = params
    algorithms: dict[str, str] = {}
    for entries in find.values():
        for e in entries:
            algorithms[e.solver] = e.algorithm
    names = sorted(algorithms.keys() | {sv for _k, sv in perf})
    report.new_solvers = [n for n in names if n not in known]
    if report.new_solvers and library:
        report.warnings.append(
            f"{len(report.new_solvers)} solver(s) of the files are not in Tuna's catalogue of "
            f"backend {backend_name!r}; recorded as solvers of its library build: "
            f"{', '.join(report.new_solvers)}"
        )
    elif report.new_solvers:
        report.warnings.append(
            f"{len(report.new_solvers)} solver(s) unknown to backend {backend_name!r} were "
            f"added as its solvers with valid=0 (an export of the session refuses their rows): "
            f"{', '.join(report.new_solvers)}"
        )
    if not problems:
        return
    keys = sorted(problems)
    catalogue = ImportReport(lines=len(keys))
    config_ids = store_entries(
        s,
        [ConvEntry(k, problems[k], None, 0) for k in keys],
        tag=tag,
        report=catalogue,
        driver_of=_driver_line,
    )
    report.configs = len(keys)
    report.configs_inserted = catalogue.inserted
    solver_ids = _solver_ids(s, backend_name, known, report.new_solvers, algorithms, library)
    config_col: list[int] = []
    solver_col: list[int] = []
    time_col: list[float] = []
    workspace_col: list[int] = []
    algorithm_col: list[str] = []
    order_col: list[int | None] = []
    for key in sorted(find):
        entries = find[key]
        config_col += [config_ids[key]] * len(entries)
        order_col += [None] * len(entries) if key in merged else range(len(entries))
        for e in entries:
            solver_col.append(solver_ids[e.solver])
            time_col.append(e.time_ms)
            workspace_col.append(e.workspace)
            algorithm_col.append(e.algorithm)
    n = len(config_col)
    _forget_import_order(s, session_id, sorted({config_ids[key] for key in find}))
    upsert_columns(
        s,
        FindDb,
        {
            "session": [session_id] * n,
            "config": config_col,
            "solver": solver_col,
            "time_ms": time_col,
            "workspace": workspace_col,
            "algorithm": algorithm_col,
            "params": [None] * n,
            "job": [None] * n,
            "kernel": [None] * n,
            "import_order": order_col,
        },
        ("session", "config", "solver"),
    )
    perf_items = sorted(perf.items())
    upsert_columns(
        s,
        PerfDb,
        {
            "session": [session_id] * len(perf_items),
            "config": [config_ids[key] for (key, _sv), _p in perf_items],
            "solver": [solver_ids[solver] for (_k, solver), _p in perf_items],
            "params": [params for _ks, params in perf_items],
            "job": [None] * len(perf_items),
            "kernel": [None] * len(perf_items),
        },
        ("session", "config", "solver"),
    )
    report.find_rows, report.perf_rows = n, len(perf_items)


def _find_by_key(files: Sequence[DbFile]) -> tuple[dict[str, list[FindEntry]], set[str]]:
    """The find entries of the files by key, one per solver: a later file's entry replaces
    an earlier file's for the same (key, solver). And the keys of more than one file: their
    records are no file's as written, so they keep no import order."""
    if len(files) == 1:
        return files[0].find, set()
    by_key: dict[str, dict[str, FindEntry]] = {}
    merged: set[str] = set()
    for f in files:
        for key, entries in f.find.items():
            if key in by_key:
                merged.add(key)
            by_solver = by_key.setdefault(key, {})
            for e in entries:
                by_solver[e.solver] = e
    return {key: list(by_solver.values()) for key, by_solver in by_key.items()}, merged


def _forget_import_order(s: Session, session_id: int, configs: list[int]) -> None:
    """The session's rows of ``configs`` lose their import order before new rows of those
    configs are imported: a row the new record does not replace makes the record one no
    file holds as written, which then exports in Tuna's order."""
    for part in chunks(configs, 1000):
        s.execute(
            update(FindDb)
            .where(
                FindDb.session == session_id,
                FindDb.config.in_(part),
                FindDb.import_order.is_not(None),
            )
            .values(import_order=None)
        )


def _store_key_only(
    s: Session, session_id: int, files: Sequence[DbFile], report: ImportDbReport
) -> None:
    """Upsert the files' key-only records (a later file's record replaces an earlier one's)."""
    records: dict[str, tuple[list[FindEntry], str]] = {}
    for f in files:
        for key, entries in f.key_only.items():
            records[key] = (entries, f.key_only_reasons[key])
    keys = sorted(records)
    upsert_columns(
        s,
        KeyOnlyRecord,
        {
            "session": [session_id] * len(keys),
            "fdb_key": keys,
            "entries": [";".join(e.text() for e in records[k][0]) for k in keys],
            "reason": [records[k][1] for k in keys],
        },
        ("session", "fdb_key"),
    )
    report.key_only = len(keys)


def _driver_line(entry: ConvEntry) -> str | None:
    """The MIOpenDriver line of a key's problem, None where it has none (INT8, "same")."""
    try:
        return to_driver_line(entry.problem)
    except InvalidProblemError:
        return None


def _runtime(s: Session, sess: TuningSession, runtime: str | None) -> str | None:
    """The session's runtime after this import: what the files say, if the session agrees."""
    current = sess.runtime or "HIP"
    if runtime is None or runtime == current:
        return sess.runtime
    if sess.runtime is None and runtime == "OpenCL":
        has_rows = s.scalar(select(func.count()).where(FindDb.session == sess.id))
        if not has_rows:
            s.execute(
                update(TuningSession).where(TuningSession.id == sess.id).values(runtime=runtime)
            )
            return runtime
    raise TunaError(
        f"session {sess.id} holds MIOpen {current} results; the files are {runtime} find dbs. "
        f"Import them into a session of their own (import_db --arch ... creates one)"
    )


def _resolve_perf_keys(
    s: Session, files: Sequence[DbFile], problems: dict[str, ConvProblem], report: ImportDbReport
) -> dict[str, str]:
    """The find-db key each perf-db x key of the files goes to (adding its problem to
    ``problems``): the catalogue's config where one shares the key, else the first."""
    choices: dict[str, list[ConvProblem]] = {}
    for f in files:
        choices.update(f.perf_problems)
    candidates = sorted({find_db_key(p) for ps in choices.values() if len(ps) > 1 for p in ps})
    present: set[str] = set()
    for part in chunks(candidates, 1000):
        present.update(s.scalars(select(ConvConfig.fdb_key).where(ConvConfig.fdb_key.in_(part))))
    resolved: dict[str, str] = {}
    for xkey, found in choices.items():
        keys = [find_db_key(p) for p in found]
        matching = [k for k in keys if k in present]
        pick = matching[0] if matching else keys[0]
        if len(matching) > 1:
            report.warnings.append(
                f"perf-db key {xkey} could be {len(matching)} configs of the catalogue "
                f"({', '.join(matching)}); imported to {pick}"
            )
        resolved[xkey] = pick
        problems[pick] = found[keys.index(pick)]
    return resolved


def _solver_ids(
    s: Session,
    backend: str,
    known: dict[str, Any],
    new: list[str],
    algorithms: dict[str, str],
    library: bool,
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
            "valid": library,
        }
        for name in new
    ]
    insert_missing(s, Solver, rows)
    if library and new:  # recorded before as not valid (an older import): the library's now
        s.execute(
            update(Solver)
            .where(Solver.backend == backend, Solver.name.in_(new), Solver.valid.is_(False))
            .values(valid=True)
        )
    q = select(Solver.name, Solver.id).where(Solver.backend == backend)
    return dict(s.execute(q).all())


__all__ = [
    "ConvEntry",
    "DbFile",
    "DbFileRefusedError",
    "ImportDbReport",
    "import_db_files",
    "import_db_new_session",
    "read_db_file",
]
