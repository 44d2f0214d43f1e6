from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuna.searchers import Objective, Run
from tuna.searchers.progress import Improvement, best_so_far, improvements, objective_values


def test_best_so_far_keeps_the_best_through_measurements_that_do_not_count():
    values = [None, 5.0, 7.0, None, 3.0, 4.0, 3.0]
    assert best_so_far(values, "min") == [None, 5.0, 5.0, 5.0, 3.0, 3.0, 3.0]
    assert best_so_far(values, "max") == [None, 5.0, 7.0, 7.0, 7.0, 7.0, 7.0]
    # Only strict improvements are steps: the second 3.0 is not one.
    assert improvements(values, "min") == [Improvement(2, 5.0), Improvement(5, 3.0)]
    assert improvements(values, "max") == [Improvement(2, 5.0), Improvement(3, 7.0)]
    assert best_so_far([], "min") == [] and improvements([None], "max") == []


values_lists = st.lists(st.one_of(st.none(), st.integers(-50, 50).map(float)), max_size=40)


@given(values_lists, st.sampled_from(["min", "max"]))
def test_best_so_far_is_the_best_of_each_prefix_and_the_steps_draw_it(values, goal):
    pick = min if goal == "min" else max
    curve = best_so_far(values, goal)
    for n in range(len(values)):
        seen = [v for v in values[: n + 1] if v is not None]
        assert curve[n] == (pick(seen) if seen else None)
    # The curve rebuilt from its steps alone is the curve.
    steps = {s.n: s.best for s in improvements(values, goal)}
    rebuilt, best = [], None
    for n in range(1, len(values) + 1):
        best = steps.get(n, best)
        rebuilt.append(best)
    assert rebuilt == curve


def test_objective_values_are_none_where_a_run_does_not_count():
    objective = Objective("qps", "max", validity="result_validity")
    runs = [
        Run({"a": 1}, {"qps": 100, "result_validity": "VALID"}),
        Run({"a": 2}, {"qps": 900, "result_validity": "INVALID"}),
        Run.invalid({"a": 3}, "exit 1"),
        Run({"a": 4}, {"qps": 250.5, "result_validity": "valid"}),
    ]
    assert objective_values(runs, objective) == [100.0, None, None, 250.5]
    assert best_so_far(objective_values(runs, objective), "max")[-1] == pytest.approx(250.5)
