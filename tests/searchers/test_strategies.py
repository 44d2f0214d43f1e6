"""Strategies over a tunable solver's space: rounds, budget, early stopping, each strategy."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.rounds import drive_rounds
from tuna.searchers import Run, SearcherError, replay
from tuna.searchers.errors import SearchError
from tuna.searchers.objective import Objective, make_objective
from tuna.searchers.run import Point
from tuna.searchers.strategies import (
    STRATEGIES,
    BudgetError,
    CandidateSpace,
    RoundSearcher,
    StrategyOptions,
    UnknownStrategyError,
    make_strategy,
    resolve_budget,
)

CLASSIC = ["exhaustive", "random", "grid", "hillclimb", "genetic"]
Cost = Callable[[Point], float]


def space() -> CandidateSpace:
    """A space with holes (invalid combinations), like cpuconv's."""
    points = [
        {"MR": a, "NV": b, "KC": c}
        for a, b, c in itertools.product((1, 2, 4, 6, 8), (1, 2, 3, 4), (64, 128, 256, 512))
        if a * b <= 16
    ]
    return CandidateSpace(points, source="test-space")


def bowl(p: Point) -> float:
    """One minimum, at MR=6 NV=2 KC=256."""
    pos = {1: 0, 2: 1, 4: 2, 6: 3, 8: 4}[int(p["MR"])], p["NV"], int(p["KC"]).bit_length()
    return 1.0 + (pos[0] - 3) ** 2 + 0.7 * (int(pos[1]) - 2) ** 2 + 0.3 * abs(pos[2] - 9)


def drive(searcher: RoundSearcher, cost: Cost = bowl) -> list[list[Point]]:
    """The rounds ``searcher`` proposes when each point's time is ``cost(point)``."""
    return drive_rounds(searcher, lambda p: Run(p, {"time_ms": cost(p)}), reverse=True)


def flat(rounds: list[list[Point]]) -> list[Point]:
    return [p for r in rounds for p in r]


def to_reach(points: list[Point], target: float, cost: Cost = bowl) -> int | None:
    for n, p in enumerate(points, 1):
        if cost(p) <= target:
            return n
    return None


# -- the space and the budget ---------------------------------------------------------------


def test_a_space_from_cpuconv_strings_and_its_neighbours() -> None:
    s = CandidateSpace.from_strings(("A", "B"), ["1,1", "1,2", "2,1", "4,2", "4,4"])
    assert s.values == {"A": [1, 2, 4], "B": [1, 2, 4]}
    assert s.text(s.index({"A": 4, "B": 2})) == "4,2"  # type: ignore[arg-type]
    # From (1,1): up A to 2 (valid), up B to 2; nothing below.
    assert [s.points[i] for i in s.neighbours(0)] == [{"A": 2, "B": 1}, {"A": 1, "B": 2}]
    # From (1,2): A=2 is a hole in that row, so the next valid value up is A=4.
    assert [s.points[i] for i in s.neighbours(1)] == [
        {"A": 4, "B": 2},
        {"A": 1, "B": 1},
    ]


@pytest.mark.parametrize(
    ("points", "message"),
    [
        ([], "no candidates"),
        ([{"A": 1}, {"A": 1}], "listed twice"),
        ([{"A": 1}, {"B": 1}], "same parameters"),
    ],
)
def test_a_bad_space_is_refused(points: list[Point], message: str) -> None:
    with pytest.raises(SearchError, match=message):
        CandidateSpace(points)


def test_budget_counts_and_shares() -> None:
    assert resolve_budget(None, 50) == 50
    assert resolve_budget(7, 50) == 7
    assert resolve_budget(50, 50) == 50
    assert resolve_budget(0.1, 50) == 5
    assert resolve_budget(0.001, 50) == 1
    assert resolve_budget(1.0, 50) == 50


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (0, "measures nothing"),
        (-3, "measures nothing"),
        (51, "above the space's 50 candidates"),
        (1.5, "not a share"),
        (0.0, "not a share"),
        (True, "not a number"),
        ("10", "not a number"),
    ],
)
def test_a_bad_budget_is_refused(budget: object, message: str) -> None:
    with pytest.raises(BudgetError, match=message):
        resolve_budget(budget, 50)  # type: ignore[arg-type]


def test_an_unknown_strategy_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(UnknownStrategyError, match="'anneal'.*exhaustive, random, grid"):
        make_strategy("anneal", space())


def test_transfer_is_only_for_the_model() -> None:
    with pytest.raises(SearchError, match="--transfer is for 'model' and "):
        make_strategy("random", space(), transfer=True)


def test_a_budget_above_the_space_is_refused_by_every_strategy() -> None:
    for name in CLASSIC:
        with pytest.raises(BudgetError):
            make_strategy(name, space(), budget=len(space()) + 1)


# -- what every strategy keeps --------------------------------------------------------------


@pytest.mark.parametrize("name", CLASSIC)
def test_a_strategy_proposes_distinct_candidates_in_rounds_within_its_budget(name: str) -> None:
    s = space()
    searcher = make_strategy(name, s, budget=30, round_size=4, seed=3)
    rounds = drive(searcher)
    points = flat(rounds)
    assert len(points) == 30  # no early stopping: the whole budget is spent
    assert all(1 <= len(r) <= 4 for r in rounds)
    assert all(s.index(p) is not None for p in points)
    assert len({s.index(p) for p in points}) == len(points)
    assert searcher.stop_reason == "budget of 30 measurements spent"
    assert len(searcher.trace) == 30


@pytest.mark.parametrize("name", CLASSIC)
def test_the_best_is_the_best_measured(name: str) -> None:
    searcher = make_strategy(name, space(), budget=20, seed=1)
    points = flat(drive(searcher))
    best = min(points, key=bowl)
    assert searcher.get_best() == best
    assert searcher.best_value == bowl(best)


@pytest.mark.parametrize("name", CLASSIC)
def test_a_seeded_strategy_proposes_the_same_again(name: str) -> None:
    first = flat(drive(make_strategy(name, space(), budget=25, seed=11)))
    again = flat(drive(make_strategy(name, space(), budget=25, seed=11)))
    assert first == again


@pytest.mark.parametrize("name", ["random", "hillclimb", "genetic"])
def test_seeds_change_what_a_randomised_strategy_proposes(name: str) -> None:
    a = flat(drive(make_strategy(name, space(), budget=25, seed=1)))
    b = flat(drive(make_strategy(name, space(), budget=25, seed=2)))
    assert a != b


@pytest.mark.parametrize("name", CLASSIC)
def test_one_point_at_a_time_proposes_what_the_rounds_do(name: str) -> None:
    rounds = flat(drive(make_strategy(name, space(), budget=20, round_size=3, seed=5)))
    searcher = make_strategy(name, space(), budget=20, round_size=3, seed=5)
    gen = searcher.generate()
    points = []
    point = next(gen)
    try:
        while True:
            points.append(point)
            point = gen.send(Run(point, {"time_ms": bowl(point)}))
    except StopIteration:
        pass
    assert points == rounds


def test_a_round_sent_the_wrong_runs_is_an_error() -> None:
    gen = make_strategy("random", space(), round_size=3).rounds()
    batch = next(gen)
    with pytest.raises(SearcherError, match="a round of 3 candidates was sent 2"):
        gen.send([Run(p, {"time_ms": 1.0}) for p in batch[:2]])
    gen = make_strategy("random", space(), round_size=2).rounds()
    batch = next(gen)
    stranger = {"MR": 8, "NV": 2, "KC": 512}
    other = stranger if stranger not in batch else {"MR": 1, "NV": 1, "KC": 64}
    with pytest.raises(SearcherError, match="does not belong to this round"):
        gen.send([Run(batch[0], {"time_ms": 1.0}), Run(other, {"time_ms": 1.0})])


def test_failed_candidates_never_count_as_best() -> None:
    def cost(p: Point) -> float:
        return bowl(p)

    searcher = make_strategy("exhaustive", space(), round_size=5)
    gen = searcher.rounds()
    batch = next(gen)
    winner = min(batch, key=cost)
    # The fastest candidate of the round fails verification: it does not count.
    runs = [
        Run.invalid(p, "verification failed") if p == winner else Run(p, {"time_ms": cost(p)})
        for p in batch
    ]
    gen.send(runs)
    assert searcher.get_best() != winner
    assert searcher.get_best() == min((p for p in batch if p != winner), key=cost)


def test_patience_stops_after_n_measurements_without_improvement() -> None:
    # Exhaustive order: the first candidate is the best, nothing after it improves.
    first = space().points[0]

    def cost(p: Point) -> float:
        return 1.0 if p == first else 2.0

    searcher = make_strategy("exhaustive", space(), patience=10, round_size=4)
    points = flat(drive(searcher, cost))
    # Rounds of 4: after the 3rd round 11 measurements brought nothing (checked per round).
    assert len(points) == 12
    assert searcher.stop_reason == "no improvement in 11 measurements"


def test_exhaustive_measures_everything_once_and_finds_the_optimum() -> None:
    s = space()
    points = flat(drive(make_strategy("exhaustive", s)))
    assert sorted(s.index(p) for p in points) == list(range(len(s)))  # type: ignore[type-var]


def test_grid_measures_the_corners_first_then_the_middles() -> None:
    s = space()
    first = drive(make_strategy("grid", s, budget=8, round_size=8))[0]

    def corner(p: Point) -> bool:
        return all(p[n] in (s.values[n][0], s.values[n][-1]) for n in s.names)

    corners = [p for p in s.points if corner(p)]
    assert len(corners) == 6  # MR=8 NV=4 is not a candidate (it spills)
    assert first[:6] == corners
    assert not any(corner(p) for p in first[6:])


def test_hill_climbing_walks_to_the_bottom_of_a_bowl() -> None:
    best = min(bowl(p) for p in space().points)
    reached = [
        to_reach(flat(drive(make_strategy("hillclimb", space(), seed=seed))), best)
        for seed in range(5)
    ]
    assert all(r is not None for r in reached)
    # Random needs about half the space (73 candidates) for the one optimum.
    assert statistics.median(r for r in reached if r) < 0.4 * len(space())


def test_genetic_search_beats_random_on_a_smooth_space() -> None:
    best = min(bowl(p) for p in space().points)

    def median_to_reach(name: str) -> float:
        return statistics.median(
            to_reach(flat(drive(make_strategy(name, space(), seed=seed))), best * 1.05) or 999
            for seed in range(7)
        )

    assert median_to_reach("genetic") < median_to_reach("random")


def test_a_strategy_resumes_by_replay() -> None:
    """A driver that crashed replays the recorded Runs: the next proposals are the same."""
    s = space()
    full = flat(drive(make_strategy("genetic", s, budget=24, round_size=4, seed=9)))
    recorded = [Run(p, {"time_ms": bowl(p)}) for p in full[:10]]
    resumed = replay(
        s.parameter_space(), recorded, make_strategy("genetic", s, budget=24, round_size=4, seed=9)
    )
    assert resumed.replayed == 10
    assert resumed.next is not None and resumed.next.point == full[10]


def test_the_registry_names_every_strategy() -> None:
    assert list(STRATEGIES) == [
        *CLASSIC,
        "model",
        "tpe",
        "cmaes",
        "gp",
        "nsga2",
        "predictive",
        "sliced",
    ]
    assert all(STRATEGIES[n].name == n for n in STRATEGIES)
    assert all(math.isfinite(bowl(p)) for p in space().points)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(strategy="anneal"), "unknown strategy 'anneal'; the strategies are"),
        (dict(strategy="random", round_size=0), "--round-size 0: give at least 1"),
        (dict(strategy="random", budget=0), "budget 0: give a count"),
        (dict(strategy="random", budget=1.5), "a share of the space is at most 1"),
        (dict(strategy="random", patience=0), "patience 0: give at least 1"),
        (
            dict(strategy="random", transfer=True),
            "--transfer is for the model and sliced strategies",
        ),
    ],
)
def test_strategy_options_are_checked_when_made(options, message):
    with pytest.raises(SearchError, match=message):
        StrategyOptions(**options)


def test_strategy_options_round_trip_through_what_is_stored():
    options = StrategyOptions("hillclimb", budget=0.25, patience=4, seed=3, round_size=2)
    stored = options.to_json()
    assert stored == {"strategy": "hillclimb", "budget": 0.25, "patience": 4, "seed": 3,
                      "round_size": 2, "transfer": False}  # fmt: skip
    assert StrategyOptions.from_json({**stored, "kind": "strategy"}) == options
    assert flat(drive(options.searcher(space()))) == flat(
        drive(make_strategy("hillclimb", space(), budget=0.25, patience=4, seed=3, round_size=2))
    )


# -- a parameter file's space as a strategy's candidates (issue #25: one space, enumerated) ----


def test_the_candidates_of_a_parameter_space_are_its_valid_points() -> None:
    from tuna.searchers import Int, ParameterSpace

    declared = ParameterSpace(
        {"MR": [1, 2, 4, 6, 8], "NV": Int(1, 4), "KC": Int(64, 512, step=64)},
        constraints=("MR * NV <= 16", "KC in (64, 128, 256, 512)"),  # type: ignore[arg-type]
        source="p.json",
    )
    candidates = CandidateSpace.of(declared)
    assert candidates.points == space().points  # the same holes, the same order
    assert candidates.source == "p.json"
    back = candidates.parameter_space()
    assert all(back.is_config_valid(p) for p in candidates.points)
    assert not back.is_config_valid({"MR": 8, "NV": 4, "KC": 64})
    # make_strategy takes the declared space as its candidates.
    s = make_strategy("hillclimb", declared, budget=12, seed=2)
    assert len(flat(drive(s))) == 12
    assert flat(drive(s)) == flat(drive(make_strategy("hillclimb", space(), budget=12, seed=2)))


def test_a_strategy_refuses_a_continuous_or_conditional_space() -> None:
    from tuna.searchers import Categorical, Float, ParameterSpace

    with pytest.raises(SearcherError, match=r"p.py: parameter 'lr' is Float\(0.0001, 0.1, log=Tr"):
        make_strategy("grid", ParameterSpace({"lr": Float(1e-4, 1e-1, log=True)}, source="p.py"))
    conditional = ParameterSpace(
        {"a": ["x", "y"], "u": Categorical([1, 2], when={"a": "y"})}, source="p.py"
    )
    with pytest.raises(SearchError, match="p.py: parameter 'u' is conditional, and a strategy"):
        make_strategy("exhaustive", conditional)


def test_a_strategy_by_name_takes_its_candidates_from_the_one_enumeration() -> None:
    """strategy_over (tpe and the others by name) builds its candidates with
    CandidateSpace.of: constraints make holes, META_is_config_valid stays the proposer's."""
    from tuna.searchers import ParameterSpace
    from tuna.searchers.strategies import strategy_over

    def refuse(config: dict[str, object]) -> bool:  # reads a base setting: never called here
        return config["seconds"] != 1

    declared = ParameterSpace(
        {"MR": [1, 2, 4, 6, 8], "NV": [1, 2, 3, 4], "KC": [64, 128, 256, 512]},
        constraints=("MR * NV <= 16",),  # type: ignore[arg-type]
        hooks={"META_is_config_valid": refuse},
    )
    searcher = strategy_over("random", declared, seed=1)
    assert searcher.space.points == space().points
    with pytest.raises(SearchError, match=r"strategy 'grid' chooses among listed values, and 'q'"):
        strategy_over("grid", ParameterSpace({"a": [1], "q": []}))
    big = ParameterSpace({n: list(range(60)) for n in "abc"}, source="big.json")
    with pytest.raises(
        SearchError, match=r"big.json: strategy 'hillclimb' enumerates .* 216,000 points"
    ):
        strategy_over("hillclimb", big)


def test_a_huge_int_range_is_refused_by_its_count_not_by_listing_it() -> None:
    from tuna.searchers import Int, ParameterSpace
    from tuna.searchers.strategies import strategy_over

    huge = ParameterSpace({"n": Int(0, 10**12)}, source="h.json")
    assert huge.size() == 10**12 + 1
    with pytest.raises(SearchError, match=r"its 1,000,000,000,001 points are more than 200,000"):
        strategy_over("hillclimb", huge)


def test_hill_climbing_with_two_objectives_climbs_every_point_of_the_front() -> None:
    """A Pareto local search: it climbs from every point of the front of what it measured.
    Here (fewer threads cost time; the exhaustive front has 3 points) half the space finds
    the whole front with 19 of 20 seeds; climbing time alone, with 9."""

    def two(p: Point) -> dict[str, float]:
        return {"time_ms": bowl(p) + 16.0 / float(p["NV"]), "threads": float(p["NV"])}

    both = make_objective({"time_ms": "min", "threads": "min"})
    every = {_key(r.config) for r in both.front([Run(p, two(p)) for p in space().points])}

    def finds_front(objective: Objective, seed: int) -> bool:
        searcher = make_strategy("hillclimb", space(), budget=32, seed=seed, objective=objective)
        gen, runs = searcher.rounds(), []
        try:
            batch = next(gen)
            while True:
                runs += [Run(p, two(p)) for p in batch]
                batch = gen.send(runs[-len(batch) :])
        except StopIteration:
            pass
        return {_key(r.config) for r in both.front(runs)} >= every

    assert len(every) == 3
    assert sum(finds_front(both, seed) for seed in range(20)) == 19
    assert sum(finds_front(make_objective({"time_ms": "min"}), seed) for seed in range(20)) == 9


def _key(config: Any) -> tuple[Any, ...]:
    return tuple(sorted(config.items()))
