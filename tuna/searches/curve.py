"""A search's best-so-far curve as a chart draws it (:func:`curve`): its steps and its
latest measurements, read through indexes rather than run by run, so that the dashboard's
first view of a search of a million runs does not read them all. When the indexed reading
would read too much it gives up and every finished run is read (:func:`_full_curve`, the
curve of :func:`tuna.searches.query.measured`); both give the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, func, select, true
from sqlalchemy.engine import Connection

from tuna.db import Database
from tuna.db.models import SearchRun, SearchTally
from tuna.searchers.progress import better, improvements
from tuna.searches.query import BEST_BATCH, SearchSummary, best_order, best_where, measured


@dataclass(frozen=True)
class Curve:
    """A search's best-so-far curve as a chart draws it: how many runs finished, the
    measurements that improved the best (its steps) and the latest measurements that
    count (``(n, value)``, at most the number asked for)."""

    search: SearchSummary
    measurements: int
    steps: list[tuple[int, float]]
    recent: list[tuple[int, float]]

    @property
    def best(self) -> float | None:
        return self.steps[-1][1] if self.steps else None


HEAD_RUNS = 4096
"""Finished runs read from the start of a search (``landed`` 1 to this) by the fast curve."""
LATE_STEPS = 64
"""Steps after those that the fast curve finds one query each; past this many, it reads all."""
CHECKED_RUNS = 4096
"""Runs whose validity stat the fast curve checks while looking for its late steps (an
objective with one); past this many, it reads all."""


def curve(db: Database, search: SearchSummary, recent: int = 2000) -> Curve:
    """The best-so-far curve of :func:`measured`, reduced to what a chart draws: its steps
    and the ``recent`` latest measurements that count.

    It is read through indexes rather than run by run (:func:`_fast_curve`); when that
    gives up, every finished run is read (:func:`_full_curve`). Both give the same.
    """
    with db.transaction() as conn:
        fast = _fast_curve(conn, search, recent)
    return fast if fast is not None else _full_curve(db, search, recent)


def _full_curve(db: Database, search: SearchSummary, recent: int) -> Curve:
    """Every finished run read: O(runs of the search)."""
    m = measured(db, search)
    counted = [(n, v) for n, v in enumerate(m.values, start=1) if v is not None]
    return Curve(search, len(m.values), m.steps, counted[-recent:] if recent else [])


class _GiveUp(Exception):
    """The fast curve would read too much: read every run instead."""


@dataclass
class _Checker:
    """Whether runs count, for the fast curve: ``(..., value[, stats])`` rows; with a
    validity stat the stats are read (from the rows, not the index) and checked, at most
    :data:`CHECKED_RUNS` of them outside the head and the latest runs."""

    search: SearchSummary
    checked: int = 0

    @property
    def columns(self) -> list[Any]:
        counts = and_(SearchRun.valid == true(), SearchRun.value.is_not(None))
        cols: list[Any] = [case((counts, SearchRun.value))]
        return cols + ([SearchRun.stats] if self.search.reads_stats else [])

    def value(self, row: Any, at: int) -> float | None:
        """The value of a row whose columns from ``at`` are :attr:`columns`, or None."""
        v = row[at]
        if v is None:
            return None
        if not self.search.reads_stats:
            return float(v)
        return float(v) if self.search.counts(True, v, row[at + 1]) else None

    def first(self, conn: Connection, q: Any) -> Any | None:
        """The first row of ``q`` (selecting :attr:`columns` first) that counts."""
        if not self.search.reads_stats:
            return conn.execute(q.limit(1)).first()
        offset = 0
        while True:
            batch = conn.execute(q.limit(BEST_BATCH).offset(offset)).all()
            for r in batch:
                self.checked += 1
                if self.value(r, 0) is not None:
                    return r
                if self.checked > CHECKED_RUNS:
                    raise _GiveUp
            if len(batch) < BEST_BATCH:
                return None
            offset += BEST_BATCH


def _fast_curve(conn: Connection, search: SearchSummary, recent: int) -> Curve | None:
    """The curve from indexes (None: give up).

    A run's position in the curve is its ``landed``. The first :data:`HEAD_RUNS` (landed
    1 to HEAD_RUNS, a range of the index ``(search, landed, valid, value)``) give the early
    steps. The later ones are found from the end: the best run of all (earliest landed of
    equals) is the last step; the best among the runs that landed before it is the one
    before, and so on until one is no better than the head's best (each the first entry of
    a range of ``(search, valid, value, landed)`` that passes the filter). The number of
    measurements is the search's ``search_tally`` (its highest ``landed``), and the latest
    measurements are the last range of ``landed``. With a validity stat, each candidate's
    stats are read and checked: the best valid runs whose stat says invalid are skipped.
    """
    try:
        return _fast_curve_or_give_up(conn, search, recent)
    except _GiveUp:
        return None


def _fast_curve_or_give_up(conn: Connection, search: SearchSummary, recent: int) -> Curve | None:
    goal = search.goal
    check = _Checker(search)
    in_order = select(SearchRun.landed, *check.columns).where(SearchRun.search == search.id)
    total = _measurements(conn, search.id)
    if total <= HEAD_RUNS:  # the whole search
        head = conn.execute(
            in_order.where(SearchRun.landed.between(1, HEAD_RUNS)).order_by(SearchRun.landed)
        ).all()
        values = [check.value(r, 1) for r in head]
        counted = [(n, v) for n, v in enumerate(values, start=1) if v is not None]
        steps = [(s.n, s.best) for s in improvements(values, goal)]
        return Curve(search, len(values), steps, counted[-recent:] if recent else [])
    steps = _head_steps(conn, search, check)
    head_best = steps[-1][1] if steps else None
    better_than_head = (
        ()
        if head_best is None
        else (SearchRun.value > head_best if goal == "max" else SearchRun.value < head_best,)
    )
    late: list[tuple[int, float]] = []
    while True:
        q = select(*check.columns).where(*best_where(search.id), *better_than_head)
        if late:
            q = q.where(SearchRun.landed < late[-1][0])
        best = check.first(conn, q.order_by(*best_order(goal)))
        if best is None:
            break
        v = float(best[0])
        first = check.first(  # the earliest landed of its value
            conn,
            select(*check.columns, SearchRun.landed)
            .where(*best_where(search.id), SearchRun.value == v)
            .order_by(SearchRun.landed),
        )
        assert first is not None  # ``best`` is one
        at = first[-1]
        if at is None or at <= HEAD_RUNS:
            break  # the head holds it
        late.append((int(at), v))
        if len(late) > LATE_STEPS:
            return None
    late.reverse()
    return Curve(search, total, steps + late, _recent(conn, in_order, check, total, recent))


HEAD_CHECKS = 32
"""Runs of the head whose validity stat the fast curve reads one at a time; past this many,
it reads the rest of the head's stats in one range."""


def _head_steps(
    conn: Connection, search: SearchSummary, check: _Checker
) -> list[tuple[int, float]]:
    """The steps among the first :data:`HEAD_RUNS` runs, from the index ``(search, landed,
    valid, value)``. With a validity stat, only a run that would improve the best so far
    can be a step: its stats are read (one row each, then the rest of the head at once
    past :data:`HEAD_CHECKS`) and it is skipped when its stat says invalid."""
    head = select(SearchRun.landed, check.columns[0]).where(
        SearchRun.search == search.id, SearchRun.landed.between(1, HEAD_RUNS)
    )
    rows = conn.execute(head.order_by(SearchRun.landed)).all()
    values: list[float | None] = [None if r[1] is None else float(r[1]) for r in rows]
    if search.reads_stats:
        best: float | None = None
        stats: dict[int, Any] = {}
        for i, v in enumerate(values):
            if v is None or not better(v, best, search.goal):
                continue
            landed = int(rows[i][0])
            if landed not in stats and len(stats) < HEAD_CHECKS:
                one = select(SearchRun.stats).where(
                    SearchRun.search == search.id, SearchRun.landed == landed
                )
                stats[landed] = conn.execute(one).scalar()
            elif landed not in stats:  # many candidates: the rest of the head in one range
                rest = select(SearchRun.landed, SearchRun.stats).where(
                    SearchRun.search == search.id, SearchRun.landed.between(landed, HEAD_RUNS)
                )
                stats |= {int(n): st for n, st in conn.execute(rest)}
            if search.counts(True, v, stats.get(landed)):
                best = v
            else:
                values[i] = None
    return [(s.n, s.best) for s in improvements(values, search.goal)]


def _measurements(conn: Connection, search_id: int) -> int:
    """How many runs of the search ended: its ``search_tally`` row, else counted."""
    tallied = conn.execute(select(SearchTally.done).where(SearchTally.search == search_id)).scalar()
    if tallied is not None:
        return int(tallied)
    done = (SearchRun.search == search_id, SearchRun.valid.is_not(None))
    return int(conn.execute(select(func.count()).where(*done)).scalar_one())


def _recent(
    conn: Connection, in_order: Any, check: _Checker, total: int, recent: int
) -> list[tuple[int, float]]:
    """The ``recent`` latest measurements that count, ``(n, value)``: ranges of ``landed``
    read from the end."""
    out: list[tuple[int, float]] = []
    batch = max(recent + recent // 4, 256)  # a tenth of runs invalid: one batch, mostly
    upto = total
    while len(out) < recent and upto > 0:
        rows = conn.execute(
            in_order.where(SearchRun.landed.between(upto - batch + 1, upto)).order_by(
                SearchRun.landed.desc()
            )
        ).all()
        for r in rows:
            v = check.value(r, 1)
            if v is not None and len(out) < recent:
                out.append((int(r[0]), v))
        upto -= batch
    out.reverse()
    return out
