"""The convolution problem as the user wrote it on the MIOpenDriver command line.

A ``ConvProblem`` holds driver semantics: ``in_*`` is always x (the forward input), ``out_*``
always y, ``fil_*`` always w, whatever the direction. The db keys in ``keys.py`` swap tensors
the way MIOpen does; nothing here does.

Every ``ConvProblem`` is valid: ``__post_init__`` normalises the defaults and rejects a problem
MIOpen could not run with an ``InvalidProblemError``. Parsers translate that error into their
own (``DriverLineError``, ``DbKeyError``) with ``raise ... from``.
"""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass
from typing import Any, Literal

from tuna.errors import TunaError

#: Data type names as ``GetDataTypeName`` writes them (``problem_description_base.hpp``).
DATA_TYPES: tuple[str, ...] = (
    "FP32",
    "FP16",
    "BF16",
    "INT8",
    "INT32",
    "FP64",
    "FP8",
    "BF8",
    "INT64",
)

#: Layouts a tensor may have, by spatial dimension.
LAYOUTS_2D: tuple[str, ...] = ("NCHW", "NHWC", "CHWN")
LAYOUTS_3D: tuple[str, ...] = ("NCDHW", "NDHWC")

#: Conv base args and the (x, w, y) types each one gives.
COMMAND_TYPES: dict[str, tuple[str, str, str]] = {
    "conv": ("FP32", "FP32", "FP32"),
    "convfp16": ("FP16", "FP16", "FP16"),
    "convbfp16": ("BF16", "BF16", "BF16"),
    "convint8": ("INT8", "INT8", "INT32"),
}

Direction = Literal["F", "B", "W"]
Mode = Literal["conv", "trans"]
PadMode = Literal["default", "same"]
DIRECTIONS: dict[str, Direction] = {"F": "F", "B": "B", "W": "W"}
MODES: dict[str, Mode] = {"conv": "conv", "trans": "trans"}
PAD_MODES: dict[str, PadMode] = {"default": "default", "same": "same"}

#: MIOpenDriver reads every value into a C ``int``; so does MIOpen's problem description.
INT_MAX = 2**31 - 1

_SPATIAL_FILLS: tuple[tuple[str, int | None], ...] = (
    ("in_size", None),
    ("fil_size", None),
    ("pad", 0),
    ("stride", 1),
    ("dilation", 1),
    ("trans_output_pad", 0),
)
_INT_TYPE = {int}
_SMALL = 2**14  # spatial values up to this give y dims that fit a C int, even in mode trans
PLAIN_SPATIAL_MAX = _SMALL
"""Spatial values (sizes, filters, pads, strides, dilations) up to this are checked fast."""
_CASTS: tuple[str | None, ...] = (None, *DATA_TYPES)


class InvalidProblemError(TunaError):
    """Raised when the fields of a problem (``ConvProblem``, ``BnProblem``) describe one MIOpen
    cannot run, or a problem has no form in the format asked for."""


def default_layout(spatial_dim: int) -> str:
    """The layout MIOpenDriver uses when none is given: NCHW in 2D, NCDHW in 3D."""
    return "NCDHW" if spatial_dim == 3 else "NCHW"


def conv_out_size(size: int, fil: int, pad: int, stride: int, dil: int) -> int:
    """One spatial dim of y for mode conv (``src/convolution.cpp``)."""
    return max(1, (size + 2 * pad - (1 + dil * (fil - 1))) // stride + 1)


def same_out_size(size: int, stride: int) -> int:
    """One spatial dim of y for MIOpen's ``miopenPaddingSame`` (``src/convolution.cpp``):
    ``ceil(in / stride)``, whatever the filter."""
    return -(-size // stride)


def same_pad(size: int, fil: int, stride: int) -> int:
    """One pad of MIOpen's "same" padding, as ``ConvDriver`` and MIOpen's descriptor compute
    it: ``max(fil - (in % stride or stride), 0) // 2`` (the rest of the padding goes after
    the data, so y is ``ceil(in / stride)``, not what the conv formula gives from this pad)."""
    return max(fil - (size % stride or stride), 0) // 2


def trans_out_size(size: int, fil: int, pad: int, stride: int, dil: int, out_pad: int) -> int:
    """One spatial dim of y for mode trans (``src/convolution.cpp``)."""
    return max(1, stride * (size - 1) + 1 + dil * (fil - 1) - 2 * pad + out_pad)


@dataclass(frozen=True, kw_only=True)
class ConvProblem:
    """One convolution in one direction, as MIOpenDriver describes it.

    Spatial tuples are (H, W) in 2D and (D, H, W) in 3D. Left empty, ``pad`` and
    ``trans_output_pad`` become zeros, ``stride`` and ``dilation`` ones, and an empty layout the
    default for the spatial dimension.

    ``pad_mode`` ``"same"`` is a problem as MIOpen's API describes it with
    ``miopenPaddingSame`` (y is ``ceil(x / stride)``; MIOpen writes such keys with pads 0, or
    with the pads it computed for the problem, :func:`same_pad`).
    MIOpenDriver resolves ``-z same`` into explicit pads instead, so such a problem has no
    driver line; it comes from a db key.

    >>> p = ConvProblem(spatial_dim=2, batchsize=128, in_channels=3, out_channels=64,
    ...                 in_size=(224, 224), fil_size=(7, 7), pad=(3, 3), stride=(2, 2))
    >>> p.out_size, p.cmd
    ((112, 112), 'conv')
    """

    spatial_dim: int
    batchsize: int
    in_channels: int
    out_channels: int
    in_size: tuple[int, ...]
    fil_size: tuple[int, ...]
    pad: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    dilation: tuple[int, ...] = ()
    trans_output_pad: tuple[int, ...] = ()
    group_count: int = 1
    mode: Mode = "conv"
    pad_mode: PadMode = "default"
    direction: Direction = "F"
    in_layout: str = ""
    fil_layout: str = ""
    out_layout: str = ""
    in_type: str = "FP32"
    wei_type: str = "FP32"
    out_type: str = "FP32"
    in_cast: str | None = None
    wei_cast: str | None = None
    out_cast: str | None = None
    bias: int = 0

    @classmethod
    def _from_fields(cls, fields: dict[str, Any]) -> ConvProblem:
        """``cls(**fields)`` for ``fields`` naming every field, normalised and validated alike,
        in under half the time: the generated ``__init__`` of a frozen dataclass makes an
        ``object.__setattr__`` call per field, and the parser makes a problem per line."""
        p = object.__new__(cls)
        p.__dict__.update(fields)
        p.__post_init__()
        return p

    @classmethod
    def _checked(cls, fields: dict[str, Any]) -> ConvProblem:
        """``cls(**fields)`` for ``fields`` naming every field, of a parser that has already
        held them to what ``_plainly_valid`` checks (``keys._plain``): not checked again. The
        key parser's tests hold it to ``_from_fields``."""
        p = object.__new__(cls)
        p.__dict__.update(fields)
        return p

    def __post_init__(self) -> None:
        if self._plainly_valid():
            return  # nothing to fill in and nothing wrong: what the parsers build
        if self.spatial_dim not in (2, 3):
            raise InvalidProblemError(f"spatial_dim {self.spatial_dim} is not 2 or 3")
        dims = self.spatial_dim
        for name, fill in _SPATIAL_FILLS:
            value = tuple(getattr(self, name))
            if not value and fill is not None:
                value = (fill,) * dims
            object.__setattr__(self, name, value)
        for name in ("in_layout", "fil_layout", "out_layout"):
            if not getattr(self, name):
                object.__setattr__(self, name, default_layout(dims))
        reason = self._invalid_reason()
        if reason is not None:
            raise InvalidProblemError(reason)

    def _plainly_valid(self) -> bool:
        """Whether the problem is valid and needs no defaults filled in, checked fast.

        ``True`` implies that ``__post_init__`` would change nothing and ``_invalid_reason()``
        is ``None``; ``False`` sends ``__post_init__`` the long way, which fills in defaults and
        names what is wrong, if anything (so ``False`` for a valid problem only costs time, as
        for one with ``True`` for an int). ``test_conv.py`` holds it to that.
        """
        dims = self.spatial_dim
        in_size, fil, pad, stride, dil, opad = (
            self.in_size, self.fil_size, self.pad, self.stride, self.dilation,
            self.trans_output_pad,
        )  # fmt: skip
        if not (
            dims in (2, 3)
            and type(in_size) is type(fil) is type(pad) is type(stride) is type(dil) is tuple
            and type(opad) is tuple
            and len(in_size) == len(fil) == len(pad) == len(stride) == len(dil) == len(opad)
            and len(opad) == dims
        ):
            return False
        n, c, k, g, bias = (
            self.batchsize, self.in_channels, self.out_channels, self.group_count, self.bias
        )  # fmt: skip
        positive = (*in_size, *fil, *stride, *dil, n, c, k, g)
        layouts = LAYOUTS_3D if dims == 3 else LAYOUTS_2D
        return (
            _INT_TYPE.issuperset(map(type, positive + pad + opad + (bias,)))
            and min(positive) >= 1
            and min(pad + opad + (bias,)) >= 0
            and not (c % g or k % g)
            and (self.mode == "trans" or (self.mode == "conv" and not any(opad)))
            and self.pad_mode == "default"
            and max((*in_size, *fil, *stride, *dil, *pad, *opad)) <= _SMALL
            and max(n, c, k, g, bias) <= INT_MAX
            and self.direction in DIRECTIONS
            and self.in_layout in layouts
            and self.fil_layout in layouts
            and self.out_layout in layouts
            and self.in_type in DATA_TYPES
            and self.wei_type in DATA_TYPES
            and self.out_type in DATA_TYPES
            and self.in_cast in _CASTS
            and self.wei_cast in _CASTS
            and self.out_cast in _CASTS
        )

    def _invalid_reason(self) -> str | None:
        dims = self.spatial_dim
        for name in ("in_size", "fil_size", "pad", "stride", "dilation", "trans_output_pad"):
            value = getattr(self, name)
            if len(value) != dims or not all(isinstance(v, int) for v in value):
                return f"{name} {value} is not {dims} integers for a {dims}D problem"
        for name, low in (("in_size", 1), ("fil_size", 1), ("stride", 1), ("dilation", 1)):
            if min(getattr(self, name)) < low:
                return f"{name} {getattr(self, name)} has a value below {low}"
        for name in ("pad", "trans_output_pad"):
            if min(getattr(self, name)) < 0:
                return f"{name} {getattr(self, name)} is negative"
        for name in ("batchsize", "in_channels", "out_channels", "group_count"):
            if getattr(self, name) < 1:
                return f"{name} {getattr(self, name)} is not positive"
        g = self.group_count
        if self.in_channels % g or self.out_channels % g:
            return (
                f"group_count {g} does not divide both in_channels {self.in_channels} "
                f"and out_channels {self.out_channels}"
            )
        if self.mode not in MODES:
            return f"mode {self.mode!r} is not 'conv' or 'trans'"
        if self.mode == "conv" and any(self.trans_output_pad):
            return f"trans_output_pad {self.trans_output_pad} is set but mode is 'conv'"
        if self.pad_mode not in PAD_MODES:
            return f"pad_mode {self.pad_mode!r} is not 'default' or 'same'"
        if self.pad_mode == "same" and self.mode != "conv":
            return "pad_mode 'same' is for mode 'conv' only"
        for name in ("in_size", "fil_size", "pad", "stride", "dilation", "trans_output_pad"):
            if max(getattr(self, name)) > INT_MAX:
                return f"{name} {getattr(self, name)} has a value above {INT_MAX} (a C int)"
        for name in ("batchsize", "in_channels", "out_channels", "group_count", "bias"):
            if getattr(self, name) > INT_MAX:
                return f"{name} {getattr(self, name)} is above {INT_MAX} (a C int)"
        if max(self.out_size) > INT_MAX:
            return f"y's dims {self.out_size} have a value above {INT_MAX} (a C int)"
        if self.direction not in DIRECTIONS:
            return f"direction {self.direction!r} is not F, B or W"
        allowed = LAYOUTS_3D if dims == 3 else LAYOUTS_2D
        for name in ("in_layout", "fil_layout", "out_layout"):
            if getattr(self, name) not in allowed:
                return (
                    f"{name} {getattr(self, name)!r} is not a {dims}D layout ({', '.join(allowed)})"
                )
        for name in ("in_type", "wei_type", "out_type"):
            if getattr(self, name) not in DATA_TYPES:
                return (
                    f"{name} {getattr(self, name)!r} is not a data type ({', '.join(DATA_TYPES)})"
                )
        for name in ("in_cast", "wei_cast", "out_cast"):
            cast = getattr(self, name)
            if cast is not None and cast not in DATA_TYPES:
                return f"{name} {cast!r} is not a data type ({', '.join(DATA_TYPES)})"
        if self.bias < 0:
            return f"bias {self.bias} is negative"
        return None

    @property
    def out_size(self) -> tuple[int, ...]:
        """The spatial dims of y (§1.2 formulas; ``max(1, ...)`` as MIOpen does)."""
        if self.pad_mode == "same":
            return tuple(map(same_out_size, self.in_size, self.stride))
        sizes = (self.in_size, self.fil_size, self.pad, self.stride, self.dilation)
        if self.mode == "trans":
            return tuple(map(trans_out_size, *sizes, self.trans_output_pad))
        return tuple(map(conv_out_size, *sizes))

    @property
    def cmd(self) -> str:
        """The MIOpenDriver base arg, chosen from x's type as MIOpen's logger does."""
        for cmd, types in COMMAND_TYPES.items():
            if types[0] == self.in_type:
                return cmd
        raise InvalidProblemError(f"x type {self.in_type} has no MIOpenDriver base arg")

    @property
    def layouts(self) -> tuple[str, str, str]:
        return (self.in_layout, self.fil_layout, self.out_layout)

    @property
    def types(self) -> tuple[str, str, str]:
        return (self.in_type, self.wei_type, self.out_type)

    @property
    def casts(self) -> tuple[str | None, str | None, str | None]:
        return (self.in_cast, self.wei_cast, self.out_cast)

    def __eq__(self, other: object) -> bool:
        # The generated __eq__, plus the shortcut for a problem compared with itself (as the
        # importer does for each one) that it lacks: it builds two tuples of every field first.
        if other is self:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _field_values(self) == _field_values(other)

    def with_batchsize(self, n: int) -> ConvProblem:
        return dataclasses.replace(self, batchsize=n)

    def with_direction(self, direction: Direction) -> ConvProblem:
        if direction not in DIRECTIONS:
            return dataclasses.replace(self, direction=direction)  # raises, naming it
        # Validity does not depend on the direction, so a valid problem with a valid direction
        # needs no second check: copy the fields rather than construct and validate again
        # (the parser makes a problem per direction of a line this way).
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.__dict__["direction"] = direction
        return other

    def with_command(self, cmd: str) -> ConvProblem:
        """The same problem in the precision of base arg ``cmd`` (casts are kept)."""
        if cmd not in COMMAND_TYPES:
            raise InvalidProblemError(
                f"{cmd!r} is not a conv base arg ({', '.join(COMMAND_TYPES)})"
            )
        x, w, y = COMMAND_TYPES[cmd]
        return dataclasses.replace(self, in_type=x, wei_type=w, out_type=y)


_field_values = operator.attrgetter(*(f.name for f in dataclasses.fields(ConvProblem)))
