"""What a search's driver reads back (tuna.searches.runrows)."""

from __future__ import annotations

from types import SimpleNamespace

from tests.searches.helpers import SPEC, TWO_BUILDS, bench_session, new_search
from tuna.db.models import SearchRun
from tuna.jobs.search_results import fail_runs
from tuna.searchers import Proposal
from tuna.searches import runrows
from tuna.searches.create import load_space
from tuna.searches.enqueue import Enqueuer
from tuna.searches.runrows import run_of


def test_a_row_not_ended_is_a_valid_run_and_an_ended_invalid_one_keeps_its_reason():
    row = SimpleNamespace(config={"a": 1}, stats=None, valid=None, reason=None)
    assert run_of(row).valid and run_of(row).stats == {}
    bad = SimpleNamespace(config={"a": 1}, stats=None, valid=False, reason=None)
    assert (run_of(bad).valid, run_of(bad).reason) == (False, "invalid")
    why = SimpleNamespace(config={"a": 1}, stats={"t": 2}, valid=False, reason="boom")
    assert (run_of(why).reason, run_of(why).stats) == ("boom", {"t": 2})


def test_the_rows_read_back_in_order_and_the_unfinished_counted(db):
    session = bench_session(db)
    search = new_search(db, session)
    assert runrows.search_rows(db, search) == [] and runrows.unfinished(db, search) == 0
    assert runrows.time_used(db, search) == 0.0  # no run yet
    space = load_space("params.py", TWO_BUILDS)
    enqueuer = Enqueuer(db, search, session, space, dict(SPEC), builds=True)
    points = [{"a": a, "b": 10} for a in (3, 1, 2)]
    ids = enqueuer.enqueue([(i, Proposal(i, p, p)) for i, p in enumerate(points)])
    with db.transaction() as conn:
        fail_runs(conn, SearchRun.id == ids[1], "refused")
    assert [r.point["a"] for r in runrows.search_rows(db, search)] == [3, 1, 2]
    assert runrows.unfinished(db, search) == 2
    ended = runrows.rows_by_id(db, [ids[1]])
    assert list(ended) == [ids[1]] and ended[ids[1]].reason == "refused"
    assert runrows.time_used(db, search) >= 0.0 and runrows.final_build(db, search) is None
