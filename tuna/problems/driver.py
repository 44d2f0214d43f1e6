# Over 600 lines: one grammar: the driver's flag table beside the rules resolving it.
"""The MIOpenDriver command-line grammar (``driver/InputFlags.cpp``, ``driver/conv_driver.hpp``).

Every flag takes one value (``-n 32`` or ``--batchsize 32``); a repeated flag keeps its last
value; layout values are uppercased only when the long form is used. Integers are checked more
strictly than the driver's ``atoi``: ``-n 3x`` is an error here, not 3.

``-z/--pad_mode same|valid`` is resolved into explicit pads exactly as ``ConvDriver`` does it:
only in mode conv, and only when every dilation is 1 or every filter dim is 1 (otherwise the
pads given stand). ``valid`` gives zero pads; ``same`` gives, per dim,
``max(fil - (in % stride or stride), 0) // 2``, which equals
``max(0, ((ceil(in/stride) - 1) * stride + dil * (fil - 1) + 1 - in)) // 2`` under that
condition. The driver then builds a default-padding descriptor, so y follows from these pads
with the usual formula, as here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

from tuna.errors import DriverLineError
from tuna.problems.conv import (
    COMMAND_TYPES,
    INT_MAX,
    LAYOUTS_2D,
    LAYOUTS_3D,
    MODES,
    ConvProblem,
    Direction,
    InvalidProblemError,
    default_layout,
    same_pad,
)

CONV_BASE_ARGS: tuple[str, ...] = tuple(COMMAND_TYPES)
BNORM_BASE_ARGS: tuple[str, ...] = ("bnorm", "bnormfp16", "bnormfp16fp32", "bnormbfp16fp32")
_REJECTED_BASE_ARGS: dict[str, str] = {
    "convfp8": "MIOpenDriver does not accept 'convfp8'; use conv with --in_cast_type fp8",
    "convbfp8": "MIOpenDriver does not accept 'convbfp8'; use conv with --in_cast_type bf8",
    "bnormbfp16": "MIOpen logs 'bnormbfp16' but MIOpenDriver does not accept it",
}
_OTHER_BASE_ARG = re.compile(
    r"(pool|lrn|activ|softmax|gemm|rnn|rnn_seq|ctc|dropout|tensorop|reduce|layernorm|groupnorm"
    r"|cat|sum|argmax)(fp16|bfp16|fp64|int8)?"
)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT_DIGITS = len(str(INT_MAX))
#: Flags that say how to run the driver, not what the problem is: one written last with no
#: value (``... -F 1 -t`` in MITuna's own lists) is dropped with a warning.
RUN_FLAGS = frozenset(
    (
        "iter", "verify", "verification_cache", "time", "wall", "search", "printconv",
        "dump_output", "in_data", "weights", "bias", "dout_data", "solution", "gpualloc",
        "in_bias",
    )
)  # fmt: skip
#: Flags that describe a problem's shape: a conv line needs at least one.
SHAPE_FLAGS = frozenset(
    ["batchsize", "in_channels", "in_d", "in_h", "in_w", "out_channels", "fil_d", "fil_h", "fil_w"]
)
# int() of the decimals that fill driver lines: a lookup takes a fifth of the time of checking
# a value and converting it, and there are a dozen per line
_DECIMALS = {str(i): i for i in range(4096)}
_BINARY = "MIOpenDriver"
_BINARY_IN_DIR = "/" + _BINARY


@dataclass(frozen=True)
class FlagSpec:
    """One driver flag: its long name, its one-character short name, whether it is uppercased."""

    long: str
    short: str
    upper: bool = False

    @property
    def label(self) -> str:
        return f"-{self.short} (--{self.long})"


class FlagValues:
    """The flags found on one line, by long name, with typed accessors that raise
    ``DriverLineError`` naming the flag and the value."""

    __slots__ = ("raw", "_tokens", "_table", "warnings")

    def __init__(
        self,
        raw: dict[str, str],
        tokens: Sequence[str],
        table: FlagTable,
        warnings: list[str] | None = None,
    ) -> None:
        self.raw = raw  # long name -> value (uppercased where the flag says so)
        self._tokens = tokens  # as read, to name the flag as written in an error
        self._table = table
        self.warnings = warnings or []

    def error(self, name: str, what: str) -> DriverLineError:
        value = self.raw[name]
        written = next(  # the last one given wins, so it is the one to blame
            t for t in reversed(self._tokens[::2]) if self._table.tokens[t][0] == name
        )
        label = self._table.by_long[name].label
        return DriverLineError(f"flag {label}: {value!r} {what}", flag=written)

    def text(self, name: str, default: str) -> str:
        return self.raw.get(name, default)

    def integer(self, name: str, default: int) -> int:
        raw = self.raw.get(name)
        if raw is None:
            return default
        if (raw.isdigit() and raw.isascii()) or _INTEGER.fullmatch(raw):  # isdigit: fast, no sign
            digits = raw.lstrip("+-").lstrip("0")
            if len(digits) > _INT_DIGITS or int(digits or "0") > INT_MAX + raw.startswith("-"):
                low = "below" if raw.startswith("-") else "above"
                bound = -INT_MAX - 1 if raw.startswith("-") else INT_MAX
                shown = raw if len(raw) <= 24 else f"{raw[:12]}...({len(raw)} characters)"
                raise DriverLineError(
                    f"flag {self._table.by_long[name].label}: {shown!r} is {low} {bound}, "
                    "the bound of the C int MIOpenDriver reads it into",
                    flag=self._written(name),
                )
            return int(raw)
        raise self.error(name, "is not an integer")

    def _written(self, name: str) -> str:
        return next(t for t in reversed(self._tokens[::2]) if self._table.tokens[t][0] == name)

    def integers(self, defaults: Mapping[str, int]) -> Mapping[str, int]:
        """Each flag of ``defaults`` as ``integer`` gives it, by long name.

        When every value given is plain digits (the usual line), all are converted here at
        once. Otherwise each is converted when looked up, so a parser that looks them up in
        its own order reports the same bad flag first as one calling ``integer``.
        """
        values = dict(defaults)
        raw = self.raw
        for name in raw.keys() & defaults.keys():
            text = raw[name]
            value = _DECIMALS.get(text)
            if value is None:
                if not (text.isdigit() and text.isascii()) or len(text) > _INT_DIGITS:
                    return _IntegersOnLookup(self, defaults)
                value = int(text)
                if value > INT_MAX:
                    return _IntegersOnLookup(self, defaults)
            values[name] = value
        return values

    def choice(self, name: str, default: str, allowed: Sequence[str]) -> str:
        value = self.raw.get(name, default)
        if value not in allowed:
            raise self.error(name, f"is not one of {', '.join(allowed)}")
        return value


class _IntegersOnLookup(Mapping[str, int]):
    """``FlagValues.integers`` where some value needs a closer look."""

    def __init__(self, flags: FlagValues, defaults: Mapping[str, int]) -> None:
        self._flags = flags
        self._defaults = defaults

    def __getitem__(self, name: str) -> int:
        return self._flags.integer(name, self._defaults[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._defaults)

    def __len__(self) -> int:
        return len(self._defaults)


class FlagTable:
    """The flags of one base arg, looked up by the token written (``-n``, ``--batchsize`` or an
    alias), built once per flag set so that reading a line is one dict lookup per flag."""

    def __init__(self, specs: Sequence[FlagSpec], aliases: Mapping[str, str] | None = None) -> None:
        self.by_long = {s.long: s for s in specs}
        aliases = aliases or {}
        # token -> (long name, whether its value is uppercased: long forms of layouts only)
        self.tokens: dict[str, tuple[str, bool]] = {
            f"-{s.short}": (s.long, False) for s in specs if len(s.short) == 1
        }
        for s in specs:
            self.tokens[f"--{s.long}"] = (s.long, s.upper)
        for alias, long in aliases.items():
            if long in self.by_long:
                self.tokens[f"--{alias}"] = (long, self.by_long[long].upper)
            else:
                self.tokens.pop(f"--{alias}", None)  # an alias to nothing hides the flag
        self._verbatim = {t: long for t, (long, upper) in self.tokens.items() if not upper}

    def read(self, tokens: Sequence[str]) -> FlagValues:
        """Read ``-X VALUE`` / ``--long VALUE`` pairs; the last of a repeated flag wins."""
        if len(tokens) % 2 == 0:
            pairs, verbatim = iter(tokens), self._verbatim
            try:
                raw = {verbatim[t]: value for t, value in zip(pairs, pairs, strict=True)}
            except KeyError:
                pass  # an unknown flag, or a value to uppercase: go one by one
            else:
                return FlagValues(raw, tokens, self)
        return self._read_each(tokens)

    def _read_each(self, tokens: Sequence[str]) -> FlagValues:
        raw: dict[str, str] = {}
        warnings: list[str] = []
        for i in range(0, len(tokens), 2):
            token = tokens[i]
            found = self.tokens.get(token)
            if found is None:
                raise self._unknown(token)
            long, upper = found
            if i + 1 == len(tokens):
                label = self.by_long[long].label
                if long in RUN_FLAGS:
                    warnings.append(
                        f"flag {label} at the end of the line has no value; it says how to "
                        "run the driver, not what the problem is, so it was ignored"
                    )
                    tokens = tokens[:i]
                    break
                raise DriverLineError(f"flag {label} has no value", flag=token)
            raw[long] = tokens[i + 1].upper() if upper else tokens[i + 1]
        return FlagValues(raw, tokens, self, warnings)

    def _unknown(self, token: str) -> DriverLineError:
        if token.startswith("--") and "=" in token:
            return DriverLineError(
                f"flag {token!r}: the --name=value form is not supported; write --name value",
                flag=token,
            )
        if not token.startswith("-"):
            return DriverLineError(f"unexpected argument {token!r} (not a flag)", flag=token)
        return DriverLineError(f"unknown flag {token!r}", flag=token)


def split_command(line: str) -> tuple[str, list[str]]:
    """Find the base arg and the flag tokens after it, skipping any logging preamble.

    The base arg follows the first token whose basename is ``MIOpenDriver``; without one, it is
    the first token that is a known base arg.
    """
    head = line.split(maxsplit=2)
    if len(head) == 3 and _is_binary(head[0]):  # the usual "./bin/MIOpenDriver conv -n ..."
        return head[1], head[2].split()
    tokens = line.split()
    for i, token in enumerate(tokens):
        if _is_binary(token):
            if i + 1 == len(tokens):
                raise DriverLineError(f"{token} has no base arg (conv, convfp16, bnorm, ...)")
            return tokens[i + 1], tokens[i + 2 :]
    # Without the binary, a base arg after a flag is that flag's value (a truncated line's
    # "-m conv"), not the operation.
    for i, token in enumerate(tokens):
        if _is_known_base_arg(token) and (i == 0 or not tokens[i - 1].startswith("-")):
            return token, tokens[i + 1 :]
    raise DriverLineError(
        "no MIOpenDriver command in line (expected e.g. 'MIOpenDriver conv ...' or "
        "'conv -n ...'; is the line cut short?)"
    )


def _is_binary(token: str) -> bool:
    """Whether the basename of ``token`` is ``MIOpenDriver``."""
    return token == _BINARY or token.endswith(_BINARY_IN_DIR)


def _is_known_base_arg(token: str) -> bool:
    return (
        token in CONV_BASE_ARGS
        or token in BNORM_BASE_ARGS
        or token in _REJECTED_BASE_ARGS
        or _OTHER_BASE_ARG.fullmatch(token) is not None
    )


def base_arg(line: str) -> str:
    """The base arg of a driver line (``conv``, ``bnormfp16``, ...); ``DriverLineError`` if none."""
    head = line.split(maxsplit=2)  # the usual "./bin/MIOpenDriver conv ...": no full split
    if len(head) >= 2 and _is_binary(head[0]):
        return head[1]
    return split_command(line)[0]


def line_kind(line: str) -> str:
    """``"conv"``, ``"bnorm"`` or the name of another MIOpenDriver operation (``"pool"``, ...).

    Raises ``DriverLineError`` for a line with no MIOpenDriver command, an unknown base arg
    or one the driver itself rejects.
    """
    base = base_arg(line)
    if base in CONV_BASE_ARGS:
        return "conv"
    if base in BNORM_BASE_ARGS:
        return "bnorm"
    other = _OTHER_BASE_ARG.fullmatch(base)
    if other is None:
        raise not_accepted(base, "conv")
    return other.group(1)


def is_conv_line(line: str) -> bool:
    """Whether ``line`` is a MIOpenDriver conv line (so ``parse_driver_line`` applies)."""
    try:
        return base_arg(line) in CONV_BASE_ARGS
    except DriverLineError:
        return False


def not_accepted(base: str, wanted: str) -> DriverLineError:
    """The error for a base arg that ``wanted`` ("conv" or "bnorm") cannot parse."""
    if base in _REJECTED_BASE_ARGS:
        return DriverLineError(_REJECTED_BASE_ARGS[base])
    if wanted == "conv" and base in BNORM_BASE_ARGS:
        return DriverLineError(
            f"{base!r} is a batch-norm line, not a convolution; parse it with parse_bnorm_line"
        )
    if wanted == "bnorm" and base in CONV_BASE_ARGS:
        return DriverLineError(
            f"{base!r} is a convolution line, not batch norm; parse it with parse_driver_line"
        )
    if _is_known_base_arg(base):
        return DriverLineError(
            f"{base!r} is not a convolution or batch-norm line; Tuna imports only those"
        )
    return DriverLineError(f"unknown base arg {base!r}")


def parse_flags(
    tokens: Sequence[str], specs: Sequence[FlagSpec], aliases: Mapping[str, str] | None = None
) -> FlagValues:
    """Read ``-X VALUE`` / ``--long VALUE`` pairs; the last of a repeated flag wins.

    Builds the lookup table each call: a parser called per line keeps a ``FlagTable``.
    """
    return FlagTable(specs, aliases).read(tokens)


def _specs(text: str) -> tuple[FlagSpec, ...]:
    out = []
    for item in text.split():
        long, short = item.rsplit(":", 1)
        out.append(FlagSpec(long, short, upper=long.endswith("_layout")))
    return tuple(out)


CONV_FLAGS: tuple[FlagSpec, ...] = _specs(
    "in_layout:I out_layout:O fil_layout:f spatial_dim:_ forw:F batchsize:n in_channels:c "
    "in_d:! in_h:H in_w:W out_channels:k fil_d:@ fil_h:y fil_w:x conv_stride_d:# "
    "conv_stride_h:u conv_stride_w:v pad_d:$ pad_h:p pad_w:q pad_val:r trans_output_pad_d:% "
    "trans_output_pad_h:Y trans_output_pad_w:X iter:i verify:V verification_cache:C time:t "
    "wall:w search:s printconv:P dump_output:o in_data:d weights:e bias:b mode:m pad_mode:z "
    "tensor_vect:Z vector_length:L dilation_d:^ dilation_h:l dilation_w:j in_bias:a "
    "group_count:g dout_data:D solution:S gpualloc:G in_cast_type:U out_cast_type:T "
    "wei_cast_type:R"
)
_CONV_ALIASES = {"conv_stride_0": "conv_stride_h", "conv_stride_1": "conv_stride_w"}
_CASTS = {"fp32": "FP32", "fp16": "FP16", "bf16": "BF16", "fp8": "FP8", "bf8": "BF8"}
# flag stems and driver defaults of in_size, fil_size, pad, stride, dilation, trans_output_pad
_GEOMETRY = (
    ("in", 32),
    ("fil", 3),
    ("pad", 0),
    ("conv_stride", 1),
    ("dilation", 1),
    ("trans_output_pad", 0),
)
_GEOMETRY_DEFAULTS = {f"{stem}_{a}": default for stem, default in _GEOMETRY for a in "dhw"}
_GEOMETRY_FLAGS = itemgetter(*_GEOMETRY_DEFAULTS)
_CONV_INTEGERS = {
    "spatial_dim": 2,
    "tensor_vect": 0,
    "forw": 0,
    **_GEOMETRY_DEFAULTS,
    "in_channels": 3,
    "out_channels": 32,
    "group_count": 1,
    "batchsize": 100,
}
_CONV_TABLE = FlagTable(CONV_FLAGS, _CONV_ALIASES)
_MODE_NAMES = tuple(MODES)
_LAYOUT_FLAGS = ("in_layout", "fil_layout", "out_layout")
_CAST_FLAGS = ("in_cast_type", "wei_cast_type", "out_cast_type")
_FORW: dict[int, tuple[Direction, ...]] = {
    0: ("F", "B", "W"),
    1: ("F",),
    2: ("B",),
    3: ("F", "B"),
    4: ("W",),
    5: ("F", "W"),
    6: ("B", "W"),
    7: ("F", "B", "W"),
}


def parse_driver_line(line: str, warnings: list[str] | None = None) -> list[ConvProblem]:
    """Parse a MIOpenDriver conv line into one ``ConvProblem`` per direction, in order F, B, W.

    A line must give at least one shape flag (``-n``, ``-c``, ``-H``, ...): one of defaults
    only is a cut-short line more often than a problem. What is dropped from a line that
    still parses (a value-less run flag at its end) is said in ``warnings``, if given.

    >>> [p.direction for p in parse_driver_line("MIOpenDriver conv -n 8 -F 6")]
    ['B', 'W']
    """
    base, tokens = split_command(line)
    if base not in CONV_BASE_ARGS:
        raise not_accepted(base, "conv")
    flags = _CONV_TABLE.read(tokens)
    ints = flags.integers(_CONV_INTEGERS)

    dims = ints["spatial_dim"]
    if dims not in (2, 3):
        raise flags.error("spatial_dim", "is not a spatial dimension (2 or 3)")
    if ints["tensor_vect"] != 0:
        raise flags.error("tensor_vect", "asks for vectorised tensors, which are not supported")
    forw = ints["forw"]
    if forw not in _FORW:
        raise flags.error("forw", "is not a direction (0 = all, 1 = F, 2 = B, 4 = W, or a sum)")
    mode = MODES[flags.choice("mode", "conv", _MODE_NAMES)]
    pad_mode = flags.choice("pad_mode", "default", ("default", "same", "valid"))

    # all integers, even where the driver ignores them (2D depth)
    geometry = _GEOMETRY_FLAGS(ints)  # in_d, in_h, in_w, fil_d, fil_h, ...
    d, h, w = geometry[0::3], geometry[1::3], geometry[2::3]
    axes = (d, h, w) if dims == 3 else (h, w)
    spatial: Iterator[tuple[int, ...]] = zip(*axes, strict=True)
    in_size, fil, pad, stride, dil, opad = spatial
    if pad_mode != "default" and mode == "conv":
        pad = _resolve_pad_mode(pad_mode, in_size, fil, stride, dil, pad)

    if flags.raw.keys().isdisjoint(_LAYOUT_FLAGS):
        layouts = [default_layout(dims)] * 3
    else:
        layouts = [_layout(flags, name, dims) for name in _LAYOUT_FLAGS]
    if flags.raw.keys().isdisjoint(_CAST_FLAGS):
        casts: list[str | None] = [None] * 3
    else:
        casts = [_cast(flags, name) for name in _CAST_FLAGS]

    in_channels = ints["in_channels"]
    out_channels = ints["out_channels"]
    groups = ints["group_count"]
    if groups < 1 or in_channels % groups or out_channels % groups:
        raise flags.error(
            "group_count",
            f"does not divide in_channels {in_channels} and out_channels {out_channels}",
        )
    batchsize = ints["batchsize"]
    if flags.raw.keys().isdisjoint(SHAPE_FLAGS):
        raise DriverLineError(
            f"{base} line gives no shape flag (-n, -c, -H, -W, -k, -y, -x, ...): MIOpenDriver "
            "would run its defaults; is the line cut short?"
        )
    if warnings is not None:
        warnings.extend(flags.warnings)
    x_type, w_type, y_type = COMMAND_TYPES[base]
    directions = _FORW[forw]
    try:
        problem = ConvProblem._from_fields(
            {
                "spatial_dim": dims,
                "batchsize": batchsize,
                "in_channels": in_channels,
                "out_channels": out_channels,
                "in_size": in_size,
                "fil_size": fil,
                "pad": pad,
                "stride": stride,
                "dilation": dil,
                "trans_output_pad": opad if mode == "trans" else (0,) * dims,
                "group_count": groups,
                "mode": mode,
                "pad_mode": "default",
                "direction": directions[0],
                "in_layout": layouts[0],
                "fil_layout": layouts[1],
                "out_layout": layouts[2],
                "in_type": x_type,
                "wei_type": w_type,
                "out_type": y_type,
                "in_cast": casts[0],
                "wei_cast": casts[1],
                "out_cast": casts[2],
                "bias": 0,
            }
        )
    except InvalidProblemError as e:
        raise DriverLineError(f"impossible convolution: {e}") from e
    return [problem, *(problem.with_direction(d) for d in directions[1:])]


def _layout(flags: FlagValues, name: str, dims: int) -> str:
    layout = flags.raw.get(name) or default_layout(dims)
    allowed = LAYOUTS_3D if dims == 3 else LAYOUTS_2D
    if layout in allowed:
        return layout
    if layout not in LAYOUTS_2D + LAYOUTS_3D:
        hint = "; short flags are not uppercased" if layout.upper() != layout else ""
        raise flags.error(name, f"is not a layout ({', '.join(LAYOUTS_2D + LAYOUTS_3D)}){hint}")
    raise flags.error(name, f"is not a {dims}D layout ({', '.join(allowed)})")


def _cast(flags: FlagValues, name: str) -> str | None:
    raw = flags.raw.get(name, "-1")
    if raw != "-1" and raw not in _CASTS:
        raise flags.error(name, f"is not a cast type ({', '.join(_CASTS)} or -1)")
    return _CASTS.get(raw)


def _resolve_pad_mode(
    pad_mode: str,
    in_size: tuple[int, ...],
    fil: tuple[int, ...],
    stride: tuple[int, ...],
    dil: tuple[int, ...],
    pad: tuple[int, ...],
) -> tuple[int, ...]:
    if not (all(d == 1 for d in dil) or all(f == 1 for f in fil)):
        return pad  # ConvDriver leaves the pads alone here
    if pad_mode == "valid":
        return tuple(0 for _ in pad)
    if min(stride) < 1:
        return pad  # the problem is rejected for its stride right after
    return tuple(map(same_pad, in_size, fil, stride))


def to_driver_line(p: ConvProblem) -> str:
    """A canonical MIOpenDriver line for ``p`` in the style MIOpen logs it (§1.2).

    2D: ``./bin/MIOpenDriver conv -n N -c C -H H -W W -k K -y Y -x X -p P -q Q -u U -v V -l L
    -j J [-Y .. -X ..] [--in_layout ..] ... [--in_cast_type ..] ... -m conv -g G -F 1|2|4``;
    3D adds ``--in_d``, ``--fil_d``, ``--pad_d``, ``--conv_stride_d``, ``--dilation_d`` before
    their H/W flags and ``--spatial_dim 3``. Layouts are written only when not the default,
    cast types only when set, transposed output pads only when nonzero. Parsing the line gives
    ``p`` back; ``InvalidProblemError`` if ``p`` has no driver form (types that no base arg
    gives, or a bias).
    """
    return _plain_driver_line(p) or _full_driver_line(p)


_UNIFORM_COMMANDS = {"FP32": "conv", "FP16": "convfp16", "BF16": "convbfp16"}
_FORW_OF = {"F": "1", "B": "2", "W": "4"}


def _plain_driver_line(p: ConvProblem) -> str | None:
    """``to_driver_line`` of the common problem (one type a base arg gives, default layouts
    and pad mode, no casts, bias or transposed output pads) in one format; None for any
    other, which ``_full_driver_line`` writes. An import writes a line per new config."""
    cmd = _UNIFORM_COMMANDS.get(p.in_type)
    if (
        cmd is None
        or p.wei_type != p.in_type
        or p.out_type != p.in_type
        or p.in_cast is not None
        or p.wei_cast is not None
        or p.out_cast is not None
        or p.bias
        or p.pad_mode != "default"
        or any(p.trans_output_pad)
    ):
        return None
    tail = f"-m {p.mode} -g {p.group_count} -F {_FORW_OF[p.direction]}"
    i, f, pad, u, dil = p.in_size, p.fil_size, p.pad, p.stride, p.dilation
    if p.spatial_dim == 2 and p.in_layout == p.fil_layout == p.out_layout == "NCHW":
        return (
            f"./bin/{_BINARY} {cmd} -n {p.batchsize} -c {p.in_channels} -H {i[0]} -W {i[1]} "
            f"-k {p.out_channels} -y {f[0]} -x {f[1]} -p {pad[0]} -q {pad[1]} -u {u[0]} "
            f"-v {u[1]} -l {dil[0]} -j {dil[1]} {tail}"
        )
    if p.spatial_dim == 3 and p.in_layout == p.fil_layout == p.out_layout == "NCDHW":
        return (
            f"./bin/{_BINARY} {cmd} -n {p.batchsize} -c {p.in_channels} --in_d {i[0]} "
            f"-H {i[1]} -W {i[2]} -k {p.out_channels} --fil_d {f[0]} -y {f[1]} -x {f[2]} "
            f"--pad_d {pad[0]} -p {pad[1]} -q {pad[2]} --conv_stride_d {u[0]} -u {u[1]} "
            f"-v {u[2]} --dilation_d {dil[0]} -l {dil[1]} -j {dil[2]} --spatial_dim 3 {tail}"
        )
    return None


def _full_driver_line(p: ConvProblem) -> str:
    cmd = p.cmd
    if COMMAND_TYPES[cmd] != p.types:  # what p.with_command(cmd).types is, without a copy
        raise InvalidProblemError(
            f"types {'/'.join(p.types)} have no MIOpenDriver base arg "
            f"(conv, convfp16, convbfp16 or convint8 give {'/'.join(COMMAND_TYPES[cmd])})"
        )
    if p.bias:
        raise InvalidProblemError(f"bias {p.bias} cannot be written on a MIOpenDriver line")
    if p.pad_mode != "default":
        raise InvalidProblemError(
            f"pad mode {p.pad_mode!r} (y = ceil(x / stride), as MIOpen's API describes it) "
            "cannot be written on a MIOpenDriver line: the driver turns -z same into pads"
        )
    three = p.spatial_dim == 3
    parts = [f"./bin/{_BINARY}", cmd, "-n", str(p.batchsize), "-c", str(p.in_channels)]

    def dhw(size: tuple[int, ...], d_flag: str, h_flag: str, w_flag: str) -> list[str]:
        head = [d_flag, str(size[0])] if three else []
        return [*head, h_flag, str(size[-2]), w_flag, str(size[-1])]

    parts += dhw(p.in_size, "--in_d", "-H", "-W")
    parts += ["-k", str(p.out_channels)]
    parts += dhw(p.fil_size, "--fil_d", "-y", "-x")
    parts += dhw(p.pad, "--pad_d", "-p", "-q")
    parts += dhw(p.stride, "--conv_stride_d", "-u", "-v")
    parts += dhw(p.dilation, "--dilation_d", "-l", "-j")
    if any(p.trans_output_pad):
        parts += dhw(p.trans_output_pad, "--trans_output_pad_d", "-Y", "-X")
    if three:
        parts += ["--spatial_dim", "3"]
    default = default_layout(p.spatial_dim)
    for flag, layout in zip(
        ("--in_layout", "--fil_layout", "--out_layout"), p.layouts, strict=True
    ):
        if layout != default:
            parts += [flag, layout]
    lower = {v: k for k, v in _CASTS.items()}
    for flag, cast in zip(
        ("--in_cast_type", "--wei_cast_type", "--out_cast_type"), p.casts, strict=True
    ):
        if cast is not None:
            if cast not in lower:
                raise InvalidProblemError(f"cast type {cast} cannot be given to MIOpenDriver")
            parts += [flag, lower[cast]]
    parts += [
        "-m",
        p.mode,
        "-g",
        str(p.group_count),
        "-F",
        {"F": "1", "B": "2", "W": "4"}[p.direction],
    ]
    return " ".join(parts)
