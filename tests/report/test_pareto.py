from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuna.report.pareto import dominates, fronts, rank


def test_front_of_a_time_workspace_trade_off():
    # (time, workspace): a is fastest but hungry, c frugal but slow, b between; d loses to b.
    pts = [(1.0, 100.0), (2.0, 10.0), (5.0, 0.0), (3.0, 50.0), (6.0, 60.0)]
    assert fronts(pts) == [0, 0, 0, 1, 2]


def test_equal_points_share_a_front_and_ties_in_one_objective_dominate():
    assert fronts([(1.0, 1.0), (1.0, 1.0), (1.0, 2.0)]) == [0, 0, 1]


def test_take_best_marks_the_next_fronts_in_order():
    pts = [(1.0, 100.0), (3.0, 50.0), (6.0, 60.0), (2.0, 10.0), (4.0, 55.0)]
    marked = [r.index for r in rank(pts, take_best=2) if r.near_optimal and not r.optimal]
    assert marked == [1, 4]  # front 1 holds (3,50) and (4,55); (6,60) is front 2
    assert [r.index for r in rank(pts, take_best=0) if r.near_optimal] == [0, 3]
    with pytest.raises(ValueError):
        rank(pts, take_best=-1)


coords = st.tuples(st.integers(0, 20).map(float), st.integers(0, 20).map(float))


@given(st.lists(coords, max_size=25))
def test_fronts_are_a_non_dominated_sorting(pts):
    f = fronts(pts)
    for i, p in enumerate(pts):
        # Nothing dominates a front-0 point; something on the previous front dominates the rest.
        if f[i] == 0:
            assert not any(dominates(q, p) for q in pts)
        else:
            assert any(dominates(pts[j], p) for j in range(len(pts)) if f[j] == f[i] - 1)
        # No point dominates another of its own front.
        assert not any(dominates(pts[j], p) for j in range(len(pts)) if f[j] == f[i])


@given(st.lists(coords, max_size=25), st.integers(0, 30))
def test_take_best_marks_exactly_n_more_when_there_are_enough(pts, n):
    ranked = rank(pts, n)
    optimal = sum(r.optimal for r in ranked)
    assert sum(r.near_optimal for r in ranked) == optimal + min(n, len(pts) - optimal)
