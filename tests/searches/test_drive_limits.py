"""A search's pruner and time budget through the queue (issue #28): command runs that
print intermediate values, pruned by a real worker (their process group killed), and a
time budget on a fake clock that stops the driver proposing."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from tests.searches.helpers import (
    BISECT,
    BISECT_SEARCHER,
    SPEC,
    bench_session,
    drain,
    driving,
    new_search,
    runs,
    search_state,
)
from tuna.cli.search_drive import summary_line
from tuna.db import Database
from tuna.jobs.search_results import recount
from tuna.searchers.errors import SearchError
from tuna.searches import SearchDriver, query
from tuna.searches.create import SearchRequest, check_request
from tuna.worker.loop import run_worker

# Each run reports a loss per epoch (x * (epoch + 1) / 10, so a larger x is worse at
# every epoch), pausing between epochs, then its final loss.
TRAIN = {
    "run": "for e in 0 1 2 3; do echo tuna:intermediate $e $(( {x} * (e + 1) )); "
    "sleep 0.3; done; echo 'loss: {x}'",
    "owns": "nothing",
    "run_timeout_s": 60,
}


@pytest.mark.parametrize("time_limit", [None, 60.0], ids=["in-worker", "in-horse"])
def test_a_median_pruner_kills_hopeless_command_runs(db: Database, time_limit: float | None):
    session = bench_session(db)
    search = new_search(
        db,
        session,
        space='{"x": [3, 2, 5, 1, 4]}',
        space_file="params.json",
        spec=TRAIN,
        objective="loss",
        pruner="median(warmup_runs=2)",
    )
    with driving(db, session):
        drain(db, session, claim_batch=1, time_limit=time_limit)
    assert search_state(db, search) == ("done", None)
    rows = runs(db, search)
    # x=3, x=2: the warm-up, complete; x=5 is worse than their median (2.5) at epoch 0 and
    # is killed there; x=1 is better at every epoch; x=4 is worse than the median of 3, 2, 1
    assert [(r.config["x"], r.valid, r.pruned) for r in rows] == [
        (3, True, False), (2, True, False), (5, False, True), (1, True, False),
        (4, False, True),
    ]  # fmt: skip
    assert rows[0].intermediate == [[0, 3.0], [1, 6.0], [2, 9.0], [3, 12.0]]
    assert rows[2].intermediate == [[0, 5.0]]  # killed before its next epoch
    assert rows[2].reason == (
        "pruned at step 0 by the median pruner: 5 is worse than the median 2.5 of 2 "
        "completed run(s) at that step"
    )
    summary = query.find_search(db, search)
    best = query.best_run(db, summary)
    assert best is not None and best.point == {"x": 1}  # a pruned run is never the best
    # the read side tells pruned runs from invalid ones (tuna search show --status pruned)
    assert [r.seq for r in query.runs(db, summary, status="pruned")] == [2, 4]
    assert query.runs(db, summary, status="invalid") == []
    assert [r.status for r in query.runs(db, summary)] == [
        "valid", "valid", "pruned", "valid", "pruned",
    ]  # fmt: skip
    # and counts them apart (search show, the dashboard): pruned, not invalid
    assert (summary.done, summary.valid, summary.invalid, summary.pruned) == (5, 3, 0, 2)
    assert "(0 invalid, 2 pruned)" in summary_line(summary, best)
    with db.transaction() as conn:  # a full count agrees with the one kept as runs land
        recount(conn, [search])
    assert query.find_search(db, search).pruned == 2


def test_without_a_pruner_the_values_are_stored_and_nothing_is_stopped(db: Database):
    session = bench_session(db)
    spec = {**TRAIN, "run": TRAIN["run"].replace("sleep 0.3", "true")}
    search = new_search(
        db, session, space='{"x": [3, 9]}', space_file="params.json", spec=spec, objective="loss"
    )
    with driving(db, session):
        drain(db, session, claim_batch=1)
    rows = runs(db, search)
    assert [(r.valid, r.pruned) for r in rows] == [(True, False), (True, False)]
    assert rows[1].intermediate == [[0, 9.0], [1, 18.0], [2, 27.0], [3, 36.0]]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _land_all(db: Database, session: int) -> None:
    """Run the jobs ready now, with no driver running."""
    run_worker(db, session, "eval", until_empty=True, claim_batch=8, handle_signals=False)


def test_a_static_search_stops_enqueueing_when_its_time_budget_is_spent(lite: Database):
    db = lite
    session = bench_session(db)
    search = new_search(db, session, time_budget="10m", parallelism=2)  # 6 runs, 2 builds
    clock = FakeClock()
    driver = SearchDriver(db, search, clock=clock)
    assert driver.tick()
    assert len(runs(db, search)) == 2  # parallelism 2 at a time, not all 6 at once
    _land_all(db, session)
    assert driver.tick()
    assert len(runs(db, search)) == 4
    clock.now += 600.0  # the budget is spent while two runs are in flight
    assert driver.tick()  # they finish; nothing more is enqueued
    assert len(runs(db, search)) == 4
    _land_all(db, session)
    assert not driver.tick()
    assert len(runs(db, search)) == 4 and all(r.valid for r in runs(db, search))
    assert search_state(db, search) == ("done", "time budget of 10m spent after 4 run(s)")
    summary = query.find_search(db, search)
    assert summary_line(summary, query.best_run(db, summary)).endswith(
        "; time budget of 10m spent after 4 run(s)"
    )


def test_a_dynamic_search_finishes_its_runs_in_flight_and_ends(lite: Database):
    db = lite
    session = bench_session(db)
    search = new_search(
        db, session, space=BISECT, searcher=BISECT_SEARCHER, spec=SPEC, time_budget=90
    )
    clock = FakeClock()
    driver = SearchDriver(db, search, clock=clock)
    for _ in range(3):  # three Bisect steps, one run at a time
        assert driver.tick()
        _land_all(db, session)
    assert driver.tick()
    in_flight = len(runs(db, search))
    clock.now += 90.0
    assert driver.tick()
    _land_all(db, session)
    assert not driver.tick()
    assert len(runs(db, search)) == in_flight == 4
    assert search_state(db, search) == ("done", "time budget of 1m30s spent after 4 run(s)")


def test_a_driver_started_again_counts_the_time_already_used(db: Database):
    session = bench_session(db)
    search = new_search(db, session, time_budget=3600)
    first = SearchDriver(db, search, clock=FakeClock())
    first.tick()
    with db.transaction() as conn:  # the first run was enqueued two hours ago
        conn.execute(
            text("UPDATE search_run SET created = '2000-01-01 00:00:00' WHERE search = :s"),
            {"s": search},
        )
    again = SearchDriver(db, search, clock=FakeClock())
    again.tick()
    assert again.timed_out  # spent: nothing more is proposed


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"pruner": "quartile"}, "pruner 'quartile': write 'median'"),
        ({"pruner": "median(warmup_runs=-1)"}, "warmup_runs -1: give an integer >= 1"),
        ({"time_budget": "ten minutes"}, "time budget 'ten minutes': give a duration above 0"),
        ({"time_budget": 0}, "time budget 0: give a duration above 0"),
    ],
)
def test_a_bad_pruner_or_time_budget_is_refused_before_anything_is_stored(
    db: Database, change: dict[str, object], says: str
):
    session = bench_session(db)
    with pytest.raises(SearchError) as e:
        new_search(db, session, **change)
    assert says in str(e.value) and "\n" not in str(e.value)
    request = SearchRequest(session, "s", "p.json", '{"x": [1]}', SPEC, "t", **change)  # type: ignore[arg-type]
    with pytest.raises(SearchError):
        check_request(request)
    assert query.list_searches(db, session) == []
