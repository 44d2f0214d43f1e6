"""The built-in searchers, with the semantics of reference/search.md section 1."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuna.searchers import (
    Bisect,
    CartesianProduct,
    Composer,
    PastRunsCallback,
    Random,
    Run,
    SearcherError,
    SearcherInterface,
    Step,
    send,
)
from tuna.searchers.run import Point


def drive(
    searcher: SearcherInterface, bench: Callable[[Point, dict[str, Any]], Run], limit: int = 1000
) -> list[Point]:
    """The points ``searcher`` proposes when each is measured by ``bench(point, merged)``."""
    gen = searcher.generate()
    points: list[Point] = []
    merged: dict[str, Any] = {}
    point = send(gen)
    while point is not None:
        assert len(points) < limit, "the searcher does not end"
        points.append(point)
        merged.update(point)
        point = send(gen, bench(point, dict(merged)))
    return points


def static(searcher: SearcherInterface) -> list[Point]:
    return drive(searcher, lambda p, m: Run(m))


# -- CartesianProduct -----------------------------------------------------------------------------

grids = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=3),
    st.lists(st.integers(-5, 5) | st.text("xyz", max_size=2), min_size=1, max_size=4, unique=True),
    max_size=4,
)


@given(grids)
def test_cartesian_product_covers_the_product_exactly_once(grid: dict[str, list[Any]]) -> None:
    points = static(CartesianProduct(grid))
    assert not CartesianProduct(grid).is_dynamic
    expected = {
        tuple(sorted(zip(grid, vs, strict=True))) for vs in itertools.product(*grid.values())
    }
    got = [tuple(sorted(p.items())) for p in points]
    assert len(got) == len(set(got)) == math.prod(len(v) for v in grid.values())
    assert set(got) == expected


def test_cartesian_product_puts_no_rebuild_params_innermost() -> None:
    grid = {"audio_batch_size": [128, 256, 512], "gpu_batch_size": [128, 256]}
    assert [tuple(p.values()) for p in static(CartesianProduct(grid))] == [
        (128, 128), (128, 256), (256, 128), (256, 256), (512, 128), (512, 256),
    ]  # fmt: skip
    inner = static(CartesianProduct(grid, no_rebuild_params=["audio_batch_size"]))
    assert [(p["gpu_batch_size"], p["audio_batch_size"]) for p in inner] == [
        (128, 128), (128, 256), (128, 512), (256, 128), (256, 256), (256, 512),
    ]  # fmt: skip


# -- Random ---------------------------------------------------------------------------------------


@given(grids, st.integers(0, 30), st.integers(0, 2**32))
def test_random_is_seeded_distinct_and_in_the_grid(
    grid: dict[str, list[Any]], count: int, seed: int
) -> None:
    a = static(Random(grid, count, seed=seed))
    assert a == static(Random(grid, count, seed=seed))
    keys = [tuple(p.items()) for p in a]
    assert len(keys) == len(set(keys)) == min(count, math.prod(len(v) for v in grid.values()))
    for p in a:
        assert list(p) == list(grid)
        assert all(p[k] in grid[k] for k in grid)


def test_random_seeds_differ() -> None:
    grid = {"a": list(range(10)), "b": list(range(10))}
    assert static(Random(grid, 5, seed=1)) != static(Random(grid, 5, seed=2))


# -- Step -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "update", "expected"),
    [
        (1, 8, lambda x: x * 2, [1, 2, 4, 8]),
        (1, 10, lambda x: x * 2, [1, 2, 4, 8]),
        (256, 32, lambda x: x // 2, [256, 128, 64, 32]),
        (256, 40, lambda x: x // 2, [256, 128, 64]),
        (0, 1, lambda x: round(x + 0.25, 2), [0, 0.25, 0.5, 0.75, 1.0]),
        (5, 5, lambda x: x + 1, [5]),
    ],
)
def test_step(start: int, end: int, update: Callable[[Any], Any], expected: list[Any]) -> None:
    s = Step("x", start, end, update)
    assert not s.is_dynamic
    assert [p["x"] for p in static(s)] == expected


def test_step_with_predicate_stops_at_the_first_refused_run() -> None:
    s = Step("threads", 1, 64, lambda t: t * 2, predicate=lambda r: r.stats["ok"])
    assert s.is_dynamic
    points = drive(s, lambda p, m: Run(m, {"ok": p["threads"] < 8}))
    assert [p["threads"] for p in points] == [1, 2, 4, 8]


def test_step_that_does_not_move_is_an_error() -> None:
    with pytest.raises(SearcherError, match="does not move towards 10; the search would never end"):
        static(Step("x", 1, 10, lambda x: x))
    with pytest.raises(SearcherError, match="does not move towards"):
        static(Step("x", 10, 1, lambda x: x + 1))


# -- Bisect ---------------------------------------------------------------------------------------


@settings(max_examples=300)
@given(
    lower=st.integers(-1000, 1000),
    n=st.integers(2, 600),
    step=st.integers(1, 50),
    boundary=st.integers(-1, 599),
)
def test_bisect_finds_any_monotone_boundary_in_log2_steps(
    lower: int, n: int, step: int, boundary: int
) -> None:
    """The grid holds both bounds and nothing is assumed: a boundary below the lower bound
    (boundary -1: nothing good) or at the upper bound is found by measuring them."""
    upper = lower + (n - 1) * step
    grid = list(range(lower, upper + 1, step))
    good = grid[min(boundary, n - 1)] if boundary >= 0 else None
    b = Bisect("qps", lower, upper, step, lambda r: good is not None and r.config["qps"] <= good)
    points = drive(b, lambda p, m: Run(m))
    assert len(points) <= math.ceil(math.log2(n + 1))
    assert all(p["qps"] in grid for p in points)
    if good is None:
        assert {"qps": lower} in points  # the lower bound was measured, not assumed good
        with pytest.raises(SearcherError, match="no value of the grid"):
            b.get_best()
    else:
        assert b.get_best() == {"qps": good}
        if good == upper:
            assert {"qps": upper} in points  # the upper bound was tried


def test_bisect_measures_its_bounds() -> None:
    """Issue #24: the lower bound was assumed good and never measured, the upper never tried."""
    all_bad = Bisect("qps", 100, 400, 100, predicate=lambda r: False)
    assert [p["qps"] for p in drive(all_bad, lambda p, m: Run(m))] == [200, 100]
    all_good = Bisect("qps", 100, 400, 100, predicate=lambda r: True)
    assert [p["qps"] for p in drive(all_good, lambda p, m: Run(m))] == [200, 300, 400]
    assert all_good.get_best() == {"qps": 400}


def test_bisect_trace_and_was_good() -> None:
    b = Bisect("qps", 500, 2500, 100, predicate=lambda r: r.stats["valid"])
    assert b.is_dynamic
    points = drive(b, lambda p, m: Run(m, {"valid": p["qps"] <= 1700}))
    assert [p["qps"] for p in points] == [1500, 2000, 1700, 1800]
    assert b.get_best() == {"qps": 1700}
    assert b.was_good(Run({"qps": 1}, {"valid": True}))
    assert not b.wants(Run({"qps": 1}, {"valid": False}))


@pytest.mark.parametrize(("lower", "upper", "step"), [(0, 99, 100), (0, 10, 20), (5, 5, 1)])
def test_bisect_needs_two_grid_values(lower: int, upper: int, step: int) -> None:
    with pytest.raises(SearcherError, match="it needs at least 2 to search"):
        Bisect("q", lower, upper, step, predicate=lambda r: True)


def test_dynamic_searcher_sent_no_run_is_an_error() -> None:
    gen = Bisect("q", 0, 10, 1, predicate=lambda r: True).generate()
    next(gen)
    with pytest.raises(SearcherError, match="is dynamic and was sent no Run"):
        gen.send(None)


# -- Composer -------------------------------------------------------------------------------------


def server(p: Point, m: dict[str, Any]) -> Run:
    """A server whose capacity grows with streams and shrinks with batch size."""
    capacity = 600 * m["streams"] * (256 / m["batch"]) ** 0.5
    return Run(m, {"result_validity": "VALID" if m["qps"] <= capacity else "INVALID"})


def valid(r: Run) -> bool:
    return bool(r.stats["result_validity"] == "VALID")


def test_composer_worked_example_trace() -> None:
    """Bisect QPS up while VALID; before stepping QPS down, more streams, then smaller batches."""
    c = Composer(
        [
            Bisect("qps", 500, 2500, 100, predicate=valid),
            Step("streams", 1, 3, lambda s: s + 1),
            Step("batch", 1024, 256, lambda b: b // 2),
        ],
        timeout=50,
    )
    trace = [(p.get("qps"), p.get("streams"), p.get("batch")) for p in drive(c, server)]
    # Worked by hand (capacity = 600 * streams * sqrt(256 / batch)): the first point merges
    # every searcher's initial term. While runs are INVALID the Bisect does not want to
    # advance, so the streams Step (bare: always wants) goes up to 3, then the batch Step goes
    # down; at (3, 256) the run is VALID (capacity 1800), so the Bisect advances: 2000 is
    # INVALID and nobody else has a term, so the Bisect is forced and comes down to 1700,
    # goes up through 1800 (VALID) to 1900 (INVALID), and is exhausted: the search ends.
    assert trace == [
        (1500, 1, 1024),
        (1500, 2, 1024),
        (1500, 3, 1024),
        (1500, 3, 512),
        (1500, 3, 256),
        (2000, 3, 256),
        (1700, 3, 256),
        (1800, 3, 256),
        (1900, 3, 256),
    ]
    assert c.searchers[0].get_best() == {"qps": 1800}


def test_composer_asks_in_order_and_forces_in_reverse() -> None:
    log: list[str] = []

    class Probe(Step):
        def __init__(self, name: str, wants: bool) -> None:
            super().__init__(name, 1, 3, lambda v: v + 1)
            self._wants = wants

        def wants(self, run: Run) -> bool:
            log.append(f"asked {self.search_param}")
            return self._wants

    c = Composer([Probe("a", False), Probe("b", False), Probe("c", False)])
    points = static(c)
    assert points[0] == {"a": 1, "b": 1, "c": 1}
    # Nobody wants to: the last searcher is forced first, until it runs out, then the one before.
    assert [tuple(p.values()) for p in points] == [
        (1, 1, 1), (1, 1, 2), (1, 1, 3), (1, 2, 3), (1, 3, 3), (2, 3, 3), (3, 3, 3),
    ]  # fmt: skip
    assert log[:3] == ["asked a", "asked b", "asked c"]


def test_composer_pair_predicate_overrides_and_timeout_bounds_runs() -> None:
    c = Composer([(Step("a", 1, 100, lambda v: v + 1), lambda r: True)], timeout=7)
    assert len(static(c)) == 7


def test_composer_refuses_a_bad_pair() -> None:
    with pytest.raises(SearcherError, match="is not a \\(searcher, predicate\\) pair"):
        Composer([(Step("a", 1, 2, lambda v: v + 1), 3)])  # type: ignore[list-item]


# -- The older META_search_callback(past_runs) form -----------------------------------------------


def test_past_runs_callback() -> None:
    seen: list[int] = []

    def callback(past: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any] | None:
        seen.append(len(past))
        if past and past[-1][1]["t"] > 3:
            return None
        return {"x": len(past)}

    points = drive(PastRunsCallback(callback), lambda p, m: Run(m, {"t": p["x"] * 2}))
    assert [p["x"] for p in points] == [0, 1, 2]
    assert seen == [0, 1, 2, 3]


def test_composer_takes_a_users_searcher_that_only_follows_the_protocol() -> None:
    class Doubler:  # no SearcherInterface, no wants(): generate() and is_dynamic are enough
        is_dynamic = True

        def generate(self) -> Any:
            x = 1
            while x <= 8:
                yield {"x": x}
                x *= 2

    c = Composer([Doubler(), Step("y", 1, 2, lambda v: v + 1)])
    assert [tuple(p.values()) for p in static(c)] == [(1, 1), (2, 1), (4, 1), (8, 1), (8, 2)]
    with pytest.raises(SearcherError, match="is not a searcher"):
        Composer([3])  # type: ignore[list-item]


def test_random_on_a_grid_larger_than_a_machine_word() -> None:
    grid = {f"p{i}": list(range(100)) for i in range(12)}  # 100**12 points
    points = static(Random(grid, 5, seed=1))
    assert len({tuple(p.values()) for p in points}) == 5
    assert points == static(Random(grid, 5, seed=1))


@settings(max_examples=100)
@given(
    lengths=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    wants=st.lists(st.booleans(), min_size=4, max_size=4),
    timeout=st.none() | st.integers(1, 30),
    outcomes=st.lists(st.booleans(), min_size=1, max_size=200),
)
def test_composer_invariants(
    lengths: list[int], wants: list[bool], timeout: int | None, outcomes: list[bool]
) -> None:
    """Any Composer of Steps ends, within its timeout, every point setting every parameter."""
    names = [f"p{i}" for i in range(len(lengths))]
    searchers: list[Any] = [
        (Step(n, 1, k, lambda v: v + 1), (lambda r, w=w: w))
        for n, k, w in zip(names, lengths, wants, strict=False)
    ]
    results = iter(outcomes * 100)
    points = drive(Composer(searchers, timeout=timeout), lambda p, m: Run(m, {"ok": next(results)}))
    assert points[0] == {n: 1 for n in names}
    assert all(set(p) == set(names) for p in points)
    # Each run advances one Step by one value, and a Step has k values: the search cannot
    # outlast the sum of the Steps' lengths (plus the initial point).
    assert len(points) <= 1 + sum(k - 1 for k in lengths)
    if timeout is not None:
        assert len(points) <= timeout
    else:
        assert len(points) == 1 + sum(k - 1 for k in lengths)


def test_bisect_on_a_huge_grid_stores_nothing_per_value() -> None:
    b = Bisect("qps", 0, 10**15, 1, predicate=lambda r: r.config["qps"] <= 123_456_789)
    points = drive(b, lambda p, m: Run(m))
    assert b.get_best() == {"qps": 123_456_789}
    assert len(points) <= 50  # ceil(log2(10**15))


# -- ranges and conditions (issue #28) ---------------------------------------------------------


def test_the_product_lists_int_ranges_and_refuses_a_continuous_one() -> None:
    from tuna.searchers import Float, Int, ParameterSpace

    space = ParameterSpace({"t": Int(4, 12, step=4), "f": Float(0, 1, step=0.5)})
    assert static(CartesianProduct(space)) == [
        {"t": t, "f": f} for t in (4, 8, 12) for f in (0.0, 0.5, 1.0)
    ]
    assert static(CartesianProduct({"t": Int(1, 3)})) == [{"t": 1}, {"t": 2}, {"t": 3}]
    with pytest.raises(SearcherError) as e:
        CartesianProduct(
            ParameterSpace({"t": [1], "lr": Float(1e-4, 1e-1, log=True)}, source="p.py")
        )
    assert str(e.value) == (
        "p.py: parameter 'lr' is Float(0.0001, 0.1, log=True), a continuous range, so the "
        "exhaustive search (CartesianProduct) cannot list its values; give it a step, or use "
        "a searcher that samples, e.g. Random(space, 50, seed=1)"
    )


def test_the_product_of_a_conditional_space_puts_runtime_parameters_innermost() -> None:
    from tuna.searchers import Categorical, ParameterSpace

    space = ParameterSpace(
        {"algo": ["a", "b"], "n": [1, 2], "u": Categorical([8, 9], when={"algo": "b"})},
        no_rebuild=("algo",),
    )
    points = static(CartesianProduct(space, no_rebuild_params=["algo"]))
    # 'algo' is runtime-only (fastest) but 'u' needs it first: u comes after it.
    assert points == [
        {"n": 1, "algo": "a"},
        {"n": 1, "algo": "b", "u": 8},
        {"n": 1, "algo": "b", "u": 9},
        {"n": 2, "algo": "a"},
        {"n": 2, "algo": "b", "u": 8},
        {"n": 2, "algo": "b", "u": 9},
    ]


def test_random_samples_ranges_seeded_and_inside_them() -> None:
    from tuna.searchers import Categorical, Float, Int, ParameterSpace

    space = ParameterSpace(
        {
            "algo": ["naive", "tiled"],
            "tile": Int(4, 64, step=4),
            "lr": Float(1e-4, 1e-1, log=True),
            "unroll": Categorical([1, 2, 4], when={"algo": "tiled"}),
        }
    )
    points = static(Random(space, 40, seed=3))
    assert points == static(Random(space, 40, seed=3))
    assert points != static(Random(space, 40, seed=4))
    assert len(points) == 40 and len({tuple(sorted(p.items())) for p in points}) == 40
    for p in points:
        assert space.check_point(p) == p
        assert ("unroll" in p) == (p["algo"] == "tiled")
    assert {p["algo"] for p in points} == {"naive", "tiled"}


def test_random_over_a_small_conditional_space_ends_when_it_is_drawn_out() -> None:
    from tuna.searchers import Categorical, ParameterSpace

    space = ParameterSpace({"a": ["x", "y"], "u": Categorical([1, 2], when={"a": "y"})})
    points = static(Random(space, 50, seed=1))
    assert sorted(points, key=str) == sorted(space.product(), key=str)  # all 3, once each


def test_random_over_lists_is_unchanged_by_ranges() -> None:
    # The seeded picks over a plain grid are what replay and the docs pin.
    grid = {"a": [1, 2, 3], "b": ["x", "y"]}
    from tuna.searchers import ParameterSpace

    assert static(Random(ParameterSpace(dict(grid)), 4, seed=1)) == static(Random(grid, 4, seed=1))
    assert static(Random(grid, 4, seed=1)) == [  # what main gave before ranges existed
        {"a": 1, "b": "y"},
        {"a": 3, "b": "x"},
        {"a": 1, "b": "x"},
        {"a": 3, "b": "y"},
    ]


def test_random_over_a_huge_int_range_lists_nothing() -> None:
    from tuna.searchers import Int, ParameterSpace

    space = ParameterSpace({"n": Int(0, 10**12, step=3), "k": ["a", "b"]})
    points = static(Random(space, 5, seed=2))
    assert len(points) == 5 and all(space.check_point(p) == p for p in points)
    assert points == static(Random(space, 5, seed=2))
