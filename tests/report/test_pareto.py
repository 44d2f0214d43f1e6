from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuna.errors import TunaError
from tuna.report.pareto import fronts, parse_stat_pair, rank, rank_goals
from tuna.searchers.pareto import Target, key_dominates


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
            assert not any(key_dominates(q, p) for q in pts)
        else:
            assert any(key_dominates(pts[j], p) for j in range(len(pts)) if f[j] == f[i] - 1)
        # No point dominates another of its own front.
        assert not any(key_dominates(pts[j], p) for j in range(len(pts)) if f[j] == f[i])


@given(st.lists(coords, max_size=25), st.integers(0, 30))
def test_take_best_marks_exactly_n_more_when_there_are_enough(pts, n):
    ranked = rank(pts, n)
    optimal = sum(r.optimal for r in ranked)
    assert sum(r.near_optimal for r in ranked) == optimal + min(n, len(pts) - optimal)


def peeled(pts):
    """Non-dominated sorting by its definition: peel off the undominated points in turn."""
    front_of, remaining, level = [-1] * len(pts), set(range(len(pts))), 0
    while remaining:
        current = {
            i for i in remaining if not any(key_dominates(pts[j], pts[i]) for j in remaining)
        }
        for i in current:
            front_of[i] = level
        remaining -= current
        level += 1
    return front_of


@given(st.lists(coords, max_size=40))
def test_fronts_equal_peeling_the_undominated_points_off_in_turn(pts):
    assert fronts(pts) == peeled(pts)


def test_a_thousand_points_on_a_thousand_fronts_are_ranked():
    # A chain: each point dominates the next; peeling would take n passes of n^2.
    pts = [(float(i), float(i)) for i in range(1000)]
    assert fronts(pts) == list(range(1000))


def test_goals_maximise_an_axis_and_keep_the_values_as_given():
    # (throughput, p95 ms): more throughput and less latency are better.
    pts = [(100.0, 5.0), (200.0, 9.0), (150.0, 9.5), (50.0, 4.0), (90.0, 6.0)]
    ranked = rank_goals(pts, ("max", "min"), take_best=1)
    assert [r.front for r in ranked] == [0, 0, 1, 0, 1]
    assert [(r.x, r.y) for r in ranked] == pts
    # The extra one is the front-1 point with the best throughput.
    assert [r.index for r in ranked if r.near_optimal and not r.optimal] == [2]
    assert [r.front for r in rank_goals(pts, ("min", "min"))] == [1, 2, 2, 0, 1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("throughput:max,p95_ms:min", (Target("throughput", "max"), Target("p95_ms", "min"))),
        (" a:min , b:max ", (Target("a", "min"), Target("b", "max"))),
        ("lat:p95:min,qps:max", (Target("lat:p95", "min"), Target("qps", "max"))),
    ],
)
def test_stat_goals_parse(text, expected):
    assert parse_stat_pair(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("throughput:max", "name two stats"),
        ("a:max,b:min,c:min", "name two stats"),
        ("a:up,b:min", "'a:up' is not STAT:min or STAT:max"),
        ("a,b:min", "'a' is not STAT:min"),
        (":min,b:min", "':min' is not STAT:min"),
        ("a:min,a:max", "two different stats"),
    ],
)
def test_bad_stat_goals_say_what_is_expected(text, message):
    with pytest.raises(TunaError, match=re.escape(message)):
        parse_stat_pair(text)
