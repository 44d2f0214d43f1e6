"""What a search's driver reads back: its recorded runs (:func:`search_rows`, as
:class:`~tuna.searchers.Run` s by :func:`run_of`), those that landed, how many are
unfinished, the time its budget has used and a strategy's final validation."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import func, select

from tuna.db import Database
from tuna.db.clock import db_now
from tuna.db.models import SearchBuild, SearchRun
from tuna.searchers import Run
from tuna.searches.create import BASELINE_SEQ

FINAL = "final"  # the build key of a strategy's final validation


def run_of(row: Any) -> Run:
    """The Run a recorded ``search_run`` row holds (finished or not)."""
    valid = bool(row.valid) if row.valid is not None else True
    reason = row.reason if not valid else None
    return Run(
        config=dict(row.config),
        stats=dict(row.stats or {}),
        valid=valid,
        reason=reason or (None if valid else "invalid"),
    )


_ROW = (
    SearchRun.id,
    SearchRun.seq,
    SearchRun.point,
    SearchRun.config,
    SearchRun.stats,
    SearchRun.valid,
    SearchRun.reason,
    SearchRun.value,
)


def search_rows(db: Database, search: int) -> list[Any]:
    """The search's recorded runs (the baseline left out), in proposal order."""
    with db.session() as s:
        return list(
            s.execute(
                select(*_ROW)
                .where(SearchRun.search == search, SearchRun.seq > BASELINE_SEQ)
                .order_by(SearchRun.seq)
            ).all()
        )


def baseline_row(db: Database, search: int) -> Any:
    """The search's baseline run as :func:`search_rows` reads a run (None: not recorded)."""
    with db.session() as s:
        return s.execute(
            select(*_ROW).where(SearchRun.search == search, SearchRun.seq == BASELINE_SEQ)
        ).first()


def rows_by_id(db: Database, ids: list[int]) -> dict[int, Any]:
    """Run id -> its result columns, for the runs ``ids``."""
    with db.session() as s:
        return {
            r.id: r
            for r in s.execute(
                select(
                    SearchRun.id, SearchRun.config, SearchRun.stats, SearchRun.valid,
                    SearchRun.reason,
                ).where(SearchRun.id.in_(ids))
            )
        }  # fmt: skip


def unfinished(db: Database, search: int) -> int:
    """How many of the search's runs have not ended."""
    with db.session() as s:
        return int(
            s.execute(
                select(func.count()).where(SearchRun.search == search, SearchRun.valid.is_(None))
            ).scalar_one()
        )


def time_used(db: Database, search: int) -> float:
    """Seconds since the search's first run was enqueued, on the database clock (0
    before it has any)."""
    with db.session() as s:
        first, now = s.execute(
            select(func.min(SearchRun.created), db_now()).where(SearchRun.search == search)
        ).one()
    if first is None:
        return 0.0
    return max(0.0, (_when(now) - _when(first)).total_seconds())


def final_build(db: Database, search: int) -> Any:
    """A strategy's final validation build row (None: not enqueued yet)."""
    with db.session() as s:
        return s.execute(
            select(SearchBuild.id, SearchBuild.valid, SearchBuild.reason).where(
                SearchBuild.search == search, SearchBuild.build_key == FINAL
            )
        ).first()


def _when(value: Any) -> dt.datetime:
    """A timestamp read back (SQLite may give its text)."""
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None)
    return dt.datetime.fromisoformat(str(value))
