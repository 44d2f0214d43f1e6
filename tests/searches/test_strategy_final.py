"""A strategy search's final job stores a winner that counts, and the search's answer is
that winner (the house rule: the perf/find rows, ``tuna best --search`` and ``tuna search
show`` agree). Real cpuconv kernels timed by a real worker.

The final job re-times the finalists and stores the fastest timing any of them had in the
session; a run's value is its candidate's fastest valid timing in the session. Where a
re-timing turn beats the best run's round (a loaded machine times the same kernel 2-3x
apart), the final job stores another finalist than the search's best run unless the runs
take the final job's timings too. The test stands a faster session timing of the second
finalist (a measurement row, as a re-timing turn writes one) in for such a turn, so the
reordering happens every time rather than when the machine happens to be loaded."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from tests.searches.helpers import runs, search_state
from tests.searches.test_strategy import SOLVER, _round_jobs, cpuconv_session, measure_rows
from tests.searches.test_strategy_baseline import _default, _work
from tuna.db import Database
from tuna.db.models import FindDb, PerfDb
from tuna.searchers.objective import make_objective
from tuna.searchers.strategies import StrategyOptions
from tuna.searches import SearchDriver, query
from tuna.searches.runrows import final_build
from tuna.searches.strategy import StrategyAims, load_strategy_searches
from tuna.searches.winner import stored_result

pytestmark = pytest.mark.usefixtures("own_lock_dir")


def text(point: dict[str, Any]) -> str:
    return ",".join(str(v) for v in point.values())


def drive_with_a_faster_turn(db: Database, session: int, search: int) -> str:
    """Drive ``search`` to its end; once its final job is enqueued, give its second
    finalist a session timing far below the best run's (as a disturbed round and a quiet
    re-timing turn would). Returns that finalist's candidate text."""
    driver = SearchDriver(db, search)
    while driver.tick() and final_build(db, search) is None:
        _work(db, session)
    final = _round_jobs(db, search)[-1]
    assert len(final) >= 2, f"seed 3 gives two finalists that count, not {final}"
    by_text = {text(r.point): r for r in runs(db, search)}
    best = min(by_text[t].value for t in final)
    measure_rows(db, session, int(driver.spec["config"]), [(final[1], best / 100)])
    _work(db, session)
    while driver.tick():
        _work(db, session)
    assert search_state(db, search) == ("done", None)
    return final[1]


def stored(db: Database) -> tuple[str, str | None]:
    with db.session() as s:
        (perf,) = s.scalars(select(PerfDb.params)).all()
        (find,) = s.scalars(select(FindDb.params)).all()
    return perf, find


@pytest.mark.serial
@pytest.mark.parametrize("constraint", ["threads >= 2", "threads > baseline.threads"])
def test_the_stored_winner_counts_and_is_the_searchs_answer(db: Database, constraint: str) -> None:
    session, config = cpuconv_session(db)
    options = StrategyOptions("random", budget=8, round_size=4, seed=3)
    aims = StrategyAims(make_objective({"time_ms": "min"}, [constraint]))
    (search,) = load_strategy_searches(
        db, session, options, tag="t", solvers=[SOLVER], aims=aims
    ).created
    default = _default(db, config)  # one thread: it fails the constraint
    faster = drive_with_a_faster_turn(db, session, search)

    s = query.find_search(db, search)
    shown = query.runs(db, s, limit=None)
    final = _round_jobs(db, search)[-1]
    counting = {text(r.point) for r in shown if s.counts(r.valid, r.value, r.stats)}
    assert default not in counting and default not in final
    assert set(final) <= counting
    perf, find = stored(db)
    assert perf == find == faster  # the finalist with the fastest timing in the session
    best = query.best_run(db, s)
    assert best is not None and text(best.point) == perf
    assert best.stats["threads"] >= 2
    answer = stored_result(db, search)
    assert answer is not None and answer.mine and answer.params == perf
    assert best.value == best.stats["time_ms"] == answer.time_ms
