"""The report's sections (tuna.report.sections): the parts that need no database."""

from __future__ import annotations

from tuna.report.sections import pareto_sets
from tuna.results.insight import FindPoint


def _point(session, config, solver, time_ms, workspace):
    return FindPoint(0, session, config, 1, "k", "fwd 3x3", solver, time_ms, workspace)


def test_each_problem_s_set_marks_its_front_and_take_best_more():
    points = [
        _point(1, 5, "fast-big", 1.0, 100),
        _point(1, 5, "slow-small", 3.0, 0),
        _point(1, 5, "dominated", 4.0, 200),
        _point(1, 5, "near", 2.0, 150),
        _point(2, 5, "alone", 9.0, 0),
    ]
    first, second = pareto_sets(points, take_best=1)
    assert (first["session"], second["session"]) == (1, 2)
    marks = {p["solver"]: (p["front"], p["pareto_optimal"], p["selected"]) for p in first["points"]}
    assert marks["fast-big"] == (0, True, True) and marks["slow-small"] == (0, True, True)
    assert marks["near"] == (1, False, True)  # the one more --take-best 1 selects
    assert marks["dominated"][1:] == (False, False)
    assert [p["pareto_optimal"] for p in second["points"]] == [True]
