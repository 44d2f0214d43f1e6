"""The rebuild-minimising schedule and the dry run."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tuna.searchers import (
    Bisect,
    ParameterSpace,
    Random,
    build_key,
    count_builds,
    dry_run,
    plan_schedule,
)
from tuna.searchers.space import parse_python_space
from tuna.searchers.strategies import strategy_over

PATHOLOGICAL = """
audio_batch_size = [128, 256, 512]  # a runtime parameter (no rebuild)
gpu_batch_size = [128, 256]         # a build-time parameter

def META_get_no_rebuild_params():
    return ["audio_batch_size"]
"""


def test_the_references_pathological_example_needs_2_builds_for_6_runs() -> None:
    space = parse_python_space(PATHOLOGICAL, "pathological.py")
    d = dry_run(space)
    assert len(d.proposals) == 6
    assert d.schedule.naive_builds == 6
    assert len(d.schedule.builds) == 2
    assert [b.params for b in d.schedule.builds] == [
        {"gpu_batch_size": 128},
        {"gpu_batch_size": 256},
    ]
    assert [[r["audio_batch_size"] for r in b.runs] for b in d.schedule.builds] == [
        [128, 256, 512],
        [128, 256, 512],
    ]
    assert d.render() == [
        "parameters: audio_batch_size, gpu_batch_size (from pathological.py)",
        "build-time: gpu_batch_size; runtime-only: audio_batch_size",
        "searcher: CartesianProduct (static)",
        "runs: 6, refused by META_is_config_valid: 0",
        "build 1: gpu_batch_size=128",
        "  run: audio_batch_size=128",
        "  run: audio_batch_size=256",
        "  run: audio_batch_size=512",
        "build 2: gpu_batch_size=256",
        "  run: audio_batch_size=128",
        "  run: audio_batch_size=256",
        "  run: audio_batch_size=512",
        "builds: 2 for 6 runs (naive order: 6)",
    ]


def test_without_no_rebuild_params_every_point_is_its_own_build() -> None:
    space = ParameterSpace({"a": [1, 2], "b": [3, 4]})
    d = dry_run(space)
    assert len(d.schedule.builds) == d.schedule.naive_builds == 4


def test_dry_run_of_a_dynamic_searcher_shows_its_first_proposal() -> None:
    space = ParameterSpace({"qps": [], "batch": [64]}, no_rebuild=("qps",), source="s.py")
    d = dry_run(space, Bisect("qps", 100, 1000, 100, lambda r: True), base={"batch": 64})
    assert d.render() == [
        "parameters: qps, batch (from s.py)",
        "build-time: batch; runtime-only: qps",
        "searcher: Bisect (dynamic)",
        "first proposal: qps=500",
        "later proposals depend on the runs' results",
    ]


def test_dry_run_names_a_strategy_as_the_user_spelled_it() -> None:
    """``--searcher tpe`` printed its class (SampledSpace); a strategy is shown by its name,
    any other searcher by its class, a user's own that subclasses nothing included."""
    space = ParameterSpace({"a": [1, 2, 3], "b": [4, 5]}, source="s.py")

    def shown(searcher: Any) -> str:
        return dry_run(space, searcher).render()[2]

    assert shown(strategy_over("tpe", space)) == "searcher: tpe (dynamic)"
    assert shown(strategy_over("hillclimb", space)) == "searcher: hillclimb (dynamic)"
    assert shown(Random(space, 3, 1)) == "searcher: Random (static)"

    class Mine:
        is_dynamic = False

        def generate(self) -> Any:
            yield {"a": 1, "b": 4}

    assert shown(Mine()) == "searcher: Mine (static)"


spaces = st.dictionaries(
    st.sampled_from("abcdef"), st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True),
    min_size=1, max_size=4,
).flatmap(
    lambda grid: st.tuples(
        st.just(grid), st.lists(st.sampled_from(sorted(grid)), unique=True), st.integers(0, 99)
    )
)  # fmt: skip


@given(spaces)
def test_one_build_per_distinct_build_tuple_and_every_run_once(
    case: tuple[dict[str, list[int]], list[str], int],
) -> None:
    grid, runtime, seed = case
    space = ParameterSpace(dict(grid), no_rebuild=tuple(runtime))
    configs: list[dict[str, Any]] = [
        p.config for p in dry_run(space, Random(space, 50, seed)).proposals
    ]
    schedule = plan_schedule(space, configs)
    keys = [build_key(space, c) for c in configs]
    assert len(schedule.builds) == len(set(keys))
    assert count_builds(space, schedule.runs) == len(schedule.builds)
    assert len(schedule.builds) <= schedule.naive_builds
    assert sorted(map(repr, schedule.runs)) == sorted(map(repr, configs))
    # Within a build, the proposal order is kept.
    for b in schedule.builds:
        assert list(b.runs) == [c for c in configs if build_key(space, c) == b.key]
    # The schedule never needs more builds than the distinct build tuples of the grid.
    build_grid = [grid[n] for n in space.build_params]
    assert len(schedule.builds) <= len(list(itertools.product(*build_grid)))


def test_a_conditional_parameter_a_config_lacks_is_not_in_its_build() -> None:
    from tuna.searchers import Categorical

    space = ParameterSpace(
        {"algo": ["a", "b"], "u": Categorical([1, 2], when={"algo": "b"}), "n": [1]},
        no_rebuild=("n",),
    )
    assert build_key(space, {"algo": "a", "n": 1}) == (("algo", "a"),)
    assert build_key(space, {"algo": "b", "u": 2, "n": 1}) == (("algo", "b"), ("u", 2))
    # An unconditional parameter keeps its place even when absent (stored keys stay valid).
    plain = ParameterSpace({"b": [], "c": [1]}, no_rebuild=("c",))
    assert build_key(plain, {"c": 1}) == (("b", None),)
    plan = dry_run(space)
    assert plan.render()[3:8] == [
        "runs: 3, refused by META_is_config_valid: 0",
        "build 1: algo=a",
        "  run: n=1",
        "build 2: algo=b u=1",
        "  run: n=1",
    ]


def test_the_dry_run_names_what_refused_points() -> None:
    both = parse_python_space(
        "a = [1, 2, 3]\nMETA_constraints = ['a != 1']\n"
        "def META_is_config_valid(c):\n    return c['a'] != 2\n",
        source="p.py",
    )
    assert (
        dry_run(both).render()[3]
        == "runs: 1, refused by META_constraints or META_is_config_valid: 2"
    )
    only = parse_python_space("a = [1, 2, 3]\nMETA_constraints = ['a != 1']\n", source="p.py")
    assert dry_run(only).render()[3] == "runs: 2, refused by META_constraints: 1"
