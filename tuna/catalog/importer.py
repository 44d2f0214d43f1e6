"""import_configs: MIOpenDriver lines -> tagged catalogue rows, in bulk, all or nothing.

Lines are parsed first; a bad line stops the import before anything is written unless
the caller allows skipping. The writes then happen in one transaction with a handful of
bulk statements (tensors, configs, tags), never a round trip per line.

(Overlapping the writes with the parsing in a second thread was tried and was slower: the
writer's many short waits on the server each cost a GIL hand-over from the parser.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, tuple_
from sqlalchemy.orm import Session

from tuna.catalog import records
from tuna.catalog.parsing import (
    COMMANDS,
    BnEntry,
    ConvEntry,
    Entry,
    LineParser,
    check_tag,
    read_lines,
    without_cyclic_gc,
)
from tuna.db import Database
from tuna.db.bulk import chunks, insert_missing
from tuna.db.models import BnConfig, BnConfigTag, ConfigTag, ConvConfig, Tensor
from tuna.errors import DriverLineError, ImportRefusedError, TunaError

log = logging.getLogger(__name__)

__all__ = [
    "COMMANDS",
    "ImportReport",
    "Progress",
    "import_configs",
    "read_lines",
    "store_entries",
]

CHUNK = 5000  # lines parsed between progress reports
PROBE = 1000  # keys looked up before deciding whether to look up all of them

Progress = Callable[[str, int, int], None]
"""Called as ``progress(stage, done, total)`` while an import runs."""


@dataclass
class ImportReport:
    """What an import did. ``bad`` lists the lines that were skipped (``--skip-bad``)."""

    lines: int = 0
    configs: int = 0
    inserted: int = 0
    already_present: int = 0
    tagged: int = 0
    not_in_catalogue: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # other operations, by name
    bad: list[DriverLineError] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # "line N: what was dropped from it"


def import_configs(
    db: Database,
    lines: Sequence[tuple[int, str]],
    *,
    tag: str | None,
    source: str = "input",
    tag_only: bool = False,
    batches: Sequence[int] | None = None,
    command: str | None = None,
    recurrent: bool = False,
    skip_bad: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import numbered driver lines into the catalogue, tagging them with ``tag``.

    With bad lines and not ``skip_bad``: raises :class:`ImportRefusedError` listing every
    bad line, and writes nothing. ``tag_only`` tags configs already in the catalogue and
    inserts none.
    """
    if tag_only and not tag:
        raise TunaError("-T/--tag_only needs a tag: pass -t TAG")
    check_tag(tag)
    parser = LineParser(batches=batches, command=command)
    with without_cyclic_gc():
        parsed = 0
        for part in chunks(lines, CHUNK):
            parser.feed(part)
            parsed += len(part)
            if progress:
                progress("parse", parsed, len(lines))
        if parser.bad and not skip_bad:
            raise ImportRefusedError(parser.bad, source)
        entries = list(parser.entries.values())
        report = ImportReport(
            lines=len(lines),
            configs=len(entries),
            skipped=parser.skipped,
            bad=parser.bad,
            entries=entries,
            warnings=parser.warnings,
        )
        with db.session() as session:
            store_entries(
                session, entries, tag=tag, tag_only=tag_only, recurrent=recurrent, report=report
            )
    log.info(
        "import %s: %d configs, %d inserted, %d present, %d tagged, %d bad",
        source,
        report.configs,
        report.inserted,
        report.already_present,
        report.tagged,
        len(report.bad),
    )
    return report


def store_entries(
    session: Session,
    entries: Sequence[Entry],
    *,
    tag: str | None,
    report: ImportReport,
    tag_only: bool = False,
    recurrent: bool = False,
    driver_of: Callable[[ConvEntry], str | None] | None = None,
) -> dict[str, int]:
    """Write parsed entries in the caller's transaction (tensors, configs, tags), in bulk.

    Returns the config id of every conv entry, by find-db key. Counts go to ``report``.
    ``driver_of`` gives the driver line of a conv entry that is inserted (in place of its
    ``driver``), so a caller need not make lines for the entries already present.
    """
    check_tag(tag)
    conv = [e for e in entries if isinstance(e, ConvEntry)]
    bns = [e for e in entries if isinstance(e, BnEntry)]
    conv_ids: dict[str, int] = {}

    def conv_rows(session: Session, entries: list[ConvEntry]) -> list[dict[str, Any]]:
        return _conv_rows(session, entries, driver_of)

    for model, key_col, group, make_rows in (
        (ConvConfig, ConvConfig.fdb_key, conv, conv_rows),
        (BnConfig, BnConfig.bn_key, bns, _bn_rows),
    ):
        present, new = _store(session, model, key_col, group, make_rows, tag_only, report)
        if model is ConvConfig:
            conv_ids = {**present, **new}
        if tag:
            tag_model = ConfigTag if model is ConvConfig else BnConfigTag
            report.tagged += _tag(
                session, tag_model, list(present.values()), list(new.values()), tag, recurrent
            )
    return conv_ids


def _existing(session: Session, key_col: Any, keys: Sequence[str]) -> dict[str, int]:
    """Map the given keys that are in the table to their row ids."""
    found: dict[str, int] = {}
    id_col = key_col.class_.id
    for part in chunks(keys, 2000):
        found.update(
            {k: i for k, i in session.execute(select(key_col, id_col).where(key_col.in_(part)))}
        )
    return found


def _store(
    session: Session,
    model: Any,
    key_col: Any,
    entries: Sequence[Entry],
    make_rows: Callable[[Session, list[Any]], list[dict[str, Any]]],
    tag_only: bool,
    report: ImportReport,
) -> tuple[dict[str, int], dict[str, int]]:
    """Insert the entries not yet present; returns (ids already present, ids inserted), by key."""
    if not entries:
        return {}, {}
    keys = [e.key for e in entries]
    # A probe of the first keys decides whether the whole pre-check is worth its round
    # trips: when none of them is present (a new file), every row is simply inserted and
    # any that turn out to exist are told apart afterwards by their ids.
    present = _existing(session, key_col, keys[:PROBE])
    if present or tag_only:
        present = _existing(session, key_col, keys)
    missing = [e for e in entries if e.key not in present]
    if tag_only:
        report.already_present += len(present)
        report.not_in_catalogue += len(missing)
        return present, {}
    new: dict[str, int] = {}
    if missing:
        # New rows are found again by id range rather than by sending every key back.
        before = session.scalar(select(func.max(model.id))) or 0
        insert_missing(
            session,
            model,
            make_rows(session, missing),
        )
        wanted = {e.key for e in missing}
        for key, id_ in session.execute(select(key_col, model.id).where(model.id > before)):
            if key in wanted:
                new[key] = id_
        if len(new) < len(missing):  # present beyond the probe, or inserted meanwhile
            present.update(_existing(session, key_col, [k for k in wanted if k not in new]))
    report.already_present += len(present)
    report.inserted += len(new)
    return present, new


def _tensor_ids(session: Session, keys: set[records.TensorKey]) -> dict[records.TensorKey, int]:
    """The id of every tensor in ``keys``, inserting those not yet present. The new rows are
    read back by id range (one query, no key sent back); only tensors that were present
    already, or that another writer inserted meanwhile, are looked up by their columns."""
    cols = [getattr(Tensor, c) for c in records.TENSOR_COLUMNS]
    wanted = sorted(keys)
    before = session.scalar(select(func.max(Tensor.id))) or 0
    insert_missing(session, Tensor, [records.tensor_row(k) for k in wanted])
    ids: dict[records.TensorKey, int] = {}
    for row in session.execute(select(*cols, Tensor.id).where(Tensor.id > before)):
        ids[tuple(row[:-1])] = row[-1]
    rest = [k for k in wanted if k not in ids]
    for part in chunks(rest, 500):
        for row in session.execute(select(*cols, Tensor.id).where(tuple_(*cols).in_(part))):
            ids[tuple(row[:-1])] = row[-1]
    return ids


def _conv_rows(
    session: Session,
    entries: list[ConvEntry],
    driver_of: Callable[[ConvEntry], str | None] | None = None,
) -> list[dict[str, Any]]:
    xs = [records.input_tensor(e.problem) for e in entries]
    ws = [records.weight_tensor(e.problem) for e in entries]
    tensor_ids = _tensor_ids(session, {*xs, *ws})
    rows = []
    for e, x, w in zip(entries, xs, ws, strict=True):
        driver = e.driver if driver_of is None else driver_of(e)
        row = records.conv_config_values(e.problem, e.key, driver)
        row["input_tensor"] = tensor_ids[x]
        row["weight_tensor"] = tensor_ids[w]
        rows.append(row)
    return rows


def _bn_rows(_session: Session, entries: list[BnEntry]) -> list[dict[str, Any]]:
    return [records.bn_config_values(e.problem, e.key, e.driver) for e in entries]


def _tag(
    session: Session,
    model: type[ConfigTag] | type[BnConfigTag],
    present: list[int],
    new: list[int],
    tag: str,
    recurrent: bool,
) -> int:
    """Tag configs; only those already present can carry the tag already."""
    already: set[int] = set()
    for part in chunks(sorted(present), 2000):
        already.update(
            session.scalars(select(model.config).where(model.tag == tag, model.config.in_(part)))
        )
    todo = [i for i in present if i not in already] + new
    insert_missing(
        session, model, [{"config": i, "tag": tag, "recurrent": recurrent} for i in todo]
    )
    return len(todo)
