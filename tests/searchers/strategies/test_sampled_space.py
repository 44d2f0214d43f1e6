"""Optuna's samplers over a parameter space (issue #28): ranges as Optuna's distributions,
conditional parameters suggested only where they exist, several objectives."""

from __future__ import annotations

import math

import pytest

from tests.support.rounds import drive_rounds
from tuna.searchers import ParameterSpace, Run, replay
from tuna.searchers.errors import SearchError
from tuna.searchers.objective import Objective, make_objective
from tuna.searchers.params import Categorical, Float, Int
from tuna.searchers.run import Point
from tuna.searchers.strategies import strategy_over
from tuna.searchers.strategies.sampled_space import SampledSpace


def space() -> ParameterSpace:
    return ParameterSpace(
        {
            "algo": Categorical(("tiled", "direct")),
            "tile": Categorical((4, 8, 16, 32), when={"algo": "tiled"}),
            "lr": Float(1e-4, 1e-1, log=True),
            "n": Int(2, 64, step=2),
        },
        source="ranges.py",
    )


def cost(p: Point) -> float:
    tile = abs(int(p["tile"]) - 16) / 8 if p["algo"] == "tiled" else 1.5
    return (math.log10(float(p["lr"])) + 2.5) ** 2 + (int(p["n"]) - 20) ** 2 / 100 + tile


def drive(searcher: SampledSpace, runs_of=lambda p: Run(p, {"t": cost(p)})) -> list[list[Point]]:
    return drive_rounds(searcher, runs_of, reverse=True)


@pytest.mark.parametrize("name", ["tpe", "cmaes", "nsga2"])
def test_ranges_and_conditions_are_sampled_as_declared(name: str) -> None:
    s = SampledSpace(name, space(), objective=Objective("t"), budget=20, round_size=6, seed=1)
    rounds = drive(s)
    points = [p for r in rounds for p in r]
    assert [len(r) for r in rounds] == [6, 6, 6, 2]
    for p in points:
        assert ("tile" in p) == (p["algo"] == "tiled")  # only where its condition holds
        assert 1e-4 <= p["lr"] <= 1e-1 and p["n"] % 2 == 0 and 2 <= p["n"] <= 64
        space().check_point(p)
    assert len({tuple(sorted(p.items())) for p in points}) == 20
    assert cost(s.get_best()) == min(cost(p) for p in points)


def test_tpe_over_ranges_is_seeded_and_resumes_by_replay() -> None:
    def points(seed: int) -> list[Point]:
        s = SampledSpace("tpe", space(), objective=Objective("t"), budget=24, seed=seed)
        return [p for r in drive(s) for p in r]

    whole = points(5)
    assert whole == points(5) and whole != points(6)
    done = [Run(p, {"t": cost(p)}) for p in whole[:11]]
    fresh = SampledSpace("tpe", space(), objective=Objective("t"), budget=24, seed=5)
    resumed = replay(space(), done, fresh)
    rest, proposal = [], resumed.next
    while proposal is not None:
        rest.append(dict(proposal.point))
        proposal = resumed.proposer.send(Run(proposal.point, {"t": cost(proposal.point)}))
    assert rest == whole[11:]


def test_tpe_beats_random_draws_over_ranges() -> None:
    """The best after 40 runs, median of 5 seeds: TPE's model of where good points are
    against the space's own uniform (log-uniform for lr) draws."""
    import random
    import statistics

    def tpe(seed: int) -> float:
        s = SampledSpace("tpe", space(), objective=Objective("t"), budget=40, seed=seed)
        return min(cost(p) for r in drive(s) for p in r)

    def draws(seed: int) -> float:
        rng = random.Random(seed)
        return min(cost(space().sample(rng)) for _ in range(40))

    assert statistics.median(map(tpe, range(5))) < statistics.median(map(draws, range(5)))


def test_a_finite_space_is_proposed_once_each_then_the_search_ends() -> None:
    small = ParameterSpace({"a": [1, 2, 3], "b": Int(0, 1)})
    s = SampledSpace("tpe", small, objective=Objective("t"), seed=0, round_size=4)
    points = [p for r in drive(s, lambda p: Run(p, {"t": float(p["a"])})) for p in r]
    assert sorted((p["a"], p["b"]) for p in points) == [(a, b) for a in (1, 2, 3) for b in (0, 1)]


def test_several_objectives_search_for_a_front_and_cmaes_is_refused() -> None:
    objective = make_objective({"t": "min", "acc": "max"})
    s = strategy_over("nsga2", space(), objective=objective, budget=16, seed=2)
    runs = []

    def measured(p: Point) -> Run:
        run = Run(p, {"t": cost(p), "acc": -abs(math.log10(float(p["lr"])) + 2)})
        runs.append(run)
        return run

    assert isinstance(s, SampledSpace)
    assert len([p for r in drive(s, measured) for p in r]) == 16
    assert len(objective.front(runs)) >= 2  # a trade-off, not one best
    with pytest.raises(SearchError, match="^strategy 'cmaes' optimises one objective, and this"):
        strategy_over("cmaes", space(), objective=objective)


def test_a_parameter_left_to_a_searcher_is_refused_in_one_line() -> None:
    empty = ParameterSpace({"a": [1, 2], "b": []}, source="p.py")
    with pytest.raises(SearchError, match=r"^p\.py: strategy 'tpe' chooses among listed values"):
        strategy_over("tpe", empty)


@pytest.mark.parametrize("options", [{"budget": 0.5}, {"patience": 4}])
def test_a_share_of_the_space_or_patience_is_refused_over_a_parameter_space(options) -> None:
    """A range has no size to take a share of, and the sampler has no patience: one line."""
    with pytest.raises(
        SearchError, match=r"^ranges\.py: strategy 'tpe' over a parameter space takes"
    ):
        strategy_over("tpe", space(), **options)
