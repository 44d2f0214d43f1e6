"""Optuna's samplers as strategies (issue #28): tpe, cmaes, gp and nsga2 in Tuna's rounds.

gp needs PyTorch: [test] has it (tuna[gp]), and bin/test installs its CPU build first
(bin/lib/cpu_torch.sh), so gp runs here like the others; its one-line error without torch is
tested by hiding the module."""

from __future__ import annotations

import builtins
import statistics
from typing import Any

import pytest

from tests.searchers.strategies.test_sampled_space import drive as drive_runs
from tests.searchers.test_strategies import bowl, drive, flat, space, to_reach
from tuna.searchers import Run, SearchError, replay
from tuna.searchers.objective import make_objective
from tuna.searchers.run import Point
from tuna.searchers.strategies import (
    CandidateSpace,
    SamplerLibraryMissing,
    StrategyOptions,
    make_strategy,
)
from tuna.searchers.strategies.sampled import SampledSearch

SAMPLED = ["tpe", "cmaes", "gp", "nsga2"]


def key(p: Point) -> tuple[Any, ...]:
    return tuple(sorted(p.items()))


@pytest.mark.parametrize("name", SAMPLED)
def test_a_sampler_proposes_distinct_candidates_in_rounds_within_its_budget(name: str) -> None:
    s = space()
    searcher = make_strategy(name, s, budget=20, round_size=6, seed=1)
    rounds = drive(searcher)
    points = flat(rounds)
    assert [len(r) for r in rounds] == [6, 6, 6, 2]  # N asks for N workers; the budget cuts
    assert len({key(p) for p in points}) == len(points) == 20
    assert all(s.index(p) is not None for p in points)  # repaired into the space's holes
    assert bowl(searcher.get_best()) == min(bowl(p) for p in points)
    assert searcher.stop_reason == "budget of 20 measurements spent"


@pytest.mark.parametrize("name", SAMPLED)
def test_a_seeded_sampler_proposes_the_same_again_and_seeds_differ(name: str) -> None:
    def points(seed: int) -> list[Point]:
        return flat(drive(make_strategy(name, space(), budget=24, seed=seed)))

    assert points(3) == points(3)
    assert points(3) != points(4)


@pytest.mark.parametrize("name", SAMPLED)
def test_a_sampled_search_resumes_by_replay_into_a_fresh_study(name: str) -> None:
    """A restart replays the stored Runs one at a time into a new searcher (a new study):
    it proposes what the uninterrupted search did next."""
    whole = flat(drive(make_strategy(name, space(), budget=24, round_size=8, seed=5)))
    done = [Run(p, {"time_ms": bowl(p)}) for p in whole[:12]]  # cut mid-round
    fresh = make_strategy(name, space(), budget=24, round_size=8, seed=5)
    resumed = replay(space().parameter_space(), done, fresh)
    rest = []
    proposal = resumed.next
    while proposal is not None:
        rest.append(dict(proposal.point))
        proposal = resumed.proposer.send(Run(proposal.point, {"time_ms": bowl(proposal.point)}))
    assert rest == whole[12:]


def test_tpe_finds_the_bottom_of_a_bowl_sooner_than_random() -> None:
    """Over 7 seeds, measurements to the optimum of a smooth space with holes (the median):
    a model of where good candidates are must beat uniform draws."""
    optimum = min(bowl(p) for p in space().points)

    def median_to_reach(name: str) -> float:
        found = [
            to_reach(flat(drive(make_strategy(name, space(), budget=40, seed=seed))), optimum)
            for seed in range(7)
        ]
        return statistics.median(41 if n is None else n for n in found)

    assert median_to_reach("tpe") < median_to_reach("random")


def test_failed_candidates_are_failed_trials_never_the_best() -> None:
    """A candidate that did not verify is told as a failure: no value is learnt from it."""
    bad = {key(p) for p in space().points if p["MR"] == 6}  # the bowl's bottom fails

    def cost(p: Point) -> float:
        return 0.0 if key(p) in bad else bowl(p)

    searcher = make_strategy("tpe", space(), budget=40, seed=2)
    gen = searcher.rounds()
    batch = next(gen)
    try:
        while True:
            batch = gen.send(
                [Run.invalid(p, "wrong result") if key(p) in bad else Run(p, {"time_ms": cost(p)})
                 for p in batch]
            )  # fmt: skip
    except StopIteration:
        pass
    assert searcher.get_best()["MR"] != 6
    assert searcher.best_value == min(v for _, v in searcher.trace if v is not None)


def test_strings_and_single_values_are_axes_too() -> None:
    s = CandidateSpace(
        [{"algo": a, "unroll": u, "fixed": 1} for a in ("gemm", "direct", "fft") for u in (1, 2, 4)]
    )
    searcher = make_strategy("tpe", s, budget=9, round_size=3, seed=0)
    assert isinstance(searcher, SampledSearch)
    points = flat(drive(searcher, cost=lambda p: float(p["unroll"])))
    assert sorted(key(p) for p in points) == sorted(key(p) for p in s.points)


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Import of these modules fails, as where they are not installed."""
    real = builtins.__import__

    def fake(name: str, *args: Any, **kw: Any) -> Any:
        if name.split(".")[0] in modules:
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", fake)


@pytest.mark.parametrize("name", ["tpe", "cmaes", "gp", "nsga2"])
def test_without_optuna_one_line_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    _without(monkeypatch, "optuna")
    with pytest.raises(SamplerLibraryMissing) as e:
        StrategyOptions(name)
    assert "\n" not in str(e.value)
    assert "need Optuna, which is not installed" in str(e.value)
    assert "pip install 'tuna[optuna]'" in str(e.value)
    with pytest.raises(SamplerLibraryMissing):
        make_strategy(name, space())


def test_gp_without_torch_one_line_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "torch")
    with pytest.raises(SamplerLibraryMissing) as e:
        StrategyOptions("gp")
    assert str(e.value).startswith(
        "the gp strategy needs PyTorch and SciPy (Optuna's Gaussian process), and torch is not "
        "installed"
    )
    assert str(e.value).endswith("pip install 'tuna[gp]' (or pick another strategy)")
    StrategyOptions("tpe")  # the others do not need it


def _two(p: Point) -> dict[str, float]:
    """Time (the bowl) and threads that pull apart: fewer threads cost time (the front:
    the best candidate of NV = 3, 2 and 1; NV = 4 is slower than 3)."""
    threads = float(p["NV"])
    return {"time_ms": bowl(p) + 16.0 / threads, "threads": threads}


@pytest.mark.parametrize("name", ["tpe", "nsga2"])
def test_with_two_objectives_each_trial_is_told_both_in_their_directions(name: str) -> None:
    objective = make_objective({"time_ms": "min", "threads": "min"})
    searcher = make_strategy(name, space(), budget=30, round_size=6, seed=1, objective=objective)
    assert isinstance(searcher, SampledSearch)
    points = flat(drive_stats(searcher, _two))
    study = searcher.study
    assert len(study.directions) == 2
    told = [t for t in study.trials if t.values is not None]
    assert len(points) == 30 and len(told) >= 30 - 6  # the last round is never told
    by_key = {key(p): [_two(p)["time_ms"], _two(p)["threads"]] for p in points}
    for trial in told:  # each trial's values are its candidate's two stats
        assert trial.values in by_key.values()


def test_two_objectives_find_both_ends_of_the_front() -> None:
    """NSGA-II with two objectives, 40 of the 64 candidates: a front with each thread count
    of the exhaustive front, two of its three points exactly."""
    objective = make_objective({"time_ms": "min", "threads": "min"})
    searcher = make_strategy("nsga2", space(), budget=40, round_size=8, seed=3,
                             objective=objective)  # fmt: skip
    points = flat(drive_stats(searcher, _two))
    runs = [Run(p, _two(p)) for p in points]
    found = {key(r.config) for r in objective.front(runs)}
    every = objective.front([Run(p, _two(p)) for p in space().points])
    assert [r.stats["threads"] for r in every] == [3.0, 2.0, 1.0]
    assert {r.stats["threads"] for r in objective.front(runs)} == {1.0, 2.0, 3.0}
    assert len(found & {key(r.config) for r in every}) >= 2


def test_a_run_failing_a_constraint_is_a_failed_trial() -> None:
    objective = make_objective({"time_ms": "min", "threads": "min"}, ["threads >= 2"])
    searcher = make_strategy("nsga2", space(), budget=24, seed=0, objective=objective)
    points = flat(drive_stats(searcher, _two))
    states = {str(t.state) for t in searcher.study.trials if t.params}
    ones = [p for p in points if p["NV"] == 1]
    assert ones and "TrialState.FAIL" in states
    assert all(t.values is None for t in searcher.study.trials if t.params.get("NV") == 0)


def test_cmaes_with_two_objectives_is_one_line() -> None:
    objective = make_objective({"time_ms": "min", "threads": "min"})
    with pytest.raises(SearchError, match="^strategy 'cmaes' optimises one objective, and this"):
        make_strategy("cmaes", space(), objective=objective)


def drive_stats(searcher: Any, stats: Any) -> list[list[Point]]:
    """The rounds ``searcher`` proposes when each point's stats are ``stats(point)``."""
    return drive_runs(searcher, runs_of=lambda p: Run(p, stats(p)))
