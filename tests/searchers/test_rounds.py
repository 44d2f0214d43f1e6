"""RoundProposer: any searcher's proposals as the rounds a driver enqueues."""

from __future__ import annotations

import pytest

from tuna.searchers import CartesianProduct, ParameterSpace, Run, SearcherError, Step
from tuna.searchers.rounds import RoundProposer
from tuna.searchers.strategies import CandidateSpace, make_strategy


def cands() -> CandidateSpace:
    return CandidateSpace.from_strings(("A", "B"), [f"{a},{b}" for a in range(4) for b in range(3)])


def test_a_strategy_gives_its_own_rounds_checked_and_merged_over_the_base() -> None:
    c = cands()
    rp = RoundProposer(c.parameter_space(), make_strategy("random", c, round_size=5), {"x": 1})
    assert rp.batched
    first = rp.start()
    assert [p.index for p in first] == [0, 1, 2, 3, 4]
    assert all(p.config == {"x": 1, **p.point} for p in first)
    second = rp.send([Run(p.config, {"time_ms": 1.0 + p.index}) for p in reversed(first)])
    assert [p.index for p in second] == [5, 6, 7, 8, 9]
    third = rp.send([Run(p.config, {"time_ms": 9.0}) for p in second])
    assert len(third) == 2  # 12 candidates in rounds of 5
    assert rp.send([Run(p.config, {"time_ms": 9.0}) for p in third]) == []
    points = [p.point for r in (first, second, third) for p in r]
    assert sorted(c.index(p) for p in points) == list(range(12))  # type: ignore[type-var]


def test_a_round_needs_one_run_per_proposal() -> None:
    c = cands()
    rp = RoundProposer(c.parameter_space(), make_strategy("exhaustive", c, round_size=4))
    first = rp.start()
    with pytest.raises(SearcherError, match="4 proposal"):
        rp.send([Run(first[0].config, {"time_ms": 1.0})])


def test_a_static_searcher_is_one_round() -> None:
    space = ParameterSpace({"a": [1, 2], "b": [3, 4, 5]})
    rp = RoundProposer(space, CartesianProduct(space))
    first = rp.start()
    assert len(first) == 6 and not rp.batched
    assert rp.send([Run(p.config) for p in first]) == []


def test_a_plain_dynamic_searcher_gives_rounds_of_one() -> None:
    space = ParameterSpace({"n": []})
    rp = RoundProposer(space, Step("n", 1, 8, lambda n: n * 2, predicate=lambda run: True))
    seen = []
    batch = rp.start()
    while batch:
        assert len(batch) == 1
        seen.append(batch[0].point["n"])
        batch = rp.send([Run(batch[0].config)])
    assert seen == [1, 2, 4, 8]


def test_refused_points_are_answered_without_running() -> None:
    c = cands()

    space = ParameterSpace(
        {"A": [0, 1, 2, 3], "B": [0, 1, 2]},
        source="refusing",
        hooks={"META_is_config_valid": lambda cfg: cfg["A"] != 0},
    )
    rp = RoundProposer(space, make_strategy("exhaustive", c, round_size=3))
    first = rp.start()  # the first round is A=0 entirely: refused, so the next one comes
    assert [p.point["A"] for p in first] == [1, 1, 1]
    assert len(rp.refused) == 3 and all(not r.valid for r in rp.refused)
    second = rp.send([Run(p.config, {"time_ms": 2.0}) for p in first])
    assert [p.point["A"] for p in second] == [2, 2, 2]
