"""A search's parameter importance: the model strategy's own model, else a fit to its runs."""

from __future__ import annotations

import pytest

from tests.searches.helpers import runs
from tests.searches.seed import land
from tests.searches.test_strategy import cpuconv_session, strategy_request
from tuna.db import Database
from tuna.searches.drive import SearchDriver
from tuna.searches.importance import (
    MIN_RUNS,
    Importance,
    fitted_importance,
    parameter_importance,
    strategy_importance,
)
from tuna.searches.query import find_search
from tuna.searches.strategy import create_strategy_search


def measure_rounds(db: Database, search: int, rounds: int) -> None:
    """Drive ``rounds`` rounds of the search, each run landing with a time only MR decides."""
    driver = SearchDriver(db, search)
    landed: set[int] = set()
    for _ in range(rounds):
        driver.tick()
        for r in runs(db, search):
            if r.seq not in landed:
                land(db, search, r.seq, {"time_ms": 1.0 + r.point["MR"]})
                landed.add(r.seq)


def test_a_model_strategy_search_shows_what_its_own_model_learnt(lite: Database) -> None:
    session, config = cpuconv_session(lite)
    search = create_strategy_search(
        lite, strategy_request(session, config, "model", budget=24, round_size=8, seed=3)
    )
    assert strategy_importance(lite, search) == "the model strategy has measured nothing yet"
    measure_rounds(lite, search, 2)
    found = strategy_importance(lite, search)
    assert isinstance(found, Importance)
    assert found.model.startswith("the model strategy's own cost model, trained on this "
                                  "search's 16 valid measurements")  # fmt: skip
    names = [n for n, _ in found.shares]
    assert names[0] == "MR" and found.shares[0][1] > 0.5
    # every parameter of the space is listed; the problem's features only where they count
    assert {"MR", "NV", "VW", "KC", "NT", "LO", "PB"} <= set(names)
    assert all(share > 0 for n, share in found.shares if n.startswith("problem."))
    summary = find_search(lite, search)
    assert parameter_importance(lite, summary, []) == found  # not a fit to the runs given


def test_other_searches_get_a_fit_to_their_best_runs(lite: Database) -> None:
    session, config = cpuconv_session(lite)
    search = create_strategy_search(
        lite, strategy_request(session, config, "random", budget=16, round_size=8, seed=3)
    )
    measure_rounds(lite, search, 2)
    assert strategy_importance(lite, search) is None
    summary = find_search(lite, search)
    best = [(r.point, r.value) for r in runs(lite, search) if r.value is not None]
    found = parameter_importance(lite, summary, best)
    assert isinstance(found, Importance) and found.shares[0][0] == "MR"
    assert found.model.startswith("gradient-boosted trees (Tuna's cost model) fitted to the "
                                  "best 16 runs' time_ms")  # fmt: skip
    assert strategy_importance(lite, 999) is None


@pytest.mark.parametrize(
    "runs_given",
    [
        [({"a": i}, 1.0) for i in range(MIN_RUNS - 1)],  # too few
        [({"a": 1, "b": i}, 1.0) for i in range(0)],  # none
        [({"a": 1}, float(i + 1)) for i in range(MIN_RUNS)],  # nothing varies
    ],
)
def test_too_little_to_fit_is_said_not_fitted(runs_given: list) -> None:
    assert fitted_importance(runs_given) == (
        f"needs {MIN_RUNS} finished runs over parameters that vary"
    )
