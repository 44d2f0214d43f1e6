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
from tuna.searches import query


def _seed_runs(db: Database, search: int, rng: random.Random, n: int, trend: float) -> None:
    """``n`` runs: some pending, some invalid, some valid without a value; finish times out
    of proposal order with ties; values from a small set (equal values), drifting by
    ``trend`` per run so that late runs keep improving when asked."""
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
            row |= {"valid": valid, "value": value, "finished": at, "stats": {}}
        rows.append(row)
    with db.session() as s:
        if rows:
            s.execute(insert(SearchRun), rows)
        recount(s.connection(), [search])


@pytest.mark.parametrize("goal", ["min", "max"])
def test_the_fast_curve_is_the_full_reads_on_random_searches(db, goal, monkeypatch):
    monkeypatch.setattr(query, "HEAD_RUNS", 16)
    sid = session(db, f"curve-{goal}")
    rng = random.Random(f"curve-{goal}")
    late_paths = 0
    for k, (n, trend) in enumerate([(0, 0), (10, 0), (16, 0), (300, 0), (400, 0.01),
                                     (400, -0.01), (500, 0.2), (300, -0.2)]):  # fmt: skip
        search = add_search(db, sid, f"s{k}", {"stat": "t", "goal": goal})
        _seed_runs(db, search, rng, n, trend)
        summary = query.find_search(db, search)
        for recent in (0, 5, 2000):
            fast = query.curve(db, summary, recent)
            full = query._full_curve(db, summary, recent)
            assert fast == full, (n, trend, recent)
        with db.transaction() as conn:
            fast_only = query._fast_curve(conn, summary, 7)
        if fast_only is not None and fast_only.steps and fast_only.steps[-1][0] > 16:
            late_paths += 1
            assert fast_only == query._full_curve(db, summary, 7)
    assert late_paths >= 2  # steps past the head were found from the end, not only read


def test_a_fast_curve_with_too_many_late_steps_falls_back_to_the_full_read(lite, monkeypatch):
    monkeypatch.setattr(query, "HEAD_RUNS", 4)
    monkeypatch.setattr(query, "LATE_STEPS", 3)
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
        assert query._fast_curve(conn, summary, 10) is None
    c = query.curve(lite, summary, 10)
    assert c.measurements == 20 and c.steps == [(i + 1, 100.0 - i) for i in range(20)]
