"""The fast best-so-far curve (indexes, few rows) against the full read (every run)."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from sqlalchemy import insert

from tests.report.seed import session
from tests.searches.seed import T0, add_search
from tuna.db import Database
from tuna.db.models import SearchRun
from tuna.jobs.search_results import recount
from tuna.searches import curve as curves
from tuna.searches import query


def _seed_runs(
    db: Database, search: int, rng: random.Random, n: int, trend: float, says_invalid: float = 0
) -> None:
    """``n`` runs: some pending, some invalid, some valid without a value; finish times out
    of proposal order with ties; values from a small set (equal values), drifting by
    ``trend`` per run so that late runs keep improving when asked. A share
    ``says_invalid`` of the valid runs print ``"ok": "INVALID"`` (the others ``VALID``)."""
    rows = []
    for seq in range(n):
        row = {
            "search": search,
            "seq": seq,
            "point": {"i": seq},
            "config": {},
            "valid": None,
            "value": None,
            "finished": None,
            "stats": None,
        }
        r = rng.random()
        if r > 0.1:  # finished
            valid = r > 0.25
            value = None if (not valid or rng.random() < 0.05) else rng.randint(0, 40) + trend * seq
            at = T0 + dt.timedelta(seconds=rng.randint(0, n // 3))
            ok = "INVALID" if rng.random() < says_invalid else "VALID"
            stats = {"ok": ok} if value is None else {"ok": ok, "t": value}
            row |= {"valid": valid, "value": value, "finished": at, "stats": stats}
        rows.append(row)
    # The landing order (``landed``) is the writer's: not always the finish times' order
    # (a tie, two writers' clocks); here a shuffle of the ended runs.
    ended = [row for row in rows if row["valid"] is not None]
    order = list(range(1, len(ended) + 1))
    rng.shuffle(order)
    for row, n in zip(ended, order, strict=True):
        row["landed"] = n
    for row in rows:
        row.setdefault("landed", None)
    with db.session() as s:
        if rows:
            s.execute(insert(SearchRun), rows)
        recount(s.connection(), [search])


@pytest.mark.parametrize(("goal", "validity"), [("min", None), ("max", None), ("min", "ok"),
                                               ("max", "ok")])  # fmt: skip
def test_the_fast_curve_is_the_full_reads_on_random_searches(db, goal, validity, monkeypatch):
    """With a validity stat, the best valid runs often say invalid (a third of them, and
    the best ones in one search): the fast curve skips them as the full read does."""
    monkeypatch.setattr(curves, "HEAD_RUNS", 16)
    sid = session(db, f"curve-{goal}-{validity}")
    rng = random.Random(f"curve-{goal}-{validity}")
    late_paths = 0
    says_invalid = 0.0 if validity is None else 0.33
    for k, (n, trend) in enumerate([(0, 0), (10, 0), (16, 0), (300, 0), (400, 0.01),
                                     (400, -0.01), (500, 0.2), (300, -0.2)]):  # fmt: skip
        objective = {"stat": "t", "goal": goal, "valid": validity}
        search = add_search(db, sid, f"s{k}", objective)
        _seed_runs(db, search, rng, n, trend, says_invalid)
        summary = query.find_search(db, search)
        for recent in (0, 5, 2000):
            fast = curves.curve(db, summary, recent)
            full = curves._full_curve(db, summary, recent)
            assert fast == full, (n, trend, recent)
        for checks in (0, 1):  # the head's stats read in one range at once, or after one
            monkeypatch.setattr(curves, "HEAD_CHECKS", checks)
            assert curves.curve(db, summary, 5) == curves._full_curve(db, summary, 5), checks
        monkeypatch.undo()
        monkeypatch.setattr(curves, "HEAD_RUNS", 16)
        with db.transaction() as conn:
            fast_only = curves._fast_curve(conn, summary, 7)
        assert fast_only is not None  # no fallback here
        if fast_only is not None and fast_only.steps and fast_only.steps[-1][0] > 16:
            late_paths += 1
            assert fast_only == curves._full_curve(db, summary, 7)
    assert late_paths >= 2  # steps past the head were found from the end, not only read


def test_a_fast_curve_with_too_many_late_steps_falls_back_to_the_full_read(lite, monkeypatch):
    monkeypatch.setattr(curves, "HEAD_RUNS", 4)
    monkeypatch.setattr(curves, "LATE_STEPS", 3)
    sid = session(lite, "curve-many")
    search = add_search(lite, sid, "down", {"stat": "t", "goal": "min"})
    at = [T0 + dt.timedelta(seconds=i) for i in range(20)]
    rows = [{"search": search, "seq": i, "point": {}, "config": {}, "valid": True,
             "value": 100.0 - i, "finished": at[i]} for i in range(20)]  # fmt: skip
    with lite.session() as s:
        s.execute(insert(SearchRun), rows)
        recount(s.connection(), [search])
    summary = query.find_search(lite, search)
    with lite.transaction() as conn:
        assert curves._fast_curve(conn, summary, 10) is None
    c = curves.curve(lite, summary, 10)
    assert c.measurements == 20 and c.steps == [(i + 1, 100.0 - i) for i in range(20)]


def test_a_fast_curve_checking_too_many_validity_stats_falls_back_to_the_full_read(
    lite, monkeypatch
):
    monkeypatch.setattr(curves, "HEAD_RUNS", 4)
    monkeypatch.setattr(curves, "CHECKED_RUNS", 5)
    sid = session(lite, "curve-checked")
    search = add_search(lite, sid, "liars", {"stat": "t", "goal": "min", "valid": "ok"})
    at = [T0 + dt.timedelta(seconds=i) for i in range(20)]
    # after a head of 4, ten runs better than any say invalid; honest ones improve later
    values = [50.0, 51, 52, 53, *range(-16, -6), 24, 25, 26, 27, 28, 5]
    rows = [{"search": search, "seq": i, "point": {}, "config": {}, "valid": True,
             "value": float(v), "finished": at[i],
             "stats": {"ok": "INVALID" if v < 0 else "VALID", "t": float(v)}}
            for i, v in enumerate(values)]  # fmt: skip
    with lite.session() as s:
        s.execute(insert(SearchRun), rows)
        recount(s.connection(), [search])
    summary = query.find_search(lite, search)
    with lite.transaction() as conn:
        assert curves._fast_curve(conn, summary, 10) is None
    c = curves.curve(lite, summary, 10)
    assert c.measurements == 20 and c.steps == [(1, 50.0), (15, 24.0), (20, 5.0)]
    monkeypatch.setattr(curves, "CHECKED_RUNS", 50)
    with lite.transaction() as conn:
        assert curves._fast_curve(conn, summary, 10) == c
