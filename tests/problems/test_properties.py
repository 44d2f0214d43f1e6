"""Property tests for the driver grammar and the db keys (hypothesis)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tuna.errors import DriverLineError
from tuna.problems import (
    BnProblem,
    ConvProblem,
    bnorm_key,
    find_db_key,
    network_config,
    parse_bnorm_key,
    parse_bnorm_line,
    parse_driver_line,
    parse_find_db_key,
    parse_perf_db_key,
    perf_db_key,
    to_bnorm_driver_line,
    to_driver_line,
)
from tuna.problems.conv import COMMAND_TYPES, DIRECTIONS, LAYOUTS_2D, LAYOUTS_3D, Direction, Mode
from tuna.problems.driver import CONV_FLAGS, FlagTable, FlagValues, split_command

EXAMPLES = settings(max_examples=300, deadline=None)
CASTS = st.one_of(st.none(), st.sampled_from(["FP32", "FP16", "BF16", "FP8", "BF8"]))


def spatial(dims: int, low: int, high: int) -> st.SearchStrategy[tuple[int, ...]]:
    return st.tuples(*[st.integers(low, high)] * dims)


@st.composite
def conv_problems(draw: st.DrawFn, modes: tuple[Mode, ...] = ("conv",)) -> ConvProblem:
    dims = draw(st.sampled_from([2, 3]))
    groups = draw(st.sampled_from([1, 1, 2, 3, 4, 8, 32]))
    layouts = st.sampled_from(LAYOUTS_3D if dims == 3 else LAYOUTS_2D)
    mode = draw(st.sampled_from(modes))
    stride = draw(spatial(dims, 1, 3))
    x_type, w_type, y_type = COMMAND_TYPES[draw(st.sampled_from(sorted(COMMAND_TYPES)))]
    return ConvProblem(
        spatial_dim=dims,
        batchsize=draw(st.integers(1, 512)),
        in_channels=groups * draw(st.integers(1, 16)),
        out_channels=groups * draw(st.integers(1, 16)),
        in_size=draw(spatial(dims, 1, 64)),
        fil_size=draw(spatial(dims, 1, 7)),
        pad=draw(spatial(dims, 0, 3)),
        stride=stride,
        dilation=draw(spatial(dims, 1, 3)),
        trans_output_pad=tuple(draw(st.integers(0, s - 1)) for s in stride)
        if mode == "trans"
        else (),
        group_count=groups,
        mode=mode,
        direction=draw(st.sampled_from(list(DIRECTIONS.values()))),
        in_layout=draw(layouts),
        fil_layout=draw(layouts),
        out_layout=draw(layouts),
        in_type=x_type,
        wei_type=w_type,
        out_type=y_type,
        in_cast=draw(CASTS),
        wei_cast=draw(CASTS),
        out_cast=draw(CASTS),
    )


@EXAMPLES
@given(conv_problems(modes=("conv", "trans")))
def test_driver_line_round_trip(p: ConvProblem) -> None:
    assert parse_driver_line(to_driver_line(p)) == [p]


@EXAMPLES
@given(conv_problems())
def test_find_db_key_round_trip(p: ConvProblem) -> None:
    key = find_db_key(p)
    assert parse_find_db_key(key) == p
    assert len(key.split("-")) in (15, 17, 19)


@EXAMPLES
@given(conv_problems(), st.sampled_from(list(DIRECTIONS.values())))
def test_keys_tell_directions_apart(p: ConvProblem, other: Direction) -> None:
    assume(other != p.direction)
    assert find_db_key(p) != find_db_key(p.with_direction(other))
    assert perf_db_key(p) != perf_db_key(p.with_direction(other))
    assert network_config(p) != network_config(p.with_direction(other))


@EXAMPLES
@given(conv_problems(modes=("trans",)))
def test_transposed_key_is_the_key_of_a_conv_problem(p: ConvProblem) -> None:
    """Every trans problem whose y gives x back through the conv formula has a parseable key."""
    raw = [
        s * (x - 1) + 1 + d * (f - 1) - 2 * q + o
        for x, f, q, s, d, o in zip(
            p.in_size, p.fil_size, p.pad, p.stride, p.dilation, p.trans_output_pad, strict=True
        )
    ]
    assume(min(raw) >= 1)
    key = find_db_key(p)
    q = parse_find_db_key(key)
    assert q.mode == "conv"
    assert q.direction == {"F": "B", "B": "F", "W": "W"}[p.direction]
    assert find_db_key(q) == key


@EXAMPLES
@given(conv_problems())
def test_perf_db_key_round_trip(p: ConvProblem) -> None:
    key = perf_db_key(p)
    q = parse_perf_db_key(key)
    assert perf_db_key(q) == key
    assert len(key.split("x")) == 24
    if p.direction == "F" and p.layouts == (p.in_layout,) * 3 and p.casts == (None,) * 3:
        assert q == p
    # B/W keys hold y, not x: the parsed problem is the smallest x with the same y
    assert q.out_size == p.out_size
    assert all(a <= b for a, b in zip(q.in_size, p.in_size, strict=True))


KEY_PARTS = st.builds(
    lambda p: find_db_key(p),
    conv_problems(),
)


@EXAMPLES
@given(KEY_PARTS)
def test_key_problem_key_identity(key: str) -> None:
    assert find_db_key(parse_find_db_key(key)) == key


@EXAMPLES
@given(conv_problems())
def test_problem_is_hashable_and_replace_validates(p: ConvProblem) -> None:
    assert hash(p) == hash(dataclasses.replace(p))
    assert p.with_batchsize(p.batchsize + 1) != p
    assert p.with_command(p.cmd) == p


bn_problems = st.builds(
    lambda types, n, c, d, h, w, layout_3d, mode, direction, save, run, alpha, beta: BnProblem(
        data_type=types[0],
        param_type=types[1],
        batchsize=n,
        in_channels=c,
        in_d=d,
        in_h=h,
        in_w=w,
        layout=("NDHWC" if layout_3d else "NCDHW") if d else ("NHWC" if layout_3d else "NCHW"),
        mode=mode,
        direction=direction,
        save=save,
        run=run,
        alpha=alpha,
        beta=beta,
    ),
    st.sampled_from([("FP32", "FP32"), ("FP16", "FP16"), ("FP16", "FP32"), ("BF16", "FP32")]),
    st.integers(1, 512),
    st.integers(1, 2048),
    st.sampled_from([0, 0, 1, 4]),
    st.integers(1, 256),
    st.integers(1, 256),
    st.booleans(),
    st.sampled_from([0, 1]),
    st.sampled_from(["FWD_TRAIN", "FWD_INFER", "BWD"]),
    st.booleans(),
    st.booleans(),
    st.one_of(st.just(1.0), st.floats(-1e6, 1e6, allow_nan=False)),
    st.one_of(st.just(0.0), st.floats(-1e6, 1e6, allow_nan=False)),
)


@EXAMPLES
@given(bn_problems)
def test_bnorm_round_trips(p: BnProblem) -> None:
    assert parse_bnorm_key(bnorm_key(p)) == p
    assert parse_bnorm_line(to_bnorm_driver_line(p)) == p


TABLE = FlagTable(CONV_FLAGS, {"conv_stride_0": "conv_stride_h", "conv_stride_1": "conv_stride_w"})


def spellings(long: str) -> list[str]:
    return sorted(token for token, (name, _) in TABLE.tokens.items() if name == long)


@settings(max_examples=150, deadline=None)  # many draws each
@given(conv_problems(modes=("conv", "trans")), st.data())
def test_any_spelling_of_a_line_parses_the_same(p: ConvProblem, data: st.DataObject) -> None:
    """Short, long or old flag names, in any order, with signs and leading zeros, and with
    earlier values that a repeated flag overrides: the same problem."""
    base, tokens = split_command(to_driver_line(p))
    groups = []
    for flag, value in zip(tokens[::2], tokens[1::2], strict=True):
        long, _ = TABLE.tokens[flag]
        written = data.draw(st.sampled_from(spellings(long)))
        if value.isdigit():
            value = data.draw(st.sampled_from([value, f"+{value}", f"0{value}"]))
        elif TABLE.tokens[written][1]:  # a long layout flag: uppercased
            value = data.draw(st.sampled_from([value, value.lower()]))
        group = [written, value]
        if data.draw(st.booleans()):  # overridden by the value after it
            group = [data.draw(st.sampled_from(spellings(long))), "-x?", *group]
        groups.append(group)
    shuffled = data.draw(st.permutations(groups))
    line = " ".join(["MIOpenDriver", base, *(t for group in shuffled for t in group)])
    assert parse_driver_line(line) == [p]


def read_outcome(read: Callable[[list[str]], FlagValues], tokens: list[str]) -> object:
    try:
        return read(tokens).raw
    except DriverLineError as e:
        return (e.reason, e.flag)


@EXAMPLES
@given(st.lists(st.sampled_from([*TABLE.tokens, "--nope", "-", "--", "-nn", "--n=3", "x", "nhwc"])))
def test_reading_a_line_at_once_or_flag_by_flag_agrees(tokens: list[str]) -> None:
    assert read_outcome(TABLE.read, tokens) == read_outcome(TABLE._read_each, tokens)


INTEGER_TEXTS = ["0", "7", "4095", "4096", "123456", "+3", "-2", "007", "1x", "\u0663", "", "-"]


@EXAMPLES
@given(
    st.dictionaries(st.sampled_from([s.long for s in CONV_FLAGS]), st.sampled_from(INTEGER_TEXTS))
)
def test_integers_agrees_with_integer(values: dict[str, str]) -> None:
    flags = TABLE.read([t for name, value in values.items() for t in (f"--{name}", value)])
    defaults = {s.long: i for i, s in enumerate(CONV_FLAGS)}
    ints = flags.integers(defaults)

    def outcome(get: Callable[..., int], *args: object) -> object:
        try:
            return get(*args)
        except DriverLineError as e:
            return (e.reason, e.flag)

    for name, default in defaults.items():
        assert outcome(ints.__getitem__, name) == outcome(flags.integer, name, default)
    if all(v.isdigit() and v.isascii() for v in values.values()):
        assert isinstance(ints, dict)  # converted at once, the fast way
