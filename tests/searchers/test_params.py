"""Parameter kinds: int and float ranges (with steps, log scale), lists, conditions."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuna.searchers import Categorical, Float, Int, ParameterSpace, space_json
from tuna.searchers.params import Param
from tuna.searchers.space import parse_json_space


@pytest.mark.parametrize(
    ("param", "values"),
    [
        (Int(4, 16, step=4), [4, 8, 12, 16]),
        (Int(1, 10, step=4), [1, 5, 9]),  # hi itself only when a step lands on it
        (Int(3, 3), [3]),
        (Int(-2, 1), [-2, -1, 0, 1]),
        (Float(0, 1, step=0.25), [0.0, 0.25, 0.5, 0.75, 1.0]),
        (Float(0, 0.3, step=0.1), [0.0, 0.1, 0.2, 0.3]),  # not 0.30000000000000004
        (Float(1, 2, step=0.3), [1.0, 1.3, 1.6, 1.9]),
        (Categorical(["a", 1, True]), ["a", 1, True]),
    ],
)
def test_finite_parameters_list_their_values(param: Param, values: list[object]) -> None:
    assert param.finite
    assert param.values() == values
    assert param.count() == len(values)
    assert all(param.contains(v) for v in values)


def test_a_float_range_without_a_step_is_continuous() -> None:
    f = Float(0.5, 2.0)
    assert not f.finite
    with pytest.raises(ValueError, match="continuous"):
        f.count()
    assert f.contains(0.5) and f.contains(1.234) and f.contains(2)
    assert not f.contains(2.01) and not f.contains("1") and not f.contains(True)


def test_an_int_range_holds_only_its_steps() -> None:
    i = Int(4, 64, step=4)
    assert i.contains(8) and not i.contains(9) and not i.contains(68) and not i.contains(8.0)
    assert not i.contains(True)


def _share_below(param: Param, cut: float, n: int = 4000) -> float:
    rng = random.Random(5)
    draws = [param.sample(rng) for _ in range(n)]
    assert all(param.contains(d) for d in draws)
    return sum(1 for d in draws if d < cut) / n  # type: ignore[operator]


def test_log_scale_samples_each_decade_alike() -> None:
    # Log-uniform over [1e-4, 1e-1]: half the draws below the geometric middle (3.2e-3);
    # a uniform draw would put about 3% there.
    assert 0.45 < _share_below(Float(1e-4, 1e-1, log=True), math.sqrt(1e-4 * 1e-1)) < 0.55
    assert _share_below(Float(1e-4, 1e-1), math.sqrt(1e-4 * 1e-1)) < 0.05
    assert 0.45 < _share_below(Int(1, 1000, log=True), math.sqrt(1000)) < 0.55
    assert _share_below(Int(1, 1000), math.sqrt(1000)) < 0.05


def test_sampling_a_stepped_range_gives_its_values() -> None:
    rng = random.Random(1)
    assert {Float(0, 1, step=0.5).sample(rng) for _ in range(200)} == {0.0, 0.5, 1.0}
    assert {Int(2, 8, step=3).sample(rng) for _ in range(200)} == {2, 5, 8}


@pytest.mark.parametrize(
    ("param", "problem"),
    [
        (Int(64, 4), "the range [64, 4] is empty (lo is above hi); give lo <= hi"),
        (Int(4, 64, step=0), "step 0: an Int's step is a whole number of at least 1"),
        (Int(4, 64, step=-4), "step -4"),
        (Int(4, 64, step=1.5), "step 1.5"),  # type: ignore[arg-type]
        (Int(1.5, 4), "Int lo must be a whole number, not 1.5"),  # type: ignore[arg-type]
        (Int(0, 10, log=True), "log=True needs lo > 0"),
        (Int(1, 64, step=2, log=True), "log=True with step 2"),
        (Float(1, 0), "the range [1, 0] is empty"),
        (Float(0, 1, step=0), "step 0: a Float's step is a number above 0"),
        (Float(0, 1, step=-0.5), "step -0.5"),
        (Float(0.0, 1.0, log=True), "log=True needs lo > 0 (a log scale has no 0 or negatives)"),
        (Float(-1.0, 1.0, log=True), "not lo=-1.0"),
        (Float(1e-3, 1, step=0.1, log=True), "log=True with step 0.1"),
        (Float("0", 1), "Float bounds must be numbers"),  # type: ignore[arg-type]
        (Float(0, math.inf), "Float bounds must be finite numbers"),
        (Float(0, 1, log="yes"), "log must be true or false"),  # type: ignore[arg-type]
        (Categorical([1, [2]]), "value 1 is [2]; values must be booleans, numbers or strings"),
    ],
)
def test_a_bad_declaration_says_what_is_wrong(param: Param, problem: str) -> None:
    said = param.problem()
    assert said is not None and problem in said
    assert "\n" not in said


def test_a_condition_holds_only_where_its_parents_have_its_values() -> None:
    u = Categorical([1, 2], when={"algo": "tiled", "n": [1, 2]})
    assert u.when == {"algo": ("tiled",), "n": (1, 2)}
    assert u.active({"algo": "tiled", "n": 2})
    assert not u.active({"algo": "naive", "n": 2})
    assert not u.active({"n": 2})  # algo absent: a conditional parent that does not exist
    assert not Categorical([1], when={"flag": 1}).active({"flag": True})  # True is not 1


# -- the JSON form reads back equal (what a stored search and tuna.tune rely on to resume) ----

bounds = st.tuples(st.integers(-50, 50), st.integers(0, 60)).map(lambda t: (t[0], t[0] + t[1]))
ints = st.builds(
    lambda b, step, log: (
        Int(max(b[0], 1), max(b[1], 1), log=True) if log else Int(b[0], b[1], step=step)
    ),
    bounds,
    st.integers(1, 7),
    st.booleans(),
)
floats = st.builds(
    lambda lo, width, step, log: (
        Float(abs(lo) + 0.01, abs(lo) + 0.01 + width, log=True)
        if log
        else Float(lo, lo + width, step=step)
    ),
    st.floats(-10, 10, allow_nan=False),
    st.floats(0, 10, allow_nan=False),
    st.none() | st.floats(0.01, 5, allow_nan=False),
    st.booleans(),
)
lists = st.lists(
    st.integers(-5, 5) | st.text("xyz", max_size=2) | st.booleans() | st.floats(-1, 1),
    max_size=4,
).map(lambda v: Categorical(v))


@given(st.lists(ints | floats | lists, min_size=1, max_size=5), st.data())
def test_a_space_reads_back_equal_from_its_json(params: list[Param], data: st.DataObject) -> None:
    named: dict[str, Param] = {}
    for i, p in enumerate(params):
        if named and data.draw(st.booleans()):  # conditional on an earlier list parameter
            parent = data.draw(st.sampled_from([n for n, q in named.items()]))
            q = named[parent]
            if isinstance(q, Categorical) and q.choices:
                value = data.draw(st.sampled_from(list(q.choices)))
                p = type(p)(**{**p.__dict__, "when": {parent: value}})
        named[f"p{i}"] = p
    space = ParameterSpace(named, source="s.json", constraints=("p0 == p0",))  # type: ignore[arg-type]
    text = space_json(space)
    again = parse_json_space(text, source="s.json")
    assert again == space
    assert space_json(again) == text


@pytest.mark.parametrize(
    ("param", "count", "last"),
    [
        (Float(1e9, 1e9 + 1, step=0.001), 1001, 1e9 + 1),  # 13 significant digits apart
        (Float(0.1, 0.7, step=0.2), 4, 0.7),
        (Float(1e-15, 5e-15, step=1e-15), 5, 5e-15),
        (Float(-1, 1, step=0.4), 6, 1.0),
    ],
)
def test_a_stepped_float_range_is_exact_in_decimal(param: Float, count: int, last: float) -> None:
    values = param.values()
    assert len(values) == count == len(set(values))
    assert values[-1] == last
