"""``ConvProblem``'s fast paths (``tuna/problems/conv.py``) against the slow ones they stand for.

Construction checks a problem with ``_plainly_valid`` and falls back to filling in defaults
and ``_invalid_reason`` only when that fails; ``_from_fields`` skips the generated ``__init__``;
``with_direction`` copies instead of validating again; ``__eq__`` adds an identity shortcut.
Each must be indistinguishable from the plain dataclass behaviour.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.problems.test_properties import conv_problems
from tuna.problems.conv import DIRECTIONS, ConvProblem, Direction, InvalidProblemError
from tuna.problems.driver import parse_driver_line

EXAMPLES = settings(max_examples=300, deadline=None)
FIELDS = [f.name for f in dataclasses.fields(ConvProblem)]

SPATIAL = ("in_size", "fil_size", "pad", "stride", "dilation", "trans_output_pad")


def odd_values(name: str, dims: int) -> list[Any]:
    """Values for field ``name`` of a ``dims``-D problem, valid or not, typed right or not."""
    if name in SPATIAL:
        ones = (1,) * dims
        return [(), (0,) * dims, ones, (2,) * dims, (-1, *ones[1:]), (*ones, 1), ones[1:],
                [1] * dims, (1.0, *ones[1:]), (True, *ones[1:]), ("1", *ones[1:])]  # fmt: skip
    if name.endswith("_layout"):
        return ["", "nchw", "NCHW", "NHWC", "NCDHW", "NDHWC", "CHWN", "X", None]
    if name.endswith("_type"):
        return ["FP32", "INT32", "FP8", "fp32", "", None]
    if name.endswith("_cast"):
        return [None, "FP8", "INT64", "fp8", "", 1]
    others: dict[str, list[Any]] = {
        "mode": ["conv", "trans", "deconv", ""],
        "direction": ["F", "B", "W", "X", ""],
        "spatial_dim": [2, 3, 4, 5 - dims, 2.0, True],
    }
    return others.get(name, [0, -1, 1, 2, 3, True, 2.0, "1", None])


@st.composite
def field_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """Every field of a valid problem, with one or two replaced by odd values (maybe invalid)."""
    p = draw(conv_problems(modes=("conv", "trans")))
    fields = {name: getattr(p, name) for name in FIELDS}
    for _ in range(draw(st.sampled_from([1, 1, 2]))):
        name = draw(st.sampled_from(FIELDS))
        fields[name] = draw(st.sampled_from(odd_values(name, p.spatial_dim)))
    return fields


def outcome(make: Callable[..., ConvProblem], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """What ``make(*args, **kwargs)`` gives: the problem's fields and their types, or the error."""
    try:
        p = make(*args, **kwargs)
    except Exception as e:
        return ("raised", type(e), str(e))
    return ("made", {k: (type(v), v) for k, v in vars(p).items()})


BASES = [
    "conv -n 2 -c 4 -k 8 -H 9 -W 7 -y 3 -x 1 -p 1 -q 0 -F 1",
    "convfp16 -_ 3 -n 2 -c 4 -k 8 -! 5 -@ 3 -F 4 --in_layout NDHWC --fil_layout NDHWC",
    "conv -m trans -u 2 -v 3 -Y 1 -X 2 -g 2 -c 4 -k 6 -U fp8 -F 2",
    "convint8 -_ 3 -m trans -# 2 -% 1 -F 1 --out_layout NDHWC -n 100",
]


def single_changes() -> list[dict[str, Any]]:
    """Each field of each base problem in turn set to each of its odd values."""
    out = []
    for line in BASES:
        (p,) = parse_driver_line(line)
        fields = {name: getattr(p, name) for name in FIELDS}
        for name in FIELDS:
            out += [{**fields, name: value} for value in odd_values(name, p.spatial_dim)]
    return out


def check_plainly_valid(fields: dict[str, Any]) -> None:
    p = object.__new__(ConvProblem)
    vars(p).update(fields)  # unchecked, as __post_init__ first sees it
    if p._plainly_valid():
        assert p._invalid_reason() is None, fields
        assert outcome(ConvProblem, **fields) == outcome(lambda: p), fields


def test_plainly_valid_means_nothing_to_fill_in_and_nothing_wrong() -> None:
    for fields in single_changes():
        check_plainly_valid(fields)


@EXAMPLES
@given(field_dicts())
def test_plainly_valid_for_changes_drawn_at_random(fields: dict[str, Any]) -> None:
    check_plainly_valid(fields)


def test_from_fields_is_the_constructor() -> None:
    for fields in single_changes():
        made = outcome(ConvProblem._from_fields, dict(fields))
        assert made == outcome(ConvProblem, **fields), fields


@EXAMPLES
@given(conv_problems(modes=("conv", "trans")))
def test_every_valid_problem_takes_the_fast_path(p: ConvProblem) -> None:
    """Else the tests above test little, and construction is slow again."""
    assert p._plainly_valid()


@pytest.mark.parametrize(
    "line",
    [
        "./bin/MIOpenDriver conv -n 8 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 0",
        "convfp16 -_ 3 -! 4 -@ 2 --in_layout ndhwc --fil_layout NDHWC --out_layout NDHWC",
        "conv -m trans -u 2 -v 2 -Y 1 -X 0 -U fp8 -g 2 -c 4 -k 6 -F 6",
    ],
)
def test_parsed_problems_take_the_fast_path(line: str) -> None:
    assert all(p._plainly_valid() for p in parse_driver_line(line))


def test_from_fields_refuses_what_the_constructor_refuses() -> None:
    p = ConvProblem(spatial_dim=2, batchsize=1, in_channels=1, out_channels=1, in_size=(4, 4),
                    fil_size=(1, 1))  # fmt: skip
    with pytest.raises(InvalidProblemError, match="spatial_dim 4 is not 2 or 3"):
        ConvProblem._from_fields({**vars(p), "spatial_dim": 4})
    with pytest.raises(InvalidProblemError, match=r"stride \(0, 1\) has a value below 1"):
        ConvProblem._from_fields({**vars(p), "stride": (0, 1)})
    four = {name: (1,) * 4 for name in ("in_size", "fil_size", "pad", "stride", "dilation")}
    with pytest.raises(InvalidProblemError, match="spatial_dim 4 is not 2 or 3"):
        ConvProblem(**{**vars(p), **four, "trans_output_pad": (0,) * 4, "spatial_dim": 4})


@EXAMPLES
@given(conv_problems(modes=("conv", "trans")), st.sampled_from(list(DIRECTIONS.values())))
def test_with_direction_equals_a_validated_construction(p: ConvProblem, d: Direction) -> None:
    before = dict(vars(p))
    q = p.with_direction(d)
    expected = ConvProblem(**{**{name: getattr(p, name) for name in FIELDS}, "direction": d})
    assert outcome(lambda: q) == outcome(lambda: expected)
    assert q == expected and hash(q) == hash(expected) and type(q) is ConvProblem
    assert vars(p) == before  # the original is untouched


def test_with_direction_still_refuses_a_bad_direction() -> None:
    p = ConvProblem(spatial_dim=2, batchsize=1, in_channels=1, out_channels=1, in_size=(4, 4),
                    fil_size=(1, 1))  # fmt: skip
    with pytest.raises(InvalidProblemError, match="direction 'X' is not F, B or W"):
        p.with_direction("X")  # type: ignore[arg-type]


@EXAMPLES
@given(conv_problems(modes=("conv", "trans")), st.data())
def test_eq_is_field_by_field(p: ConvProblem, data: st.DataObject) -> None:
    def values(r: ConvProblem) -> tuple[Any, ...]:
        return tuple(getattr(r, name) for name in FIELDS)

    q = data.draw(
        st.sampled_from(
            [p, dataclasses.replace(p), p.with_batchsize(p.batchsize + 1), p.with_direction("W")]
        )
        | conv_problems(modes=("conv", "trans"))
    )
    assert (p == q) is (values(p) == values(q))
    assert (p != q) is (values(p) != values(q))
    assert (p == q) <= (hash(p) == hash(q))
    assert p != values(p) and p.__eq__(values(p)) is NotImplemented
