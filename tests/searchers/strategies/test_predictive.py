"""The predictive strategy: a model per objective stat, only the predicted front measured."""

from __future__ import annotations

import itertools

import pytest

from tests.support.rounds import drive_rounds
from tuna.searchers import Run, replay
from tuna.searchers.errors import SearcherError
from tuna.searchers.objective import Objective, make_objective
from tuna.searchers.pareto import front
from tuna.searchers.run import Point
from tuna.searchers.strategies import CandidateSpace, PredictiveSearch, make_strategy

LAYERS = 3
COST = (256, 192, 128, 96, 64, 32)  # a layer's cost at each approximation level
LOSS = (0.0, 0.05, 0.2, 0.5, 1.1, 2.3)  # the accuracy it loses there


def net(p: Point) -> dict[str, float]:
    """A PredTuner-like function: each layer's level trades cost for accuracy, the later
    layers losing more (deterministic, so the true front is known)."""
    levels = [int(p[f"layer{i}"]) for i in range(LAYERS)]
    cost = sum(COST[v] for v in levels)
    accuracy = 92 - sum(LOSS[v] * (1 + 0.3 * i) for i, v in enumerate(levels))
    return {"mflop": float(cost), "accuracy": round(accuracy, 3)}


def space() -> CandidateSpace:
    names = [f"layer{i}" for i in range(LAYERS)]
    points = [dict(zip(names, v, strict=True)) for v in itertools.product(range(6), repeat=LAYERS)]
    return CandidateSpace(points, source="net")


OBJECTIVE = make_objective({"mflop": "min", "accuracy": "max"}, ["accuracy >= 89.5"])


def drive(searcher: PredictiveSearch) -> list[Point]:
    """Every point the searcher measures, each measured by :func:`net`."""
    return [p for batch in drive_rounds(searcher, lambda p: Run(p, net(p))) for p in batch]


def true_front(points: list[Point]) -> list[Point]:
    return front([p for p in points if OBJECTIVE.counts(Run(p, net(p)))], OBJECTIVE.targets, net)


def test_it_measures_a_fraction_of_the_space_and_finds_the_true_front() -> None:
    s = space()
    searcher = make_strategy("predictive", s, objective=OBJECTIVE, seed=1, margin=0.02)
    measured = drive(searcher)
    exact = true_front(s.points)
    assert len(exact) >= 5  # a front worth finding
    assert len(measured) < len(s) // 2  # far fewer than exhaustive's 216
    assert true_front(measured) == exact
    assert searcher.stop_reason == "no unmeasured candidate is predicted within 0.02 of the front"


def test_what_it_chose_by_prediction_was_predicted_to_meet_the_constraint() -> None:
    s = space()
    searcher = make_strategy("predictive", s, objective=OBJECTIVE, seed=2, round_size=4)
    measured = drive(searcher)
    predicted = [searcher.predicted(p) for p in measured]
    seeds = searcher.seed_runs
    assert seeds == 8 and all(p is None for p in predicted[:seeds])  # chosen at random
    chosen = predicted[seeds:]
    assert chosen and all(p is not None and p["accuracy"] >= 89.5 for p in chosen)
    assert all(set(p or {}) == {"mflop", "accuracy"} for p in chosen)


def test_a_wider_margin_measures_more() -> None:
    counts = [
        len(drive(make_strategy("predictive", space(), objective=OBJECTIVE, seed=1, margin=m)))
        for m in (0.0, 0.3)
    ]
    assert counts[0] < counts[1]


def test_the_same_runs_give_the_same_proposals_and_predictions_on_replay() -> None:
    s = space()
    first = make_strategy("predictive", s, objective=OBJECTIVE, seed=5, round_size=4)
    measured = drive(first)
    recorded = [Run(p, net(p)) for p in measured[:20]]
    again = make_strategy("predictive", s, objective=OBJECTIVE, seed=5, round_size=4)
    resumed = replay(s.parameter_space(), recorded, again)
    assert resumed.next is not None and resumed.next.point == measured[20]
    assert isinstance(again, PredictiveSearch)
    assert [again.predicted(p) for p in measured[:16]] == [
        first.predicted(p) for p in measured[:16]
    ]


def test_one_objective_measures_near_the_predicted_best() -> None:
    """What the model chose is cheaper than the random seeds, and better than their best."""
    s = space()
    searcher = make_strategy("predictive", s, objective=Objective("mflop"), seed=1, margin=0.1)
    measured = drive(searcher)
    seeds, chosen = measured[: searcher.seed_runs], measured[searcher.seed_runs :]
    cost = [net(p)["mflop"] for p in measured]
    assert chosen and len(measured) < len(s) // 4
    mean = sum(cost[len(seeds) :]) / len(chosen)
    assert mean < sum(cost[: len(seeds)]) / len(seeds)
    assert min(cost) < min(cost[: len(seeds)])


def test_the_budget_caps_it() -> None:
    searcher = make_strategy("predictive", space(), objective=OBJECTIVE, budget=12, seed=1)
    assert len(drive(searcher)) == 12
    assert searcher.stop_reason == "budget of 12 measurements spent"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"margin": -0.1}, r"^predictive: margin -0\.1: give a share of each objective's spread"),
        ({"seed_runs": 1}, r"^predictive: seed_runs 1: give at least 2"),
        ({"sample": 0}, r"^predictive: sample 0: give at least 1"),
    ],
)
def test_bad_options_are_one_line(options: dict[str, float], message: str) -> None:
    with pytest.raises(SearcherError, match=message) as e:
        make_strategy("predictive", space(), objective=OBJECTIVE, **options)
    assert "\n" not in str(e.value)


def test_seeds_that_never_hold_a_stat_end_it_saying_so() -> None:
    s = space()
    searcher = make_strategy("predictive", s, objective=OBJECTIVE, seed=1)
    gen = searcher.rounds()
    batch = next(gen)
    with pytest.raises(StopIteration):
        while True:  # the benchmark prints no accuracy
            batch = gen.send([Run(p, {"mflop": 1.0}) for p in batch])
    assert searcher.stop_reason is not None
    assert searcher.stop_reason.startswith("fewer than 2 of the 16 seed measurements hold")
