"""MIOpen's db files on disk: reading them, and writing them atomically.

The text grammar, the DDL and the file names are in :mod:`tuna.results.formats` (values
in, values out); this module opens, reads and writes files with them. Files are written to
a temporary name beside the target and renamed into place, so a failed write never leaves
a partial file under the final name.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from tuna.problems.keys import PERF_DB_COLUMNS
from tuna.results.formats import (
    KERN_DB_DDL,
    PERF_DB_DDL,
    SQLITE_MAGIC,
    DbFileError,
    FileFormat,
    KdbRow,
    PerfColumns,
    detect_format,
)


def sqlite_tables(path: Path) -> list[str]:
    with contextlib.closing(_connect_ro(path)) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]


def file_format(path: Path) -> FileFormat:
    """``detect_format`` for a file on disk."""
    try:
        with path.open("rb") as f:
            head = f.read(64 * 1024)
    except OSError as e:
        raise DbFileError(f"{path}: cannot read: {e.strerror or e}") from e
    tables = sqlite_tables(path) if head.startswith(SQLITE_MAGIC) else []
    return detect_format(path.name, head, tables)


# --- atomic writes -------------------------------------------------------------------------------


class PendingFile:
    """A temporary file beside ``target`` that becomes ``target`` on :meth:`commit`."""

    def __init__(self, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        self.target = target
        self.path = Path(tmp)

    def commit(self) -> None:
        os.chmod(self.path, 0o644)
        os.replace(self.path, self.target)

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target``, renamed onto it when the block succeeds."""
    pending = PendingFile(target)
    try:
        yield pending.path
        pending.commit()
    finally:
        pending.discard()


def write_text_lines(target: Path, lines: Iterable[str]) -> int:
    """Write ``lines`` (each ends with a newline here) to ``target``; returns the line count."""
    n = 0
    with atomic_path(target) as tmp, tmp.open("w", encoding="ascii", newline="\n") as f:
        for line in lines:
            f.write(line)
            f.write("\n")
            n += 1
    return n


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path), isolation_level=None)


def _connect_ro(path: Path) -> sqlite3.Connection:
    try:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise DbFileError(f"{path}: cannot open as sqlite: {e}") from e


def write_perf_sqlite(
    target: Path, records: Iterable[tuple[PerfColumns, Sequence[tuple[str, str]]]]
) -> int:
    """Write a sqlite perf db: one ``config`` row per record (ids in the order given) and its
    (solver, params) entries as ``perf_db`` rows. Returns the number of ``perf_db`` rows."""
    cols = ",".join(PERF_DB_COLUMNS)
    put_config = f"INSERT INTO config (id,{cols}) VALUES (?{',?' * len(PERF_DB_COLUMNS)})"
    put_perf = "INSERT INTO perf_db (id, solver, config, params) VALUES (?, ?, ?, ?)"
    rows = 0
    with atomic_path(target) as tmp, contextlib.closing(_connect(tmp)) as conn:
        for ddl in PERF_DB_DDL:
            conn.execute(ddl)
        conn.execute("BEGIN")
        for config_id, (columns, entries) in enumerate(records, start=1):
            conn.execute(put_config, (config_id, *(columns[c] for c in PERF_DB_COLUMNS)))
            for solver, params in entries:
                rows += 1
                conn.execute(put_perf, (rows, solver, config_id, params))
        conn.execute("COMMIT")
    return rows


def read_perf_sqlite(path: Path) -> Iterator[tuple[PerfColumns, str, str]]:
    """(config columns, solver, params) for every ``perf_db`` row, by config id then solver."""
    cols = ", ".join(f"c.{c}" for c in PERF_DB_COLUMNS)
    query = (
        f"SELECT {cols}, p.solver, p.params FROM perf_db p JOIN config c ON c.id = p.config "
        "ORDER BY c.id, p.solver"
    )
    with contextlib.closing(_connect_ro(path)) as conn:
        try:
            for row in conn.execute(query):
                yield dict(zip(PERF_DB_COLUMNS, row[:-2], strict=True)), row[-2], row[-1]
        except sqlite3.Error as e:
            raise DbFileError(f"{path}: not a MIOpen sqlite perf db: {e}") from e


class KernDbWriter:
    """Adds rows to a new kernel db; the file appears under its name only on :meth:`commit`."""

    def __init__(self, target: Path) -> None:
        self._file = PendingFile(target)
        self._conn = _connect(self._file.path)
        for ddl in KERN_DB_DDL:
            self._conn.execute(ddl)
        self._conn.execute("BEGIN")
        self.rows = 0

    def add(self, row: KdbRow) -> None:
        """Insert or replace (MIOpen's own store) by (kernel_name, kernel_args)."""
        self._conn.execute(
            "INSERT OR REPLACE INTO kern_db (kernel_name, kernel_args, kernel_blob, kernel_hash, "
            "uncompressed_size) VALUES (?, ?, ?, ?, ?)",
            (row.kernel_name, row.kernel_args, row.blob, row.kernel_hash, row.uncompressed_size),
        )
        self.rows += 1

    def commit(self) -> None:
        self._conn.execute("COMMIT")
        self._conn.close()
        self._file.commit()

    def discard(self) -> None:
        """Drop everything written: no file is left behind."""
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()
        self._file.discard()


def read_kern_db(path: Path) -> Iterator[KdbRow]:
    """Every ``kern_db`` row, by id."""
    query = (
        "SELECT kernel_name, kernel_args, kernel_blob, kernel_hash, uncompressed_size "
        "FROM kern_db ORDER BY id"
    )
    with contextlib.closing(_connect_ro(path)) as conn:
        try:
            for name, args, blob, digest, size in conn.execute(query):
                yield KdbRow(name, args, bytes(blob), digest, int(size))
        except sqlite3.Error as e:
            raise DbFileError(f"{path}: not a MIOpen kernel db: {e}") from e
