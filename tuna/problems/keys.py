# Over 600 lines: one grammar: each db key's parser beside its writer, per direction.
"""MIOpen db keys for a ``ConvProblem`` (reference §2) and the text-db record grammar (§3.3).

MIOpen builds a ``ProblemDescription(in, weights, out, direction)`` and keys it by its "in" and
"out" tensors, which are not x and y for every direction:

=============  =========  ========  ===========  ===========================
driver mode    direction  key dir   key "in"     key "out"
=============  =========  ========  ===========  ===========================
conv           F          F         x (C, x)     y (K, y)
conv           B          B         dy (K, y)    dx (C, x)
conv           W          W         dy (K, y)    x (C, x)
trans          F          B         x (C, x)     y (K, y)
trans          B          F         dy (K, y)    dx (C, x)
trans          W          W         x (C, x)     dy (K, y)
=============  =========  ========  ===========  ===========================

(C, x) means channels C and x's spatial dims; y is ``p.out_size`` (the trans formula in mode
trans). Layouts, data types and cast types follow the same tensors. A key therefore never says
"trans": parsing one gives the mode-conv problem with the same key (a trans F problem comes back
as the conv B problem whose x is the trans y).

Keys are checked for consistency when parsed: the out dims must be what the conv formula gives
from the key's x-side dims, or ``DbKeyError`` is raised; a parsed key always serialises back to
the same bytes.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from typing import NamedTuple

from tuna.errors import DbKeyError
from tuna.problems.conv import (
    DATA_TYPES,
    DIRECTIONS,
    INT_MAX,
    LAYOUTS_2D,
    LAYOUTS_3D,
    PLAIN_SPATIAL_MAX,
    ConvProblem,
    Direction,
    InvalidProblemError,
    conv_out_size,
    default_layout,
    same_out_size,
    same_pad,
)

_INT = re.compile(r"0|[1-9][0-9]{0,9}")  # at most 10 digits: INT_MAX is checked after
_DIR_SUFFIX = re.compile(
    r"(?P<dir>[FBW])(?:_g(?P<g>[1-9][0-9]*))?"
    r"(?:_ci(?P<ci>[A-Z0-9]+?))?(?:_cw(?P<cw>[A-Z0-9]+?))?(?:_co(?P<co>[A-Z0-9]+?))?"
)
_TYPES_LONGEST_FIRST = sorted(DATA_TYPES, key=len, reverse=True)
_TRANS_KEY_DIRECTION: dict[Direction, Direction] = {"F": "B", "B": "F", "W": "W"}


class _Side(NamedTuple):
    """One of the key's "in" and "out" tensors."""

    channels: int
    spatial: tuple[int, ...]
    layout: str
    type: str
    cast: str | None


class _KeyView(NamedTuple):
    """A problem as MIOpen's ``ProblemDescription`` sees it: in/out in the key's sense."""

    spatial_dim: int
    key_in: _Side
    key_out: _Side
    wei: tuple[str, str, str | None]  # layout, type, cast
    fil: tuple[int, ...]
    n: int
    pad: tuple[int, ...]
    stride: tuple[int, ...]
    dil: tuple[int, ...]
    bias: int
    direction: Direction
    groups: int

    @property
    def layouts(self) -> tuple[str, str, str]:
        return (self.key_in.layout, self.wei[0], self.key_out.layout)

    @property
    def types(self) -> tuple[str, str, str]:
        return (self.key_in.type, self.wei[1], self.key_out.type)

    @property
    def casts(self) -> tuple[str | None, str | None, str | None]:
        return (self.key_in.cast, self.wei[2], self.key_out.cast)


def _key_direction(p: ConvProblem) -> tuple[Direction, bool]:
    """The key's direction, and whether the key's "in" is y (so its "out" is x)."""
    if p.mode == "trans":
        return _TRANS_KEY_DIRECTION[p.direction], p.direction == "B"
    return p.direction, p.direction != "F"


def _view(p: ConvProblem) -> _KeyView:
    key_dir, swapped = _key_direction(p)
    x = _Side(p.in_channels, p.in_size, p.in_layout, p.in_type, p.in_cast)
    y = _Side(p.out_channels, p.out_size, p.out_layout, p.out_type, p.out_cast)
    key_in, key_out = (y, x) if swapped else (x, y)
    wei = (p.fil_layout, p.wei_type, p.wei_cast)
    return _KeyView(p.spatial_dim, key_in, key_out, wei, p.fil_size, p.batchsize, p.pad,
                    p.stride, p.dilation, p.bias, key_dir, p.group_count)  # fmt: skip


def _int_or_none(raw: str) -> int | None:
    """A key's integer field, or None if it is not canonical or does not fit a C int."""
    if not _INT.fullmatch(raw):
        return None
    value = int(raw)
    return value if value <= INT_MAX else None


def _shown(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"


def _problem(v: _KeyView) -> ConvProblem:
    """The mode-conv problem behind a key view; ``InvalidProblemError`` if there is none.

    Out dims that the conv formula does not give but ``ceil(x / stride)`` does, with pads 0
    or the pads MIOpen computes for "same" padding (:func:`same_pad`), are MIOpen's "same"
    padding mode (``pad_mode="same"``; the key's pads are kept as written)."""
    x, y = (v.key_out, v.key_in) if v.direction != "F" else (v.key_in, v.key_out)
    # every field given, so a valid problem takes the constructor's fast path
    p = ConvProblem._from_fields(
        {
            "spatial_dim": v.spatial_dim,
            "batchsize": v.n,
            "in_channels": x.channels,
            "out_channels": y.channels,
            "in_size": x.spatial,
            "fil_size": v.fil,
            "pad": v.pad,
            "stride": v.stride,
            "dilation": v.dil,
            "trans_output_pad": (0,) * v.spatial_dim,
            "group_count": v.groups,
            "mode": "conv",
            "pad_mode": "default",
            "direction": v.direction,
            "in_layout": x.layout,
            "fil_layout": v.wei[0],
            "out_layout": y.layout,
            "in_type": x.type,
            "wei_type": v.wei[1],
            "out_type": y.type,
            "in_cast": x.cast,
            "wei_cast": v.wei[2],
            "out_cast": y.cast,
            "bias": v.bias,
        }
    )
    same = tuple(map(same_out_size, x.spatial, v.stride))
    if (
        p.out_size != y.spatial
        and same == y.spatial
        and (not any(v.pad) or v.pad == tuple(map(same_pad, x.spatial, v.fil, v.stride)))
    ):
        return dataclasses.replace(p, pad_mode="same")
    if p.out_size != y.spatial:
        raise InvalidProblemError(
            f"y dims {_dims(y.spatial)} do not follow from x {_dims(x.spatial)}, "
            f"filter {_dims(v.fil)}, pads {_dims(v.pad)}, strides {_dims(v.stride)}, "
            f"dilations {_dims(v.dil)} (the conv formula gives {_dims(p.out_size)})"
        )
    return p


def _dims(values: tuple[int, ...], sep: str = "x") -> str:
    if len(values) == 2:  # an f-string takes a third of the time of join(map(str, ...))
        return f"{values[0]}{sep}{values[1]}"
    if len(values) == 3:
        return f"{values[0]}{sep}{values[1]}{sep}{values[2]}"
    return sep.join(map(str, values))


def encode_data_types(types: tuple[str, str, str]) -> str:
    """``EncodeDataTypesForKey``: one name when all three agree, else the three concatenated."""
    return types[0] if types[0] == types[1] == types[2] else "".join(types)


def decode_data_types(field: str) -> tuple[str, str, str]:
    """Invert ``encode_data_types``; ``ValueError`` for anything it would not write."""
    names: list[str] = []
    rest = field
    while rest:
        name = next((t for t in _TYPES_LONGEST_FIRST if rest.startswith(t)), None)
        if name is None:
            raise ValueError(f"{field!r} is not a data type ({', '.join(DATA_TYPES)})")
        names.append(name)
        rest = rest[len(name) :]
    if len(names) == 1:
        return (names[0], names[0], names[0])
    if len(names) != 3 or names[0] == names[1] == names[2]:
        raise ValueError(f"{field!r} is not one data type or three different ones")
    return (names[0], names[1], names[2])


def _layout_fields(v: _KeyView) -> list[str]:
    if v.layouts[0] == v.layouts[1] == v.layouts[2] == default_layout(v.spatial_dim):
        return [v.layouts[0]]
    return list(v.layouts)


def find_db_key(p: ConvProblem) -> str:
    """The find-db / legacy perf-db dash key (``ProblemDescription::Serialize``).

    >>> from tuna.problems.driver import parse_driver_line
    >>> find_db_key(parse_driver_line("conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 "
    ...                               "-u 2 -v 2 -F 2")[0])
    '2048-7-7-1x1-1024-14-14-128-0x0-2x2-1x1-0-NCHW-FP32-B'
    """
    # What _view does, written out: this runs once per imported line, and the views'
    # named tuples were a third of its time.
    key_dir, swapped = _key_direction(p)
    x = f"{p.in_channels}-{_dims(p.in_size, '-')}"
    y = f"{p.out_channels}-{_dims(p.out_size, '-')}"
    if swapped:
        sides = f"{y}-{_dims(p.fil_size)}-{x}"
        layouts = (p.out_layout, p.fil_layout, p.in_layout)
        types = (p.out_type, p.wei_type, p.in_type)
        casts = (p.out_cast, p.wei_cast, p.in_cast)
    else:
        sides = f"{x}-{_dims(p.fil_size)}-{y}"
        layouts = (p.in_layout, p.fil_layout, p.out_layout)
        types = (p.in_type, p.wei_type, p.out_type)
        casts = (p.in_cast, p.wei_cast, p.out_cast)
    if layouts[0] == layouts[1] == layouts[2] == default_layout(p.spatial_dim):
        layout = layouts[0]
    else:
        layout = "-".join(layouts)
    key = (
        f"{sides}-{p.batchsize}-{_dims(p.pad)}-{_dims(p.stride)}-{_dims(p.dilation)}-{p.bias}-"
        f"{layout}-{encode_data_types(types)}-{key_dir}"
    )
    if p.group_count != 1:
        key += f"_g{p.group_count}"
    if casts != (None, None, None):
        for tag, cast in zip(("_ci", "_cw", "_co"), casts, strict=True):
            if cast is not None:
                key += tag + cast
    return key


_I = "(0|[1-9][0-9]{0,8})"  # canonical, below 10^9 (so in a C int); longer ones go the long way
_L2, _L3 = "(?:NCHW|NHWC|CHWN)", "(?:NCDHW|NDHWC)"
_TAIL = r"-0-({layouts})-(FP32|FP16|BF16|INT8|FP64)-([FBW])(?:_g([2-9]|[1-9][0-9]{{1,8}}))?"
_PLAIN = {
    2: re.compile(
        f"{_I}-{_I}-{_I}-{_I}x{_I}-{_I}-{_I}-{_I}-{_I}-{_I}x{_I}-{_I}x{_I}-{_I}x{_I}"
        + _TAIL.format(layouts=f"NCHW|{_L2}-{_L2}-{_L2}")
    ),
    3: re.compile(
        f"{_I}-{_I}-{_I}-{_I}-{_I}x{_I}x{_I}-{_I}-{_I}-{_I}-{_I}-{_I}-{_I}x{_I}x{_I}-{_I}x{_I}x{_I}"
        f"-{_I}x{_I}x{_I}" + _TAIL.format(layouts=f"NCDHW|{_L3}-{_L3}-{_L3}")
    ),
}
_DEFAULT_3 = {2: "NCHW-NCHW-NCHW", 3: "NCDHW-NCDHW-NCDHW"}


def _plain(key: str) -> ConvProblem | None:
    """The problem of a key of the common forms (one type, no bias, no casts, default pad
    mode), or None when ``key`` is not of them: the full parser then decides, and names what
    is wrong. A fraction of the full parser's time; an import parses a key per line.

    A key this accepts is exactly what ``find_db_key`` writes for its problem, so it is not
    written back to compare: its integers are canonical (no leading zeros, below 10^9), a
    group count of 1 is left out, three layouts are written only when they are not all the
    default, one type stands for all three, and the out dims are the conv formula's. The
    problem is valid as ``ConvProblem._plainly_valid`` holds it (all values positive, pads
    at least 0, groups dividing both channel counts, spatial values small enough that y
    fits a C int). ``test_keys.py`` holds both to the full parser.
    """
    xs: tuple[int, ...]
    ys: tuple[int, ...]
    fil: tuple[int, ...]
    pad: tuple[int, ...]
    stride: tuple[int, ...]
    dil: tuple[int, ...]
    m = _PLAIN[2].fullmatch(key)
    if m is not None:
        ci, h, w, fy, fx, co, ho, wo, n, ph, pw, sh, sw, dh, dw = map(int, m.groups()[:15])
        layout, dtype, direction, groups = m.groups()[15:]
        if direction == "F":
            xs, ys, c, k = (h, w), (ho, wo), ci, co
        else:
            xs, ys, c, k = (ho, wo), (h, w), co, ci
        fil, pad, stride, dil = (fy, fx), (ph, pw), (sh, sw), (dh, dw)
        d = 2
    else:
        m = _PLAIN[3].fullmatch(key)
        if m is None:
            return None
        v = m.groups()
        ints = list(map(int, v[:21]))
        layout, dtype, direction, groups = v[21:]
        if direction == "F":
            xs, ys, c, k = tuple(ints[1:4]), tuple(ints[8:11]), ints[0], ints[7]
        else:
            xs, ys, c, k = tuple(ints[8:11]), tuple(ints[1:4]), ints[7], ints[0]
        fil, n = tuple(ints[4:7]), ints[11]
        pad, stride, dil = tuple(ints[12:15]), tuple(ints[15:18]), tuple(ints[18:21])
        d = 3
    g = int(groups) if groups else 1
    if (
        min(c, k, n, *xs, *ys, *fil, *stride, *dil) < 1
        or c % g
        or k % g
        or layout == _DEFAULT_3[d]
        or max(*xs, *fil, *pad, *stride, *dil) > PLAIN_SPATIAL_MAX
    ):
        return None
    out: tuple[int, ...]
    if d == 2:  # conv_out_size, written out
        out = (
            max(1, (xs[0] + 2 * pad[0] - (1 + dil[0] * (fil[0] - 1))) // stride[0] + 1),
            max(1, (xs[1] + 2 * pad[1] - (1 + dil[1] * (fil[1] - 1))) // stride[1] + 1),
        )
    else:
        out = tuple(map(conv_out_size, xs, fil, pad, stride, dil))
    if out != ys:
        return None  # "same" padding, or out dims that do not follow: checked in full
    if "-" in layout:
        key_in, wei_layout, key_out = layout.split("-")
    else:
        key_in = wei_layout = key_out = layout
    x_layout, y_layout = (key_in, key_out) if direction == "F" else (key_out, key_in)
    return ConvProblem._checked(
        {
            "spatial_dim": d,
            "batchsize": n,
            "in_channels": c,
            "out_channels": k,
            "in_size": xs,
            "fil_size": fil,
            "pad": pad,
            "stride": stride,
            "dilation": dil,
            "trans_output_pad": _NO_PADS[d],
            "group_count": g,
            "mode": "conv",
            "pad_mode": "default",
            "direction": direction,
            "in_layout": x_layout,
            "fil_layout": wei_layout,
            "out_layout": y_layout,
            "in_type": dtype,
            "wei_type": dtype,
            "out_type": dtype,
            "in_cast": None,
            "wei_cast": None,
            "out_cast": None,
            "bias": 0,
        }
    )


_NO_PADS = {2: (0, 0), 3: (0, 0, 0)}


def parse_find_db_key(key: str) -> ConvProblem:
    """The mode-conv problem behind a dash key; ``DbKeyError`` naming the key and the bad field.

    Accepts 15 fields (2D), 17 (3D, or 2D with three layouts) and 19 (3D with three layouts),
    with the ``_g<G>`` and ``_ci/_cw/_co`` suffixes.
    """
    plain = _plain(key)
    if plain is not None:
        return plain
    return _parse_full(key)


def _parse_full(key: str) -> ConvProblem:
    """``parse_find_db_key`` without the fast path for the common forms."""

    def fail(what: str) -> DbKeyError:
        return DbKeyError(f"find-db key {key!r}: {what}")

    f = key.split("-")
    if len(f) < 4:
        raise fail(f"has {len(f)} dash fields; expected 15, 17 or 19")
    dims = 2 if "x" in f[3] else 3
    n_layouts = len(f) - (2 * dims + 10)
    if n_layouts not in (1, 3):
        raise fail(
            f"has {len(f)} dash fields; a {dims}D key has {2 * dims + 11} or {2 * dims + 13}"
        )

    def ints(i: int, name: str, raws: list[str]) -> tuple[int, ...]:
        if all(
            r.isdigit() and r.isascii() and len(r) < 10 and (r[0] != "0" or r == "0") for r in raws
        ):
            return tuple(map(int, raws))  # the usual field: plain, below INT_MAX
        values = tuple(_int_or_none(r) for r in raws)
        if None in values:
            raise fail(
                f"field {i + 1} ({name}) {_shown('-'.join(raws))!r} is not canonical integers "
                f"of at most {INT_MAX} (MIOpen keeps each in a C int)"
            )
        return values  # type: ignore[return-value]

    def dhw(i: int, name: str) -> tuple[int, ...]:
        raws = f[i].split("x")
        if len(raws) != dims:
            raise fail(f"field {i + 1} ({name}) {f[i]!r} is not {dims} values joined by 'x'")
        return ints(i, name, raws)

    d = dims
    in_c = ints(0, "in channels", f[0:1])[0]
    in_sp = ints(1, "in spatial dims", f[1 : 1 + d])
    fil = dhw(1 + d, "filter")
    out_c = ints(2 + d, "out channels", f[2 + d : 3 + d])[0]
    out_sp = ints(3 + d, "out spatial dims", f[3 + d : 3 + 2 * d])
    n = ints(3 + 2 * d, "batch size", f[3 + 2 * d : 4 + 2 * d])[0]
    pad = dhw(4 + 2 * d, "pads")
    stride = dhw(5 + 2 * d, "strides")
    dil = dhw(6 + 2 * d, "dilations")
    bias = ints(7 + 2 * d, "bias", f[7 + 2 * d : 8 + 2 * d])[0]
    pos = 8 + 2 * d
    layouts = tuple(f[pos : pos + n_layouts])
    if n_layouts == 1:
        if layouts[0] != default_layout(dims):
            raise fail(
                f"single layout {layouts[0]!r}; MIOpen writes one layout only when all three "
                f"are {default_layout(dims)}"
            )
        layouts = layouts * 3
    pos += n_layouts
    try:
        types = decode_data_types(f[pos])
    except ValueError as e:
        raise fail(f"field {pos + 1} (data type): {e}") from e
    m = _DIR_SUFFIX.fullmatch(f[pos + 1])
    if m is None:
        raise fail(
            f"field {pos + 2} (direction) {f[pos + 1]!r} is not F, B or W with optional "
            "_g<G>, _ci<T>, _cw<T>, _co<T>"
        )
    key_in = _Side(in_c, in_sp, layouts[0], types[0], m["ci"])
    key_out = _Side(out_c, out_sp, layouts[2], types[2], m["co"])
    wei = (layouts[1], types[1], m["cw"])
    groups = _int_or_none(m["g"] or "1")
    if groups is None:
        raise fail(f"group count {_shown(m['g'])!r} is above {INT_MAX} (a C int)")
    view = _KeyView(dims, key_in, key_out, wei, fil, n, pad, stride, dil, bias,
                    DIRECTIONS[m["dir"]], groups)  # fmt: skip
    try:
        p = _problem(view)
    except InvalidProblemError as e:
        raise fail(str(e)) from e
    again = find_db_key(p)
    if again != key:
        raise fail(f"is not in MIOpen's canonical form (it would be written {again!r})")
    return p


PERF_DB_COLUMNS: tuple[str, ...] = (
    "layout", "data_type", "direction", "spatial_dim", "in_channels", "in_h", "in_w", "in_d",
    "fil_h", "fil_w", "fil_d", "out_channels", "batchsize", "pad_h", "pad_w", "pad_d",
    "conv_stride_h", "conv_stride_w", "conv_stride_d", "dilation_h", "dilation_w", "dilation_d",
    "bias", "group_count",
)  # fmt: skip
_PERF_KEY_ORDER = PERF_DB_COLUMNS[3:] + PERF_DB_COLUMNS[:3]


def perf_db_columns(p: ConvProblem) -> dict[str, int | str]:
    """The sqlite ``config`` row of ``p`` (§3.1), in DDL column order.

    2D problems get ``in_d = fil_d = 1`` and ``pad_d = conv_stride_d = dilation_d = 0`` as in
    MIOpen's shipped rows. Only the key-"in" layout is kept, and no cast types.
    """
    v = _view(p)

    def hwd(values: tuple[int, ...], d2: int) -> tuple[int, int, int]:
        return (values[-2], values[-1], values[0] if v.spatial_dim == 3 else d2)

    ints = (
        v.spatial_dim, v.key_in.channels, *hwd(v.key_in.spatial, 1), *hwd(v.fil, 1),
        v.key_out.channels, v.n, *hwd(v.pad, 0), *hwd(v.stride, 0), *hwd(v.dil, 0), v.bias,
        v.groups,
    )  # fmt: skip
    values: tuple[int | str, ...] = (v.layouts[0], encode_data_types(v.types), v.direction, *ints)
    return dict(zip(PERF_DB_COLUMNS, values, strict=True))


def perf_db_key(p: ConvProblem) -> str:
    """The text perf-db key of ROCm >= 6.2: the ``Visit`` columns joined by ``x`` (§2.3).

    >>> from tuna.problems.driver import parse_driver_line
    >>> perf_db_key(parse_driver_line("conv -n 2 -c 3 -H 224 -W 224 -k 64 -y 7 -x 7 -p 3 -q 3 "
    ...                               "-u 2 -v 2 -F 1")[0])
    '2x3x224x224x1x7x7x1x64x2x3x3x0x2x2x0x1x1x0x0x1xNCHWxFP32xF'
    """
    columns = perf_db_columns(p)
    return "x".join(str(columns[name]) for name in _PERF_KEY_ORDER)


def parse_perf_db_key(key: str) -> ConvProblem:
    """The mode-conv problem behind an x-joined perf-db key.

    The key holds one layout (used for all three tensors) and no out dims. For B and W it so
    holds y but not x, which several x sizes share when a stride is above 1; the smallest such
    x is returned. ``perf_db_key`` of the result is ``key``.
    """

    def fail(what: str) -> DbKeyError:
        return DbKeyError(f"perf-db key {key!r}: {what}")

    f = key.split("x")
    if len(f) != len(_PERF_KEY_ORDER):
        raise fail(f"has {len(f)} x-separated fields; expected {len(_PERF_KEY_ORDER)}")
    col: dict[str, int] = {}
    for i, (name, raw) in enumerate(zip(_PERF_KEY_ORDER[:-3], f[:-3], strict=True)):
        value = _int_or_none(raw)
        if value is None:
            raise fail(
                f"field {i + 1} ({name}) {_shown(raw)!r} is not a canonical integer of at most "
                f"{INT_MAX} (MIOpen keeps it in a C int)"
            )
        col[name] = value
    layout, type_field, direction = f[-3:]
    dims = col["spatial_dim"]
    if dims not in (2, 3):
        raise fail(f"field 1 (spatial_dim) {dims} is not 2 or 3")
    if direction not in DIRECTIONS:
        raise fail(f"field {len(f)} (direction) {direction!r} is not F, B or W")
    try:
        types = decode_data_types(type_field)
    except ValueError as e:
        raise fail(f"field {len(f) - 1} (data type): {e}") from e

    def dhw(stem: str) -> tuple[int, ...]:
        hw = (col[f"{stem}_h"], col[f"{stem}_w"])
        return (col[f"{stem}_d"], *hw) if dims == 3 else hw

    in_sp, fil, pad = dhw("in"), dhw("fil"), dhw("pad")
    stride, dil = dhw("conv_stride"), dhw("dilation")
    geometry = list(zip(in_sp, fil, pad, stride, dil, strict=True))
    if direction == "F":
        out_sp = tuple(conv_out_size(*g) for g in geometry)
    else:  # in_sp is y: take the smallest x that gives it
        out_sp = tuple(_smallest_x(*g) for g in geometry)
    key_in = _Side(col["in_channels"], in_sp, layout, types[0], None)
    key_out = _Side(col["out_channels"], out_sp, layout, types[2], None)
    view = _KeyView(dims, key_in, key_out, (layout, types[1], None), fil, col["batchsize"], pad,
                    stride, dil, col["bias"], DIRECTIONS[direction],
                    col["group_count"])  # fmt: skip
    try:
        p = _problem(view)
    except InvalidProblemError as e:
        raise fail(str(e)) from e
    again = perf_db_key(p)
    if again != key:
        raise fail(f"is not in MIOpen's canonical form (it would be written {again!r})")
    return p


PERF_KEY_CHOICES = 64
"""The most problems :func:`perf_db_key_problems` lists for one key; past it, only the first."""


def perf_db_key_problems(key: str) -> list[ConvProblem]:
    """Every mode-conv problem whose perf-db key is ``key``, the one of
    :func:`parse_perf_db_key` first, then by x dims.

    For B and W the key holds y but not x: with a stride above 1, several x give the same y
    (``stride`` values per dim). Where more than ``PERF_KEY_CHOICES`` would, only the first
    is listed.
    """
    first = parse_perf_db_key(key)
    if first.direction == "F" or max(first.stride) == 1:
        return [first]
    y = first.out_size
    per_dim = [
        [x for x in range(x0, x0 + s) if conv_out_size(x, f, p, s, d) == out]
        for x0, f, p, s, d, out in zip(
            first.in_size, first.fil_size, first.pad, first.stride, first.dilation, y,
            strict=True,
        )
    ]  # fmt: skip
    count = 1
    for xs in per_dim:
        count *= len(xs)
    if count > PERF_KEY_CHOICES:
        return [first]
    found = [first]
    for sizes in itertools.product(*per_dim):
        if sizes != first.in_size and max(sizes) <= INT_MAX:
            found.append(dataclasses.replace(first, in_size=tuple(sizes)))
    return found


def _smallest_x(y: int, fil: int, pad: int, stride: int, dil: int) -> int:
    """The smallest x whose conv y is ``y`` (if any x has it: the caller checks)."""
    return 1 if y == 1 else max(1, (y - 1) * stride + dil * (fil - 1) + 1 - 2 * pad)


def network_config(p: ConvProblem, *, alpha_beta_case: str | None = None) -> str:
    """``MakeNetworkConfig``: the in-memory kernel-cache key (§2.2), in/out as for the dash key.

    MIOpen 3.x appends the alpha/beta case (``Default`` for the driver's alpha 1, beta 0); older
    versions do not. It is left off unless ``alpha_beta_case`` is given, since no file holds
    this key and a problem carries no alpha/beta.
    """
    v = _view(p)
    i, o = v.key_in, v.key_out
    fields = [
        str(i.channels), _dims(i.spatial), _dims(v.fil), str(o.channels), _dims(o.spatial),
        str(v.n), *_layout_fields(v), encode_data_types(v.types),
    ]  # fmt: skip
    casts = "".join(
        f"{tag}{c}" for tag, c in zip(("ci", "cw", "co"), v.casts, strict=True) if c is not None
    )
    if casts:
        fields.append(casts)
    fields += [_dims(v.pad), _dims(v.stride), _dims(v.dil), str(v.groups), v.direction]
    if alpha_beta_case is not None:
        fields.append(alpha_beta_case)
    return "x".join(fields)


# --- text db records (§3.3) -----------------------------------------------------------------------

_ALGORITHM = re.compile(
    r"miopen(Convolution(Fwd|BwdData|BwdWeights)Algo(Direct|GEMM|FFT|Winograd|ImplicitGEMM)"
    r"|TransposeBwdDataAlgoGEMM)"
)


def parse_text_db_line(line: str) -> tuple[str, list[tuple[str, str]]]:
    """Split ``KEY=ID:VALUES;ID:VALUES...`` into the key and its (id, values) entries, in order.

    ``;``, ``:`` and ``=`` may not appear inside a key, id or values; ids are unique in a record.
    """
    text = line.rstrip("\r\n")

    def fail(what: str) -> DbKeyError:
        shown = text if len(text) <= 120 else text[:117] + "..."
        return DbKeyError(f"text db record {shown!r}: {what}")

    key, eq, body = text.partition("=")
    if not eq:
        raise fail("has no '=' between key and entries")
    if not key or ":" in key or ";" in key:
        raise fail(f"key {key!r} is empty or holds ':' or ';'")
    if "=" in body:
        raise fail("holds a second '='")
    entries: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, entry in enumerate(body.split(";"), 1):
        entry_id, colon, values = entry.partition(":")
        if not colon or not entry_id:
            raise fail(f"entry {i} {entry!r} is not ID:VALUES")
        if ":" in values:
            raise fail(f"entry {i} {entry!r} holds a second ':'")
        if entry_id in seen:
            raise fail(f"entry {i}: id {entry_id!r} appears twice")
        seen.add(entry_id)
        entries.append((entry_id, values))
    return key, entries


_FORM_INT = "(?:0|[1-9][0-9]{0,9})"
_FORM_TYPES = "(?:" + "|".join(_TYPES_LONGEST_FIRST) + ")"
_FORM = re.compile(
    f"{_FORM_INT}(?:[-x]{_FORM_INT})*"
    f"(?:-(?:{'|'.join((*LAYOUTS_2D, *LAYOUTS_3D))}))+-{_FORM_TYPES}+-[FBW]"
    f"(?:_g[1-9][0-9]{{0,9}})?(?:_ci{_FORM_TYPES})?(?:_cw{_FORM_TYPES})?(?:_co{_FORM_TYPES})?"
)


def is_key_form(key: str) -> bool:
    """Whether ``key`` is made as MIOpen's ``Serialize`` makes a find-db key, whatever its
    values say: canonical integers that fit a C int (joined by ``-`` and ``x``), then
    layouts, data types, a direction and its suffixes. A key of this form that is no
    problem (MIOpen's legacy keys with 2D pads on 3D filters) is still one MIOpen wrote
    and matches; anything else is not a MIOpen key at all."""
    return _FORM.fullmatch(key) is not None and all(
        int(n) <= INT_MAX for n in re.findall("[0-9]+", key)
    )


ALGORITHMS: tuple[str, ...] = tuple(
    f"miopenConvolution{d}Algo{a}"
    for d in ("Fwd", "BwdData", "BwdWeights")
    for a in ("Direct", "GEMM", "FFT", "Winograd", "ImplicitGEMM")
) + ("miopenTransposeBwdDataAlgoGEMM",)
"""MIOpen's algorithm names (``src/conv_algo_name.cpp``), the last field of a find-db entry."""


def is_algorithm_name(name: str) -> bool:
    """Whether ``name`` is one of MIOpen's :data:`ALGORITHMS`."""
    return _ALGORITHM.fullmatch(name) is not None


def is_legacy_find_entry(entry_id: str) -> bool:
    """Whether a find-db entry is in the v1.0 format, whose id is an algorithm name (§4.3)."""
    return is_algorithm_name(entry_id)


def legacy_find_entry_as_v2(entry_id: str, values: str) -> tuple[str, str]:
    """A v1.0 entry ``algo:solver,time,ws,kcache_algo,kcache_config`` as the v2.0 entry
    ``(solver, "time,ws,algo")``, dropping the two kernel-cache fields as MIOpen does."""
    if not is_legacy_find_entry(entry_id):
        raise DbKeyError(f"find-db entry {entry_id!r}: the id is not an algorithm name")
    parts = values.split(",")
    if len(parts) != 5 or not parts[0]:
        raise DbKeyError(
            f"find-db entry {entry_id}:{values}: expected solver,time,workspace,algo,config"
        )
    solver, time_ms, workspace = parts[:3]
    return solver, f"{time_ms},{workspace},{entry_id}"
