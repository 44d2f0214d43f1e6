"""The sliced strategy: objectives known before measuring split the budget, one model ranks."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.rounds import drive_rounds
from tuna.searchers import Run
from tuna.searchers.errors import SearcherError
from tuna.searchers.objective import make_objective
from tuna.searchers.pareto import front
from tuna.searchers.run import Point
from tuna.searchers.strategies import CandidateSpace, SlicedSearch, StrategyOptions, make_strategy
from tuna.searchers.strategies.sliced import round_quotas, share

pytest.importorskip("lightgbm")

TWO = make_objective({"time_ms": "min", "threads": "min"})


def known(p: Mapping[str, Any]) -> dict[str, float]:
    """What a backend computes from the parameters: the threads are NT."""
    return {"threads": float(p["NT"])}


def time_ms(p: Mapping[str, Any]) -> float:
    """A smooth bowl over MR and KC, best at MR = 5, KC = 2; two threads take 0.3 of one's
    time (so every two-thread candidate is faster than the best one-thread candidate), with
    a per-NT twist of the best MR so that the two slices' fastest candidates differ."""
    mr, kc, nt = int(p["MR"]), int(p["KC"]), int(p["NT"])
    best_mr = 5 if nt == 1 else 4
    base = 1.0 + 0.2 * (mr - best_mr) ** 2 + 0.15 * (kc - 2) ** 2 + 0.01 * mr * kc
    return base * (1.0 if nt == 1 else 0.3)


def space() -> CandidateSpace:
    points = [
        {"MR": mr, "KC": kc, "NT": nt}
        for mr, kc, nt in itertools.product(range(1, 9), range(0, 6), (1, 2))
    ]
    return CandidateSpace(points, source="layer")


def stats(p: Mapping[str, Any]) -> dict[str, float]:
    return {"time_ms": time_ms(p), **known(p)}


def drive(searcher: Any) -> list[list[Point]]:
    """Every round the searcher proposes, each point measured by :func:`stats`."""
    return drive_rounds(searcher, lambda p: Run(p, stats(p)))


def pareto(points: list[Point]) -> list[Point]:
    return front(points, TWO.targets, stats)


def test_it_finds_the_front_where_the_model_on_time_alone_spends_it_elsewhere() -> None:
    s = space()  # 96 candidates: 48 on each thread count
    exact = pareto(s.points)
    assert [p["NT"] for p in exact] == [2, 1]  # a front of two points
    found = 0
    for seed in range(5):
        sliced = SlicedSearch(s, known=known, objective=TWO, budget=0.4, seed=seed)
        measured = [p for r in drive(sliced) for p in r]
        assert len(measured) == 39
        assert sum(p["NT"] == 1 for p in measured) == 20  # half the budget: half the space
        found += pareto(measured) == exact
        # the same model on time alone (told both objectives): every two-thread candidate
        # is faster, so after its random first round only its explore picks try one thread
        alone = make_strategy("model", s, objective=TWO, budget=0.4, seed=seed)
        by_time = [p for r in drive(alone) for p in r]
        assert sum(p["NT"] == 1 for p in by_time) <= 4 + 4
    assert found >= 4  # of 5 seeds, the whole front


def test_each_round_holds_every_slice_and_each_slice_gets_its_share() -> None:
    sliced = SlicedSearch(space(), known=known, objective=TWO, budget=20, seed=1)
    assert [(s.values, len(s.members), s.budget) for s in sliced.slices] == [
        ((1.0,), 48, 10),
        ((2.0,), 48, 10),
    ]
    rounds = drive(sliced)
    assert [len(r) for r in rounds] == [8, 8, 4]
    for r in rounds:
        assert sorted(p["NT"] for p in r).count(1) == len(r) // 2
    assert sliced.stop_reason == "budget of 20 measurements spent"


def test_a_constraint_on_a_known_stat_keeps_its_candidates_out_and_time_counts() -> None:
    objective = make_objective({"time_ms": "min", "threads": "min"}, ["threads <= 1"])
    sliced = SlicedSearch(space(), known=known, objective=objective, budget=12, seed=2)
    measured = [p for r in drive(sliced) for p in r]
    assert len(measured) == 12 and {p["NT"] for p in measured} == {1}
    assert sliced.get_best()["NT"] == 1


def test_patience_ends_it_with_each_slices_predicted_best() -> None:
    sliced = SlicedSearch(space(), known=known, objective=TWO, patience=8, seed=4)
    rounds = drive(sliced)
    assert (sliced.stop_reason or "").startswith("no improvement in ")
    *before, last = rounds
    measured = [p for r in before for p in r]
    assert len(measured) < len(space()) // 2
    times = [time_ms(p) for p in measured]
    since_best = len(times) - 1 - times.index(min(times))
    assert since_best >= 8  # patience was spent before the last round: it is the final one
    assert sorted(p["NT"] for p in last) == [1, 1, 1, 1, 2, 2, 2, 2]
    assert not any(p in measured for p in last)


def test_one_objective_is_one_slice() -> None:
    sliced = SlicedSearch(space(), known=known, budget=16, seed=5)
    assert [len(s.members) for s in sliced.slices] == [96]
    measured = [p for r in drive(sliced) for p in r]
    assert len(measured) == 16
    assert sliced.best_value == min(time_ms(p) for p in measured)


def test_the_same_runs_give_the_same_rounds() -> None:
    first = drive(SlicedSearch(space(), known=known, objective=TWO, budget=24, seed=7))
    again = drive(SlicedSearch(space(), known=known, objective=TWO, budget=24, seed=7))
    assert first == again
    other = drive(SlicedSearch(space(), known=known, objective=TWO, budget=24, seed=8))
    assert other != first


def test_transfer_without_compatible_history_says_so() -> None:
    sliced = make_strategy(
        "sliced", space(), objective=TWO, budget=16, known=known, transfer=True, history=[]
    )
    assert sliced.notes == [  # type: ignore[attr-defined]
        "transfer: no compatible history (no measurements of other problems were given); "
        "the model learns from this problem's measurements alone"
    ]
    assert StrategyOptions("sliced", transfer=True).transfer


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            {"known": None},
            "^sliced: layer: no stats are known here before measuring .*; pick another strategy$",
        ),
        (
            {"objective": make_objective({"time_ms": "min", "energy": "min"})},
            r"^sliced: layer: one objective must be measured and the others known before "
            r"measuring \(known: threads\); the measured ones here are time_ms:min, "
            "energy:min: measure one",
        ),
        (
            {"objective": make_objective({"threads": "min"})},
            "the measured ones here are none",
        ),
        (
            {"budget": 1},
            r"^sliced: layer: the known objectives \(threads\) take 2 values, more than the "
            "budget of 1 measurements",
        ),
        (
            {"objective": make_objective({"time_ms": "min"}, ["threads >= 3"])},
            "^sliced: layer: no candidate meets the constraints threads >= 3",
        ),
    ],
)
def test_what_it_cannot_slice_is_one_line(kw: dict[str, Any], message: str) -> None:
    options: dict[str, Any] = {"known": known, "objective": TWO, "budget": 16, **kw}
    with pytest.raises(SearcherError, match=message) as e:
        SlicedSearch(space(), **options)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("budget", "sizes", "expected"),
    [
        (64, [128, 128], [32, 32]),
        (10, [30, 10], [8, 2]),  # 7.5 and 2.5: the remainders tie, the first wins
        (3, [100, 1, 1], [1, 1, 1]),  # at least one each
        (5, [2, 100], [1, 4]),  # a small slice: its one, the rest in proportion
        (12, [2, 3], [2, 3]),  # never more than a slice holds
    ],
)
def test_share(budget: int, sizes: list[int], expected: list[int]) -> None:
    assert share(budget, sizes) == expected


@given(st.lists(st.integers(1, 60), min_size=1, max_size=8), st.data())
def test_share_spends_the_budget_within_each_slice(sizes: list[int], data: Any) -> None:
    budget = data.draw(st.integers(len(sizes), sum(sizes)))
    out = share(budget, sizes)
    assert sum(out) == budget
    assert all(1 <= b <= n for b, n in zip(out, sizes, strict=True))


@pytest.mark.parametrize(
    ("size", "left", "turn", "expected"),
    [
        (8, [10, 10], 0, [4, 4]),
        (7, [10, 10], 0, [4, 3]),
        (7, [10, 10], 1, [3, 4]),  # the remainder rotates
        (8, [1, 10], 0, [1, 7]),  # a slice near its budget leaves the rest to the others
        (8, [0, 2], 0, [0, 2]),  # less left than a round
    ],
)
def test_round_quotas(size: int, left: list[int], turn: int, expected: list[int]) -> None:
    assert round_quotas(size, left, turn) == expected
