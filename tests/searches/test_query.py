from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import delete, event, insert

from tests.searches.seed import BISECT_P95, SERVE, SERVE_BEST_SO_FAR
from tuna.db.models import SearchRun
from tuna.errors import NotFoundError, TunaError
from tuna.jobs.search_results import recount
from tuna.searches import curve as curves
from tuna.searches import query


def test_a_sessions_searches_with_their_progress_builds_and_best(searched):
    db, sd = searched
    found = {s.name: s for s in query.list_searches(db, sd.session)}
    assert list(found) == ["serve", "rate-bisect", "empty"]
    serve = found["serve"]
    assert (serve.id, serve.session, serve.state, serve.backend) == (sd.serve, sd.session,
                                                                     "active", "bench")  # fmt: skip
    assert (serve.stat, serve.goal, serve.validity) == ("throughput", "max", "result_validity")
    assert (serve.runs, serve.done, serve.in_flight, serve.budget) == (8, 6, 2, 10)
    # seq 3 ran (valid) but its result_validity says INVALID: 900 does not count.
    assert serve.valid == 5 and serve.best == 250.0
    assert (serve.builds, serve.builds_done) == (4, 3)
    bisect = found["rate-bisect"]
    assert bisect.best == min(BISECT_P95) and bisect.validity is None
    assert bisect.label.startswith("rate-bisect (Bisect(")
    empty = found["empty"]
    assert (empty.runs, empty.done, empty.builds, empty.best) == (0, 0, 0, None)
    assert [s.name for s in query.list_searches(db, sd.other_session)] == ["serve"]
    with pytest.raises(NotFoundError, match="session 999999 does not exist"):
        query.list_searches(db, 999999)


def test_a_search_is_found_by_id_or_by_name_in_its_session(searched):
    db, sd = searched
    assert query.find_search(db, sd.bisect).name == "rate-bisect"
    assert query.find_search(db, str(sd.bisect)).id == sd.bisect
    assert query.find_search(db, "serve", sd.other_session).id == sd.other
    with pytest.raises(NotFoundError, match=r"search 'nope' in session \d+ does not exist"):
        query.find_search(db, "nope", sd.session)
    with pytest.raises(NotFoundError, match="search 999999 does not exist"):
        query.find_search(db, 999999)
    with pytest.raises(TunaError, match="needs its session"):
        query.find_search(db, "serve")


def test_the_runs_table_splits_build_and_run_params_and_pages_by_seq(searched):
    db, sd = searched
    serve = query.find_search(db, sd.serve)
    rows = query.runs(db, serve)
    assert [r.seq for r in rows] == [r[0] for r in SERVE]
    r1 = rows[1]
    assert r1.build == sd.builds[1] and r1.build_params == {"batch": 1}
    assert r1.run_params == {"threads": 2} and r1.point == {"batch": 1, "threads": 2}
    assert r1.stats == SERVE[1][3] and r1.value == 180.0 and r1.status == "valid"
    assert r1.machine == "bench-host" and r1.finished is not None
    assert (rows[4].status, rows[4].reason) == ("invalid", "exit status 1: segfault")
    assert rows[6].status == "pending" and rows[6].machine is None and rows[6].finished is None
    page = query.runs(db, serve, after=2, limit=3)
    assert [r.seq for r in page] == [3, 4, 5]
    assert [r.seq for r in query.runs(db, serve, status="pending")] == [6, 7]
    assert [r.seq for r in query.runs(db, serve, status="invalid")] == [4]
    assert [r.seq for r in query.runs(db, serve, status="valid")] == [0, 1, 2, 3, 5]
    assert [r.seq for r in query.runs(db, serve, build=sd.builds[2])] == [2, 3]


def test_best_first_counts_only_the_runs_the_objective_counts(searched):
    db, sd = searched
    serve = query.find_search(db, sd.serve)
    assert [r.seq for r in query.runs(db, serve, order="best")] == [5, 1, 2, 0]
    assert [r.seq for r in query.runs(db, serve, order="best", limit=2)] == [5, 1]
    best = query.best_run(db, serve)
    assert best is not None and (best.seq, best.value) == (5, 250.0)
    bisect = query.find_search(db, sd.bisect)
    assert [r.seq for r in query.runs(db, bisect, order="best")] == [3, 1, 2, 0]
    assert query.best_run(db, query.find_search(db, sd.empty)) is None


def test_best_first_with_a_validity_stat_reads_a_batch_at_a_time(searched, monkeypatch):
    """seq 3 is the best valid run but says INVALID: it is skipped across batches of one."""
    db, sd = searched
    monkeypatch.setattr(query, "BEST_BATCH", 1)
    serve = query.find_search(db, sd.serve)
    assert [r.seq for r in query.runs(db, serve, order="best")] == [5, 1, 2, 0]
    assert [r.seq for r in query.runs(db, serve, order="best", limit=3)] == [5, 1, 2]
    best = query.best_run(db, serve)
    assert best is not None and best.seq == 5


def test_measurements_in_landing_order_and_their_best_so_far(searched):
    db, sd = searched
    m = query.measured(db, query.find_search(db, sd.serve))
    assert m.seqs == [1, 0, 2, 3, 4, 5]  # the order they landed, not proposal order
    assert m.values == [180.0, 100.0, 150.0, None, None, 250.0]
    assert m.best == SERVE_BEST_SO_FAR
    assert m.steps == [(1, 180.0), (6, 250.0)]
    b = query.measured(db, query.find_search(db, sd.bisect))
    assert b.best == [12.0, 8.0, 8.0, 7.0] and b.steps == [(1, 12.0), (2, 8.0), (4, 7.0)]
    assert query.measured(db, query.find_search(db, sd.empty)).values == []


def test_the_landing_order_is_landed_not_the_finish_times(searched):
    """Runs land in ``landed`` order (the writer's, under the search's counter lock), even
    where the finish times say otherwise (two writers' statements, one clock tick): the
    measurements, the curve's positions and the earliest of equal values follow it."""
    from tests.report.seed import session
    from tests.searches.seed import T0, add_search

    db, _ = searched
    search = add_search(db, session(db, "landed-order"), "landed", {"stat": "t", "goal": "min"})
    # (seq, value, landed, seconds after T0 it finished)
    runs = [(0, 5.0, 3, 0), (1, 7.0, 1, 9), (2, 5.0, 2, 9), (3, 4.0, 4, 1), (4, None, None, None)]
    with db.session() as s:
        s.execute(insert(SearchRun), [
            {"search": search, "seq": q, "point": {}, "config": {}, "value": v, "landed": n,
             "valid": None if n is None else True, "stats": None if v is None else {"t": v},
             "finished": None if at is None else T0 + dt.timedelta(seconds=at)}
            for q, v, n, at in runs
        ])  # fmt: skip
        recount(s.connection(), [search])
    summary = query.find_search(db, search)
    m = query.measured(db, summary)
    assert (m.seqs, m.values) == ([1, 2, 0, 3], [7.0, 5.0, 5.0, 4.0])
    assert m.steps == [(1, 7.0), (2, 5.0), (4, 4.0)]
    assert curves.curve(db, summary).steps == m.steps
    equal = query.runs(db, summary, order="best", limit=3)
    assert [r.seq for r in equal] == [3, 2, 0]  # of the two 5.0s, seq 2 landed first


@pytest.mark.parametrize("searched", ["sqlite"], indirect=True)  # reads SQLite's query plan
def test_every_query_reads_the_search_tables_through_an_index(searched):
    """SQLite's plan names a full scan of a table SCAN; an index lookup is SEARCH."""
    db, sd = searched
    assert db.is_sqlite
    sent: list[tuple[str, object]] = []

    def record(_conn, _cur, stmt, parameters, *_a):
        if stmt.lstrip().upper().startswith("SELECT"):
            sent.append((stmt, parameters))

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        serve = query.find_search(db, sd.serve)
        query.list_searches(db, sd.session)
        query.find_search(db, "serve", sd.session)
        query.runs(db, serve, status="valid", build=sd.builds[1], after=0, limit=5)
        query.runs(db, serve, order="best", limit=2)
        query.measured(db, serve)
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    assert len(sent) >= 8
    plans = {}
    with db.engine.connect() as conn:
        for stmt, parameters in sent:
            plan = [r[-1] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {stmt}", parameters)]
            scans = [p for p in plan if p.startswith("SCAN") and "search" in p]
            assert not scans, f"{stmt}\n{plan}"
            plans[" ".join(stmt.split())] = plan
    # Counts by status and the best value come from the index alone; best first is the
    # index's own order (no sort), whatever the search's size.
    counts = [
        p
        for s, p in plans.items()
        if s.startswith("SELECT search_run.search, search_run.valid, count(*)")
    ]
    best = [p for s, p in plans.items() if "ORDER BY search_run.value DESC" in s]
    assert counts and all("COVERING INDEX" in p[0] for p in counts), counts
    assert best and not any("TEMP B-TREE" in line for p in best for line in p), best


def test_the_curve_a_chart_draws_is_the_steps_and_the_latest_measurements(searched):
    db, sd = searched
    for sid in (sd.serve, sd.bisect, sd.empty):
        s = query.find_search(db, sid)
        m = query.measured(db, s)
        c = curves.curve(db, s)
        assert (c.measurements, c.steps) == (len(m.values), m.steps)
        everything = [(n, v) for n, v in enumerate(m.values, start=1) if v is not None]
        assert c.recent == everything
        assert curves.curve(db, s, recent=2).recent == everything[-2:] if len(m.values) else True
    bisect = curves.curve(db, query.find_search(db, sd.bisect), recent=3)
    assert bisect.steps == [(1, 12.0), (2, 8.0), (4, 7.0)] and bisect.best == 7.0
    assert bisect.recent == [(2, 8.0), (3, 10.0), (4, 7.0)]


def test_the_curve_of_a_search_without_a_validity_stat_counts_invalid_runs_as_measurements(
    searched,
):
    db, sd = searched
    # rate-bisect has no validity stat: add a failed run that lands last, and one in flight.
    from tests.searches.seed import T0, add_run, land

    s = query.find_search(db, sd.bisect)
    add_run(db, sd.bisect, 4, {"rate": 50})
    add_run(db, sd.bisect, 5, {"rate": 60})
    land(db, sd.bisect, 4, "timed out after 60 s", at=T0 + dt.timedelta(seconds=30))
    try:
        c = curves.curve(db, s)
        assert c.measurements == 5 and c.steps == [(1, 12.0), (2, 8.0), (4, 7.0)]
        assert c.recent[-1] == (4, 7.0)
        assert query.measured(db, s).values[-1] is None
    finally:
        with db.session() as session:
            session.execute(
                delete(SearchRun).where(SearchRun.search == sd.bisect, SearchRun.seq >= 4)
            )
