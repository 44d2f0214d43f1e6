"""A bench search of two objectives, a constraint and a baseline, driven through the queue:
the baseline is measured first as run -1 (never replayed to the searcher, which starts once
it has landed), runs failing the constraint are recorded but do not count, and the answer
is the Pareto front."""

from __future__ import annotations

import pytest

from tests.searches.helpers import (
    BISECT,
    bench_session,
    drain,
    driving,
    new_search,
    runs,
    search_state,
)
from tuna.db import Database
from tuna.errors import TunaError
from tuna.searchers.pareto import Target
from tuna.searches import query
from tuna.searches.drive import SearchDriver
from tuna.worker import run_worker

SPEC = {
    "build": "echo {b} > built.txt",
    "run": 'echo "t: $(( {a} * $(cat built.txt) ))"; '
    'echo "acc: $(( 80 + 3 * {a} + $(cat built.txt) / 10 ))"',
    "owns": "nothing",
    "run_timeout_s": 30,
}
EXACT = {"a": 3, "b": 20}  # the slowest and most accurate: t 60, acc 91
OBJECTIVES = {"objective": "t", "goal": "min", "more": (Target("acc", "max"),)}


def test_the_baseline_runs_first_and_the_front_is_of_runs_within_the_constraint(db: Database):
    session = bench_session(db)
    search = new_search(db, session, spec=SPEC, constraints=("acc >= baseline.acc - 4",),
                        baseline=EXACT, **OBJECTIVES)  # fmt: skip
    with driving(db, session):
        drain(db, session, claim_batch=4)
    assert search_state(db, search) == ("done", None)
    rows = runs(db, search)
    assert [r.seq for r in rows] == [-1, 0, 1, 2, 3, 4, 5]
    assert rows[0].config["a"] == 3 and rows[0].stats == {"t": 60, "acc": 91}
    s = query.find_search(db, search)
    counted = [r.seq for r in query.runs(db, s, limit=None) if s.counts(r.valid, r.value, r.stats)]
    assert counted == [-1, 2, 3, 4, 5]  # a = 1 loses more than 4 points of accuracy
    front = query.pareto(db, s)
    assert [(r.seq, r.stats["t"], r.stats["acc"]) for r in front] == [
        (2, 20, 87), (4, 30, 90), (-1, 60, 91), (5, 60, 91),
    ]  # fmt: skip
    best = query.best_run(db, s)
    assert best is not None and best.seq == 2


def test_a_dynamic_searcher_is_never_sent_the_baseline(lite: Database):
    session = bench_session(lite)
    searcher = "Bisect('a', 1, 40, 1, lambda r: r.valid and r.stats['t'] <= 170)"
    search = new_search(lite, session, space=BISECT, searcher=searcher, spec=SPEC,
                        base={"b": 10}, baseline={"a": 40, "b": 10}, **OBJECTIVES)  # fmt: skip
    with driving(lite, session):
        drain(lite, session)
    assert search_state(lite, search) == ("done", None)
    rows = runs(lite, search)
    assert rows[0].seq == -1 and rows[0].config["a"] == 40
    assert max(r.config["a"] for r in rows[1:] if r.stats["t"] <= 170) == 17
    # A second driver replays the recorded runs (the baseline left out) and enqueues nothing.
    driver = SearchDriver(lite, search)
    driver.start()
    assert len(runs(lite, search)) == len(rows)


def test_bad_objectives_are_refused_before_anything_is_stored(lite: Database):
    session = bench_session(lite)
    cases = [
        ({"constraints": ("acc >= baseline.acc",)}, "but no baseline is given"),
        ({"constraints": ("acc >>= 1",)}, "not an expression"),
        ({"baseline": {"a": 1}}, "misses 'b'"),
        ({"more": (Target("t", "max"),)}, "objective 't' is given twice"),
    ]
    for kw, message in cases:
        with pytest.raises(TunaError, match=message):
            new_search(lite, session, spec=SPEC, objective="t", **kw)
    assert query.list_searches(lite, session) == []


CURVE = '{"a": [1, 2, 3, 4, 5, 6, 7, 8], "b": [1, 2, 3, 4, 5, 6, 7, 8]}'
CURVE_SPEC = {
    "run": 'echo "cost: $(( {a} + {b} ))"; '
    'echo "acc: $(( 20 * {a} - 2 * {a} * {a} + 12 * {b} - 2 * {b} * {b} ))"',
    "owns": "nothing",
    "run_timeout_s": 30,
}


def test_the_predictive_strategy_over_the_queue_finds_the_front_with_part_of_the_space(lite):
    """A bench search with --searcher predictive, drained by workers: at most three quarters
    of the 64 points, and the front of what it measured is the exhaustive one (9 points)."""
    session = bench_session(lite)
    search = new_search(lite, session, space=CURVE, space_file="params.json", spec=CURVE_SPEC,
                        objective="cost", more=(Target("acc", "max"),),
                        searcher="Strategy('predictive', space, seed=1, margin=0.1)")  # fmt: skip
    with driving(lite, session):
        drain(lite, session, claim_batch=4)
    assert search_state(lite, search) == ("done", None)
    measured = runs(lite, search)
    assert 16 < len(measured) <= 48  # seeds, then only what is predicted near the front
    front = query.pareto(lite, query.find_search(lite, search))
    assert sorted((r.point["a"], r.point["b"]) for r in front) == [
        (1, 1), (2, 1), (3, 1), (3, 2), (4, 1), (4, 2), (4, 3), (5, 2), (5, 3),
    ]  # fmt: skip


def test_the_searcher_starts_once_the_baseline_has_landed_and_judges_by_it(lite: Database):
    """A constraint over the baseline is judged only once the baseline is known: the
    driver enqueues run -1 alone, and its searcher (here one that is told which runs count)
    starts with the baseline's stats; a second driver resumes the same way."""
    session = bench_session(lite)
    search = new_search(lite, session, spec=SPEC, constraints=("acc >= baseline.acc - 4",),
                        baseline=EXACT, searcher="Strategy('hillclimb', space, seed=1)",
                        **OBJECTIVES)  # fmt: skip
    driver = SearchDriver(lite, search)
    assert driver.tick() and driver.waiting
    assert [r.seq for r in runs(lite, search)] == [-1]
    assert driver.objective.baseline is None
    run_worker(lite, session, "eval", until_empty=True, handle_signals=False)
    assert driver.tick()
    assert driver.objective.baseline == {"t": 60, "acc": 91}
    assert len(runs(lite, search)) > 1  # the searcher's first proposals
    again = SearchDriver(lite, search)
    again.start()  # the baseline has landed: it replays the recorded runs at once
    assert not again.awaiting_baseline and again.objective.baseline == {"t": 60, "acc": 91}


def test_a_baseline_without_a_stat_the_constraint_reads_fails_the_search_in_one_line(lite):
    session = bench_session(lite)
    search = new_search(lite, session, spec=SPEC, constraints=("acc >= baseline.qos",),
                        baseline=EXACT, **OBJECTIVES)  # fmt: skip
    with driving(lite, session):
        drain(lite, session)
    state, reason = search_state(lite, search)
    assert (state, reason) == (
        "failed",
        "search 1 (s): the constraint's stat 'qos' is not in the baseline's output (the "
        "baseline printed: acc, t); name one of those, or make the benchmark print it",
    )
    assert [r.seq for r in runs(lite, search)] == [-1]  # nothing else was proposed
