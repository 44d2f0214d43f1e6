"""merge_db: layer one MIOpen db file over another, as MIOpen layers a user db over a system db.

* find db: a record of the top file replaces the base's record for that key entirely
  (``MultiFileDb<..., merge=false>``, reference §4.1): a find result is only meaningful
  together with the other solvers measured with it;
* perf db (text or sqlite): per key, the entries are merged by solver and the top file's
  entry wins (``MultiFileDb<..., merge=true>``, §3.2);
* kernel db: per (kernel_name, kernel_args), the top file's kernel wins; every kernel's md5
  is checked first.

Both files must be of the same kind. The result is written in Tuna's export form: keys
sorted, find entries fastest first with equal times by MIOpen's solver id (v2.0 entries;
legacy v1.0 records are converted), perf entries by solver name. The inputs are not changed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tuna.backends import get_backend
from tuna.errors import TunaError
from tuna.results.dbfiles import (
    KernDbWriter,
    file_format,
    read_kern_db,
    read_perf_sqlite,
    write_perf_sqlite,
    write_text_lines,
)
from tuna.results.formats import (
    BadRecord,
    DbFileError,
    FileFormat,
    FindEntry,
    KdbRow,
    PerfColumns,
    by_time,
    find_db_line,
    perf_db_line,
    perf_key_of_columns,
    read_find_db,
    read_perf_db_text,
)

log = logging.getLogger(__name__)

#: The backend whose library writes these files: its solvers' numeric ids order equal times.
LIBRARY = "miopen"


@dataclass(frozen=True)
class MergeReport:
    """``records``: keys (or kernels) in each input and in the output; ``replaced``: keys the
    top file replaced (find) or merged into (perf, kernels); ``added``: keys only it has."""

    format: FileFormat
    output: Path
    base_records: int
    top_records: int
    replaced: int
    added: int
    records: int
    entries: int


def merge_db(base: Path, top: Path, output: Path) -> MergeReport:
    """Write ``top`` layered over ``base`` to ``output``."""
    for p in (base, top):
        if not p.is_file():
            raise DbFileError(f"{p}: no such file")
    if output.resolve() in (base.resolve(), top.resolve()):
        raise TunaError(f"{output}: the output would overwrite an input; choose another -o")
    if not output.parent.is_dir():
        raise TunaError(f"-o {output}: directory {output.parent} does not exist; create it first")
    fmt, top_fmt = file_format(base), file_format(top)
    if fmt != top_fmt:
        raise TunaError(f"cannot merge {base} ({fmt}) with {top} ({top_fmt}): not the same kind")
    if fmt == "find-text":
        report = _merge_find(base, top, output)
    elif fmt == "perf-text":
        report = _merge_perf_text(base, top, output)
    elif fmt == "perf-sqlite":
        report = _merge_perf_sqlite(base, top, output)
    else:
        report = _merge_kern(base, top, output)
    log.info("merge %s over %s -> %s (%s)", top, base, output, fmt)
    return report


def _refuse(path: Path, bad: list[BadRecord]) -> None:
    if bad:
        lines = "\n".join(f"  {path}:{b.line_no}: {b.reason}" for b in bad[:200])
        raise DbFileError(f"{path}: {len(bad)} bad record(s); nothing was merged:\n{lines}")


def _read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="ascii", errors="replace").splitlines()


def _merge_find(base: Path, top: Path, output: Path) -> MergeReport:
    base_records, bad = read_find_db(_read_lines(base))
    _refuse(base, bad)
    top_records, bad = read_find_db(_read_lines(top))
    _refuse(top, bad)
    merged: dict[str, tuple[FindEntry, ...]] = {r.key: r.entries for r in base_records}
    replaced = sum(1 for r in top_records if r.key in merged)
    merged.update({r.key: r.entries for r in top_records})
    keys = sorted(merged)
    ids = {s.name: s.numeric_id for s in get_backend(LIBRARY).solvers() if s.numeric_id is not None}
    write_text_lines(output, (find_db_line(k, by_time(merged[k], ids)) for k in keys))
    return MergeReport(
        "find-text",
        output,
        len(base_records),
        len(top_records),
        replaced,
        len(top_records) - replaced,
        len(keys),
        sum(len(e) for e in merged.values()),
    )


def _merge_by_solver(
    base: Iterable[tuple[str, Iterable[tuple[str, str]]]],
    top: Iterable[tuple[str, Iterable[tuple[str, str]]]],
) -> tuple[dict[str, dict[str, str]], int, int, int, int]:
    """(key -> solver -> params, base keys, top keys, keys in both, keys only in top)."""
    merged: dict[str, dict[str, str]] = {}
    for key, entries in base:
        merged.setdefault(key, {}).update(entries)
    n_base = len(merged)
    top_keys: set[str] = set()
    replaced = 0
    for key, entries in top:
        if key not in top_keys and key in merged:
            replaced += 1
        top_keys.add(key)
        merged.setdefault(key, {}).update(entries)
    return merged, n_base, len(top_keys), replaced, len(top_keys) - replaced


def _merge_perf_text(base: Path, top: Path, output: Path) -> MergeReport:
    base_records, bad = read_perf_db_text(_read_lines(base))
    _refuse(base, bad)
    top_records, bad = read_perf_db_text(_read_lines(top))
    _refuse(top, bad)
    merged, n_base, n_top, replaced, added = _merge_by_solver(
        ((r.key, r.entries) for r in base_records), ((r.key, r.entries) for r in top_records)
    )
    keys = sorted(merged)
    write_text_lines(output, (perf_db_line(k, sorted(merged[k].items())) for k in keys))
    entries = sum(len(e) for e in merged.values())
    return MergeReport("perf-text", output, n_base, n_top, replaced, added, len(keys), entries)


def _perf_sqlite_rows(
    path: Path,
) -> tuple[dict[str, PerfColumns], list[tuple[str, list[tuple[str, str]]]]]:
    columns: dict[str, PerfColumns] = {}
    rows: list[tuple[str, list[tuple[str, str]]]] = []
    for cols, solver, params in read_perf_sqlite(path):
        key = perf_key_of_columns(cols)
        columns.setdefault(key, cols)
        rows.append((key, [(solver, params)]))
    return columns, rows


def _merge_perf_sqlite(base: Path, top: Path, output: Path) -> MergeReport:
    base_columns, base_rows = _perf_sqlite_rows(base)
    top_columns, top_rows = _perf_sqlite_rows(top)
    merged, n_base, n_top, replaced, added = _merge_by_solver(base_rows, top_rows)
    columns = {**base_columns, **top_columns}
    keys = sorted(merged)
    entries = write_perf_sqlite(output, ((columns[k], sorted(merged[k].items())) for k in keys))
    return MergeReport("perf-sqlite", output, n_base, n_top, replaced, added, len(keys), entries)


def _checked_kernels(path: Path) -> list[KdbRow]:
    rows = list(read_kern_db(path))
    bad = [
        f"  {path}: kernel {r.kernel_name} ({r.kernel_args}): {problem}"
        for r in rows
        if (problem := r.problem()) is not None
    ]
    if bad:
        raise DbFileError(
            f"{path}: {len(bad)} corrupt kernel(s); nothing was merged:\n" + "\n".join(bad)
        )
    return rows


def _merge_kern(base: Path, top: Path, output: Path) -> MergeReport:
    base_rows, top_rows = _checked_kernels(base), _checked_kernels(top)
    base_ids = {(r.kernel_name, r.kernel_args) for r in base_rows}
    top_ids = {(r.kernel_name, r.kernel_args) for r in top_rows}
    writer = KernDbWriter(output)
    try:
        for r in [*base_rows, *top_rows]:
            writer.add(r)  # INSERT OR REPLACE: the top file's kernel wins
        writer.commit()
    except BaseException:
        writer.discard()
        raise
    replaced = len(base_ids & top_ids)
    total = len(base_ids | top_ids)
    return MergeReport(
        "kern-sqlite", output, len(base_ids), len(top_ids), replaced, len(top_ids) - replaced,
        total, total,
    )  # fmt: skip
