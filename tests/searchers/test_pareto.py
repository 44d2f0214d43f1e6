"""Pareto fronts against the definition, on random points."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tuna.searchers.pareto import Target, dominates, front, nondominated

TARGETS = (Target("time_ms", "min"), Target("accuracy", "max"))


def test_front_in_priority_order() -> None:
    points = [
        {"time_ms": 5, "accuracy": 80},  # dominated by the one of time 4
        {"time_ms": 4, "accuracy": 85},
        {"time_ms": 10, "accuracy": 90},
        {"time_ms": 2, "accuracy": 70},
        {"time_ms": 10, "accuracy": 89},  # dominated by the one of accuracy 90
        {"time_ms": 4, "accuracy": 85},  # equal to one on the front: on it too
    ]
    assert front(points, TARGETS, dict) == [points[3], points[1], points[5], points[2]]


def test_dominates() -> None:
    a, b = {"time_ms": 1, "accuracy": 9}, {"time_ms": 2, "accuracy": 9}
    assert dominates(a, b, TARGETS) and not dominates(b, a, TARGETS)
    assert not dominates(a, a, TARGETS)


def test_one_objective_is_the_best_and_its_equals() -> None:
    points = [{"t": 3}, {"t": 1}, {"t": 2}, {"t": 1}]
    assert front(points, [Target("t")], dict) == [points[1], points[3]]
    assert front(points, [Target("t", "max")], dict) == [points[0]]


values = st.integers(min_value=0, max_value=6)
points = st.lists(st.fixed_dictionaries({"a": values, "b": values, "c": values}), max_size=30)
goals = st.tuples(*[st.sampled_from(["min", "max"])] * 3)


@given(points, goals)
def test_front_is_exactly_the_undominated(points: list[dict[str, int]], g: tuple[str, ...]) -> None:
    targets = [Target(stat, goal) for stat, goal in zip("abc", g, strict=True)]  # type: ignore[arg-type]
    got = front(points, targets, dict)
    expected = [p for p in points if not any(dominates(q, p, targets) for q in points)]
    assert sorted(map(id, got)) == sorted(map(id, expected))


def test_nondominated_keys_are_front_of_the_same_values_once_each() -> None:
    keys = [(2.0, 1.0), (1.0, 3.0), (2.0, 1.0), (3.0, 3.0), (1.0, 4.0), (0.5, 5.0)]
    targets = [Target("a"), Target("b")]
    by_front = front(keys, targets, lambda k: {"a": k[0], "b": k[1]})
    assert nondominated(keys) == sorted(set(by_front)) == [(0.5, 5.0), (1.0, 3.0), (2.0, 1.0)]
