"""MIOpen's db files, values in and values out (reference: miopen_formats.md §3-§5, §7).

No Tuna database and no file here: these functions turn values into the text and rows
MIOpen reads and back. :mod:`tuna.results.dbfiles` reads and writes the files with them.

* find db, text: ``KEY=Solver:time_ms,workspace,algorithm;...`` (v2.0, §4.2); the legacy
  algorithm-keyed v1.0 entries (§4.3) are read and converted to v2.0, never written.
* perf db, text: ``KEY=Solver:params;...`` (§3.3), with the x-joined key of ROCm >= 6.2 or
  the legacy dash key;
* perf db, sqlite: MIOpen's ``config`` and ``perf_db`` tables with the exact DDL of §3.1;
* kernel db, sqlite: ``kern_db`` (§5), bzip2 blobs, md5 of the uncompressed bytes.

"""

from __future__ import annotations

import bz2
import hashlib
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from tuna.backends.base import RUNTIMES
from tuna.errors import DbKeyError, TunaError
from tuna.problems.keys import (
    PERF_DB_COLUMNS,
    is_legacy_find_entry,
    legacy_find_entry_as_v2,
    parse_text_db_line,
)


class DbFileError(TunaError):
    """Raised when a MIOpen db file cannot be read or written as the kind it claims to be."""


# --- file names (§7) ---------------------------------------------------------------------------

_GPU_ARCH = re.compile(r"gfx[0-9a-f]+")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


def is_gpu_arch(arch: str) -> bool:
    """Whether ``arch`` names an AMD GPU target (``gfx90a``, ``gfx942:sramecc+:xnack-``)."""
    return _GPU_ARCH.fullmatch(arch.split(":", 1)[0]) is not None


def db_arch(arch: str) -> str:
    """The arch part of a db file name.

    A GPU target loses its features (``gfx90a:sramecc+:xnack-`` -> ``gfx90a``, as MIOpen's
    DbId starts). Any other arch (a CPU backend's ``x86_64-avx2``) keeps its text with every
    character outside ``[A-Za-z0-9_-]`` replaced by ``_``, so it stays one file-name field.
    """
    if is_gpu_arch(arch):
        return arch.split(":", 1)[0]
    return _UNSAFE_NAME.sub("_", arch) or "unknown"


def db_basename(arch: str, num_cu: int) -> str:
    """MIOpen's ``GetDbBasename``: gfx90a, 104 CUs -> ``gfx90a68``; gfx906, 60 -> ``gfx906_60``.

    CU counts above 64 are written in lowercase hex with no separator, others as ``_<decimal>``.
    A non-GPU arch always gets ``_<decimal>``: its name is not parsed by MIOpen, and a hex
    suffix on a name like ``x86_64-avx2`` would be ambiguous.
    """
    name = db_arch(arch)
    if is_gpu_arch(arch) and num_cu > 64:
        return f"{name}{num_cu:x}"
    return f"{name}_{num_cu}"


FileKind = Literal["find", "perf", "kern"]


def export_file_names(
    basename: str, kind: FileKind, *, gpu: bool, runtime: str = "HIP"
) -> list[str]:
    """The file names an export of ``kind`` writes (§4.1, §3.2, §5).

    find: ``<base>.<runtime>.fdb.txt``, ``runtime`` being MIOpen's backend, ``HIP`` or
    ``OpenCL`` (``<base>.fdb.txt`` for a non-GPU arch: the field names MIOpen's GPU
    runtime); perf: the sqlite ``<base>.db`` and the text ``<base>.db.txt``; kern:
    ``<base>.kdb``.
    """
    if runtime not in RUNTIMES:
        raise TunaError(f"runtime {runtime!r} is not one of {', '.join(RUNTIMES)}")
    if kind == "find":
        return [f"{basename}.{runtime}.fdb.txt" if gpu else f"{basename}.fdb.txt"]
    if kind == "perf":
        return [f"{basename}.db", f"{basename}.db.txt"]
    return [f"{basename}.kdb"]


# --- which kind of file is this ------------------------------------------------------------------

SQLITE_MAGIC = b"SQLite format 3\x00"

FileFormat = Literal["find-text", "perf-text", "perf-sqlite", "kern-sqlite"]


def detect_format(name: str, head: bytes, tables: Sequence[str] = ()) -> FileFormat:
    """What a db file holds, from its name, its first bytes and (sqlite) its table names.

    Sqlite files are told apart by their tables (``kern_db`` or ``perf_db`` + ``config``).
    Text files by the name's fields (``.fdb``/``.ufdb`` -> find; ``.db``, ``.udb``,
    ``.pdb``, ``.updb`` -> perf), else by the first record: entries whose id is an
    algorithm name, or whose values end in one, are find-db entries.
    """
    if head.startswith(SQLITE_MAGIC):
        if "kern_db" in tables:
            return "kern-sqlite"
        if "perf_db" in tables and "config" in tables:
            return "perf-sqlite"
        raise DbFileError(
            f"{name}: a sqlite file with neither MIOpen's kern_db table nor its config and "
            f"perf_db tables (it has: {', '.join(tables) or 'no tables'})"
        )
    fields = {f.lower() for f in name.split(".")[1:]}
    if fields & {"kdb", "ukdb"}:
        raise DbFileError(f"{name}: a kernel db must be a sqlite file")
    if fields & {"fdb", "ufdb"}:
        return "find-text"
    if fields & {"db", "udb", "pdb", "updb"}:
        return "perf-text"
    text = head.decode("utf-8", errors="replace")
    first = next((line for line in text.splitlines() if line.strip()), None)
    if first is None:
        raise DbFileError(f"{name}: empty, and its name does not say what it holds")
    try:
        _key, entries = parse_text_db_line(first)
    except DbKeyError as e:
        raise DbFileError(f"{name}: not a MIOpen text db ({e})") from e
    if all(_looks_like_find_entry(i, v) for i, v in entries):
        return "find-text"
    return "perf-text"


def _looks_like_find_entry(entry_id: str, values: str) -> bool:
    if is_legacy_find_entry(entry_id):
        return True
    parts = values.split(",")
    return len(parts) == 3 and is_legacy_find_entry(parts[2])


# --- text records --------------------------------------------------------------------------------

_TEXT_SEPARATORS = re.compile(r"[;:=\r\n]")
_ENTRY_SEPARATORS = re.compile(r"[;:=,\r\n]")
_NOT_PRINTABLE_ASCII = re.compile(r"[^ -~]")


def text_field_problem(value: str, *, commas: bool) -> str | None:
    """Why ``value`` cannot be a text-db id or value (§3.3), or None when it can: MIOpen's
    text dbs are printable ASCII, and the files are written so."""
    if not value:
        return "is empty"
    bad = (_TEXT_SEPARATORS if commas else _ENTRY_SEPARATORS).search(value)
    if bad:
        return f"holds {bad.group()!r}, a separator of the text db format"
    bad = _NOT_PRINTABLE_ASCII.search(value)
    if bad:
        return f"holds {bad.group()!r}, a character outside printable ASCII"
    return None


def format_time(time_ms: float) -> str:
    """A find-db time as MIOpen writes it: the default ostream precision, 6 significant digits."""
    return f"{time_ms:g}"


class FindEntry(NamedTuple):
    """One solver's entry in a find-db record (a named tuple: an import makes one per entry,
    and a tuple is made in a fraction of a frozen dataclass's time)."""

    solver: str
    time_ms: float
    workspace: int
    algorithm: str

    def text(self) -> str:
        return f"{self.solver}:{self.time_ms:g},{self.workspace},{self.algorithm}"


def find_db_line(key: str, entries: Iterable[FindEntry]) -> str:
    """``KEY=Solver:time,workspace,algorithm;...`` in the order given (no newline)."""
    return key + "=" + ";".join(e.text() for e in entries)


def by_time(entries: Iterable[FindEntry], solver_ids: Mapping[str, int]) -> list[FindEntry]:
    """Fastest first; equal times ordered as MIOpen orders them, by the library's numeric
    solver id (``solver_ids``, by name; a name it lacks comes after the known ones, by
    name), as an export does."""

    def time_then_solver_id(e: FindEntry) -> tuple[float, bool, int, str]:
        sid = solver_ids.get(e.solver)
        return (e.time_ms, sid is None, sid or 0, e.solver)

    return sorted(entries, key=time_then_solver_id)


def parse_find_entry(entry_id: str, values: str) -> FindEntry:
    """A v2.0 entry, or a v1.0 one converted to v2.0 as MIOpen does (§4.3)."""
    solver = entry_id
    if is_legacy_find_entry(entry_id):
        solver, values = legacy_find_entry_as_v2(entry_id, values)
    parts = values.split(",")
    where = f"find-db entry {entry_id}:{values}"
    if len(parts) != 3:
        raise DbKeyError(f"{where}: expected time,workspace,algorithm")
    try:
        time_ms = float(parts[0])
    except ValueError:
        raise DbKeyError(f"{where}: time {parts[0]!r} is not a number") from None
    if not math.isfinite(time_ms):
        raise DbKeyError(f"{where}: time {parts[0]!r} is not a finite number")
    if not re.fullmatch(r"-?[0-9]{1,20}", parts[1]):
        ws = parts[1] if len(parts[1]) <= 24 else f"{parts[1][:12]}...({len(parts[1])} characters)"
        raise DbKeyError(f"{where}: workspace {ws!r} is not an integer of at most 20 digits")
    if not parts[2]:
        raise DbKeyError(f"{where}: no algorithm")
    return FindEntry(solver, time_ms, int(parts[1]), parts[2])


@dataclass(frozen=True)
class FindRecord:
    key: str
    entries: tuple[FindEntry, ...]
    line_no: int


@dataclass(frozen=True)
class PerfRecord:
    key: str
    entries: tuple[tuple[str, str], ...]  # (solver, params)
    line_no: int


@dataclass(frozen=True)
class BadRecord:
    line_no: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line_no}: {self.reason}"


def _records(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    for no, line in enumerate(lines, start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield no, line.rstrip("\r\n")


def read_find_db(lines: Iterable[str]) -> tuple[list[FindRecord], list[BadRecord]]:
    """The records of a text find db (v2.0 and v1.0 entries), and the lines that are not."""
    records: list[FindRecord] = []
    bad: list[BadRecord] = []
    for no, line in _records(lines):
        try:
            key, raw = parse_text_db_line(line)
            entries: dict[str, FindEntry] = {}
            for entry_id, values in raw:
                e = parse_find_entry(entry_id, values)
                if e.solver in entries:  # a v1.0 solver best for two algorithms: keep the faster
                    e = min(entries[e.solver], e, key=lambda x: x.time_ms)
                entries[e.solver] = e
        except DbKeyError as e:
            bad.append(BadRecord(no, str(e)))
            continue
        records.append(FindRecord(key, tuple(entries.values()), no))
    return records, bad


def perf_db_line(key: str, entries: Iterable[tuple[str, str]]) -> str:
    """``KEY=Solver:params;...`` in the order given (no newline)."""
    return key + "=" + ";".join(f"{solver}:{params}" for solver, params in entries)


def read_perf_db_text(lines: Iterable[str]) -> tuple[list[PerfRecord], list[BadRecord]]:
    """The records of a text perf db (x key or dash key), and the lines that are not."""
    records: list[PerfRecord] = []
    bad: list[BadRecord] = []
    for no, line in _records(lines):
        try:
            key, entries = parse_text_db_line(line)
        except DbKeyError as e:
            bad.append(BadRecord(no, str(e)))
            continue
        records.append(PerfRecord(key, tuple(entries), no))
    return records, bad


# --- perf db, sqlite (§3.1) ----------------------------------------------------------------------

# Exactly the DDL of the shipped system dbs (the reference's line wraps removed).
PERF_DB_DDL: tuple[str, ...] = (
    "CREATE TABLE `config` (`id` INTEGER PRIMARY KEY ASC,`layout` TEXT NOT NULL,"
    "`data_type` TEXT NOT NULL,`direction` TEXT NOT NULL,`spatial_dim` INT NOT NULL,"
    "`in_channels` INT NOT NULL,`in_h` INT NOT NULL,`in_w` INT NOT NULL,`in_d` INT NOT NULL,"
    "`fil_h` INT NOT NULL,`fil_w` INT NOT NULL,`fil_d` INT NOT NULL,"
    "`out_channels` INT NOT NULL, `batchsize` INT NOT NULL,`pad_h` INT NOT NULL,"
    "`pad_w` INT NOT NULL,`pad_d` INT NOT NULL,`conv_stride_h` INT NOT NULL,"
    "`conv_stride_w` INT NOT NULL,`conv_stride_d` INT NOT NULL,`dilation_h` INT NOT NULL,"
    "`dilation_w` INT NOT NULL,`dilation_d` INT NOT NULL,`bias` INT NOT NULL,"
    "`group_count` INT NOT NULL)",
    "CREATE UNIQUE INDEX `idx_config` ON config( layout,data_type,direction,spatial_dim,"
    "in_channels,in_h,in_w,in_d,fil_h,fil_w,fil_d,out_channels,batchsize,pad_h,pad_w,pad_d,"
    "conv_stride_h,conv_stride_w,conv_stride_d,dilation_h,dilation_w,dilation_d,bias,"
    "group_count )",
    "CREATE TABLE `perf_db` (`id` INTEGER PRIMARY KEY ASC,`solver` TEXT NOT NULL,"
    "`config` INTEGER NOT NULL,`params` TEXT NOT NULL)",
    "CREATE UNIQUE INDEX `idx_perf_db` ON perf_db(solver, config)",
)

PerfColumns = dict[str, int | str]
"""A ``config`` row: the 24 columns of ``tuna.problems.keys.PERF_DB_COLUMNS``."""

PERF_KEY_ORDER = PERF_DB_COLUMNS[3:] + PERF_DB_COLUMNS[:3]


def perf_key_of_columns(columns: PerfColumns) -> str:
    """The text perf-db key of a ``config`` row: integers, then layout, type and direction
    joined by ``x`` (``VisitAll``, §3.2), as ``tools/sqlite2txt`` writes it."""
    return "x".join(str(columns[c]) for c in PERF_KEY_ORDER)


PERF_LOOKUP = (
    "SELECT solver, params FROM perf_db INNER JOIN config ON perf_db.config = config.id WHERE "
    + " AND ".join(f"config.{c} = ?" for c in PERF_DB_COLUMNS)
)
"""MIOpen's lookup (§3.1), with one ``?`` per ``PERF_DB_COLUMNS`` entry, in that order."""


# --- kernel db (§5) ------------------------------------------------------------------------------

KERN_DB_DDL: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS `kern_db` (`id` INTEGER PRIMARY KEY ASC,"
    "`kernel_name` TEXT NOT NULL,`kernel_args` TEXT NOT NULL,`kernel_blob` BLOB NOT NULL,"
    "`kernel_hash` TEXT NOT NULL,`uncompressed_size` INT NOT NULL);",
    "CREATE UNIQUE INDEX IF NOT EXISTS `idx_kern_db` ON kern_db(kernel_name, kernel_args);",
)


def kdb_name_args(name: str, args: str, arch: str) -> tuple[str, str]:
    """The ``(kernel_name, kernel_args)`` MIOpen stores a kernel under and looks it up by (§5).

    ``name`` and ``args`` are the program file and build options as fin reports them
    (``kernel_file``, ``comp_options``, which usually start with a space). As
    ``Handle::LoadProgram`` and ``SaveBinary`` form them (and fin's evaluate steps, which
    load kernels the same way): the name gets ``.o``; the args get `` -mcpu=<arch>``, the
    arch without its target features, unless the program is ``.mlir``. Nothing else
    changes, not a space: the lookup compares the strings exactly. A name that ends in ``.o``
    already has this form (fin's own test) and is kept with its args, and so is every kernel
    of a non-GPU arch (a CPU backend's shared objects are no MIOpen programs).
    """
    if not is_gpu_arch(arch) or name.endswith(".o"):
        return name, args
    if name.endswith(".mlir"):
        return f"{name}.o", args
    return f"{name}.o", f"{args} -mcpu={db_arch(arch)}"


def pack_kdb_blob(code: bytes) -> tuple[bytes, int]:
    """(blob, uncompressed_size) as MIOpen stores a code object.

    bzip2 with block size 9 and work factor 30 into a buffer the size of the input: when the
    compressed bytes would not fit, the raw bytes are stored with ``uncompressed_size = 0``.
    """
    packed = bz2.compress(code, 9)
    if len(packed) > len(code):
        return code, 0
    return packed, len(code)


def unpack_kdb_blob(blob: bytes, uncompressed_size: int) -> bytes:
    """The code object of a ``kern_db`` row (``DbFileError`` if the blob is not bzip2)."""
    if not uncompressed_size:
        return bytes(blob)
    try:
        return bz2.decompress(blob)
    except (OSError, ValueError) as e:
        raise DbFileError(f"kernel blob is not bzip2 data: {e}") from e


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class KdbRow:
    """A ``kern_db`` row as stored: ``blob`` is packed, ``kernel_hash`` the md5 of the code."""

    kernel_name: str
    kernel_args: str
    blob: bytes
    kernel_hash: str
    uncompressed_size: int

    @classmethod
    def of(cls, name: str, args: str, code: bytes) -> KdbRow:
        blob, size = pack_kdb_blob(code)
        return cls(name, args, blob, md5_hex(code), size)

    def code(self) -> bytes:
        return unpack_kdb_blob(self.blob, self.uncompressed_size)

    def problem(self) -> str | None:
        """Why MIOpen would refuse this row on load, or None."""
        try:
            code = self.code()
        except DbFileError as e:
            return str(e)
        if self.uncompressed_size and len(code) != self.uncompressed_size:
            return (
                f"uncompressed_size {self.uncompressed_size} but the blob unpacks to "
                f"{len(code)} bytes"
            )
        if md5_hex(code) != self.kernel_hash:
            return f"md5 of the code object is {md5_hex(code)}, not kernel_hash {self.kernel_hash}"
        return None
