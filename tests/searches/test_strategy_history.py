"""What a strategy search reads of the history (tuna.searches.strategy_history): the
measurements that count for its session, as a model learns from them."""

from __future__ import annotations

from sqlalchemy import func, select

from tests.searches.test_strategy import (
    SOLVER,
    cpuconv_session,
    measure_rows,
    other_problem_session,
)
from tuna.db import Database
from tuna.db.models import Measurement
from tuna.searches.strategy_history import strategy_history


def test_the_models_history_is_the_measurements_that_count(db: Database) -> None:
    session, config = cpuconv_session(db)
    # another session of the same target measured another problem
    elsewhere, other = other_problem_session(db)
    # the first row as written before LO and PB existed: it counts as the kernel it named
    measure_rows(db, session, config, [("1,1,4,64,1", 2.0)])
    measure_rows(db, elsewhere, other, [("1,1,4,64,1,0,0", 5.0), ("2,1,4,64,1,0,1", 4.0)])
    with db.session() as s:
        own = strategy_history(s, session, config, SOLVER, transfer=False, until=None)
        every = strategy_history(s, session, config, SOLVER, transfer=True, until=None)
        first = s.scalar(select(func.min(Measurement.id)))
        before = strategy_history(s, session, config, SOLVER, transfer=True, until=first)
    assert [(p, t) for _, p, t in own] == [
        ({"MR": 1, "NV": 1, "VW": 4, "KC": 64, "NT": 1, "LO": 0, "PB": 0}, 2.0)
    ]
    assert sorted(t for _, _, t in every) == [2.0, 4.0, 5.0]
    assert len({tuple(sorted(f.items())) for f, _, _ in every}) == 2  # two problems' features
    assert len(before) == 1  # a snapshot: what a resumed search reads again
    # a retired session's rows leave the history (the same rules as every other decision)
    from tuna.sessions.history import retire

    retire(db, elsewhere)
    with db.session() as s:
        left = strategy_history(s, session, config, SOLVER, transfer=True, until=None)
    assert [t for _, _, t in left] == [2.0]
