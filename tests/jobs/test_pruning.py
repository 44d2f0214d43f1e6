"""A run's intermediate values stored as it reports them, and its pruner's verdict, on the
worker's side (tuna/jobs/pruning.py), on SQLite and MariaDB."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, update

from tests.searches.helpers import bench_session, new_search, runs
from tuna.db import Database
from tuna.db.models import SearchRun
from tuna.jobs import pruning
from tuna.jobs.pruning import RunReports
from tuna.jobs.search_results import insert_runs, store_intermediate
from tuna.searchers.prune import HalvingPruner, MedianPruner
from tuna.searches import SearchDriver


def _search_with_runs(db: Database) -> tuple[int, list[int]]:
    session = bench_session(db)
    search = new_search(db, session)  # 6 static runs, enqueued at once
    SearchDriver(db, search).tick()
    return search, [r.id for r in runs(db, search)]


def _complete(db: Database, run: int, curve: list[list[float]], *, pruned: bool = False) -> None:
    with db.session() as s:
        s.execute(
            update(SearchRun)
            .where(SearchRun.id == run)
            .values(intermediate=curve, valid=not pruned, pruned=pruned, value=1.0)
        )


def test_each_value_is_stored_and_judged_against_the_completed_runs(db: Database) -> None:
    search, ids = _search_with_runs(db)
    _complete(db, ids[0], [[0, 4.0], [1, 2.0]])
    _complete(db, ids[1], [[0, 1.0]], pruned=True)  # pruned: not the median's reference
    reports = RunReports(db, search, ids[2], MedianPruner(warmup_runs=1), "min")
    assert reports(0, 3.0) is None  # better than 4
    assert reports(1, 2.5) == (
        "pruned at step 1 by the median pruner: 2.5 is worse than the median 2 of 1 "
        "completed run(s) at that step"
    )
    stored = {r.id: r.intermediate for r in runs(db, search)}
    assert stored[ids[2]] == [[0, 3.0], [1, 2.5]]
    # a run another worker already recorded is not written to
    _complete(db, ids[3], [[0, 9.0]])
    assert RunReports(db, search, ids[3], MedianPruner(), "min")(0, 1.0) is None
    assert {r.id: r.intermediate for r in runs(db, search)}[ids[3]] == [[0, 9.0]]


def test_a_report_that_cannot_stop_the_run_reads_no_curves(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    search, ids = _search_with_runs(db)
    read: list[int] = []
    real = pruning.peers
    monkeypatch.setattr(pruning, "peers", lambda conn, s, r: read.append(r) or real(conn, s, r))
    reports = RunReports(db, search, ids[0], HalvingPruner(min_step=1, factor=3), "min")
    for step in range(10):  # rungs at steps 1, 3, 9
        assert reports(step, 1.0) is None  # alone: always the best
    assert len(read) == 3
    assert runs(db, search)[0].intermediate == [[s, 1.0] for s in range(10)]


def test_a_run_that_reported_nothing_is_no_peer_and_its_curve_is_sql_null(db: Database) -> None:
    """The writers store an empty curve as None: it must be SQL NULL, not JSON ``null``
    (which ``IS NOT NULL`` keeps), or every ended run of a search is read as a peer with
    no curve each time a report is judged."""
    search, ids = _search_with_runs(db)
    _complete(db, ids[0], [[0, 4.0]])
    with db.transaction() as conn:
        store_intermediate(conn, ids[1], {})  # a run whose curve is empty
        insert_runs(conn, [{"search": search, "seq": 99, "point": {}, "config": {},
                            "valid": True, "intermediate": None}])  # fmt: skip
        null = conn.execute(
            select(func.count()).where(SearchRun.search == search, SearchRun.intermediate.is_(None))
        ).scalar_one()
        assert null == len(ids) + 1 - 1  # every run but the one that reported
        assert [p.curve for p in pruning.peers(conn, search)] == [{0: 4.0}]
