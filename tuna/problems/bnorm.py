"""The batch-norm problem of a MIOpenDriver ``bnorm*`` line (``driver/bn_driver.hpp``, §1.3).

The key (``bnorm_key``) is Tuna's own, for de-duplication; MIOpen has no find-db key for batch
norm. Its format::

    bn-<dtype>-<layout>-<N>-<C>-[<D>-]<H>-<W>-m<mode>-<dir>[-s][-r][-a<alpha>][-b<beta>]

``dtype`` is the data type, followed by the scale/mean type when that differs (``FP16FP32``);
``D`` is present exactly when the layout is 3D; ``dir`` is ``FWD_TRAIN``, ``FWD_INFER`` or
``BWD``; ``-s``/``-r`` mark save and run; alpha and beta appear only when not 1.0 and 0.0, as
Python's shortest round-trip ``repr``. E.g. ``bn-FP16-NCHW-256-1024-14-14-m1-FWD_TRAIN-s-r``.

MIOpenDriver runs forward training when neither ``--forw`` nor ``-b`` is set, and forward only
when both are; both cases are errors here, since a line meant for tuning should say what it is.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

from tuna.errors import DbKeyError, DriverLineError
from tuna.problems.conv import InvalidProblemError
from tuna.problems.driver import (
    BNORM_BASE_ARGS,
    FlagSpec,
    FlagTable,
    FlagValues,
    not_accepted,
    split_command,
)

#: (data type, scale/mean type) by base arg.
BNORM_TYPES: dict[str, tuple[str, str]] = {
    "bnorm": ("FP32", "FP32"),
    "bnormfp16": ("FP16", "FP16"),
    "bnormfp16fp32": ("FP16", "FP32"),
    "bnormbfp16fp32": ("BF16", "FP32"),
}
BN_DIRECTIONS: tuple[str, ...] = ("FWD_TRAIN", "FWD_INFER", "BWD")
_LAYOUTS_2D = ("NCHW", "NHWC")
_LAYOUTS_3D = ("NCDHW", "NDHWC")

BNORM_FLAGS: tuple[FlagSpec, ...] = tuple(
    FlagSpec(long, short, upper=long == "layout")
    for long, short in (
        ("forw", "F"), ("back", "b"), ("batchsize", "n"), ("in_channels", "c"), ("in_h", "H"),
        ("in_w", "W"), ("in_d", "D"), ("layout", "L"), ("alpha", "A"), ("beta", "B"),
        ("iter", "i"), ("verify", "V"), ("time", "t"), ("printconv", "P"), ("mode", "m"),
        ("save", "s"), ("run", "r"), ("wall", "w"),
    )
)  # fmt: skip
_BNORM_TABLE = FlagTable(BNORM_FLAGS)
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


@dataclass(frozen=True, kw_only=True)
class BnProblem:
    """One batch-norm problem. ``in_d`` 0 means 2D; ``mode`` 0 is per-activation, 1 spatial."""

    data_type: str = "FP32"
    param_type: str = "FP32"
    batchsize: int = 32
    in_channels: int = 3
    in_d: int = 0
    in_h: int = 32
    in_w: int = 32
    layout: str = ""
    mode: int = 0
    direction: str = "FWD_TRAIN"
    save: bool = False
    run: bool = False
    alpha: float = 1.0
    beta: float = 0.0

    def __post_init__(self) -> None:
        if not self.layout:
            object.__setattr__(self, "layout", "NCDHW" if self.in_d else "NCHW")
        reason = self._invalid_reason()
        if reason is not None:
            raise InvalidProblemError(reason)

    def _invalid_reason(self) -> str | None:
        if (self.data_type, self.param_type) not in BNORM_TYPES.values():
            return f"types {self.data_type}/{self.param_type} match no bnorm base arg"
        for name in ("batchsize", "in_channels", "in_h", "in_w"):
            if getattr(self, name) < 1:
                return f"{name} {getattr(self, name)} is not positive"
        if self.in_d < 0:
            return f"in_d {self.in_d} is negative"
        allowed = _LAYOUTS_3D if self.in_d else _LAYOUTS_2D
        if self.layout not in allowed:
            return f"layout {self.layout!r} is not one of {', '.join(allowed)} (in_d {self.in_d})"
        if self.mode not in (0, 1):
            return f"mode {self.mode} is not 0 (per-activation) or 1 (spatial)"
        if self.direction not in BN_DIRECTIONS:
            return f"direction {self.direction!r} is not one of {', '.join(BN_DIRECTIONS)}"
        if not (math.isfinite(self.alpha) and math.isfinite(self.beta)):
            return f"alpha {self.alpha} and beta {self.beta} must be finite"
        return None

    @property
    def cmd(self) -> str:
        """The MIOpenDriver base arg for the data types."""
        return next(c for c, t in BNORM_TYPES.items() if t == (self.data_type, self.param_type))

    def with_batchsize(self, n: int) -> BnProblem:
        return dataclasses.replace(self, batchsize=n)

    def to_driver_line(self) -> str:
        """Same as the module's ``to_driver_line(self)``."""
        return to_driver_line(self)


def is_bnorm_line(line: str) -> bool:
    """Whether ``line`` is a MIOpenDriver batch-norm line (so ``parse_bnorm_line`` applies)."""
    try:
        return split_command(line)[0] in BNORM_BASE_ARGS
    except DriverLineError:
        return False


def _float(flags: FlagValues, name: str, default: float) -> float:
    raw = flags.text(name, "")
    if not raw:
        return default
    if not _FLOAT.fullmatch(raw):
        raise flags.error(name, "is not a number")
    return float(raw)


def _switch(flags: FlagValues, name: str, top: int) -> int:
    value = flags.integer(name, 0)
    if not 0 <= value <= top:
        raise flags.error(name, f"is not between 0 and {top}")
    return value


def parse_bnorm_line(line: str) -> BnProblem:
    """Parse a MIOpenDriver ``bnorm*`` line.

    >>> parse_bnorm_line("MIOpenDriver bnormfp16 -n 256 -c 64 -H 56 -W 56 -m 1 --forw 2").direction
    'FWD_INFER'
    """
    base, tokens = split_command(line)
    if base not in BNORM_BASE_ARGS:
        raise not_accepted(base, "bnorm")
    flags = _BNORM_TABLE.read(tokens)
    forw = _switch(flags, "forw", 2)
    back = _switch(flags, "back", 1)
    if forw and back:
        raise DriverLineError(
            f"--forw {forw} and -b 1 are both set; MIOpenDriver would run forward only"
        )
    if not forw and not back:
        raise DriverLineError("neither --forw (1 or 2) nor -b 1 is set; say which pass to run")
    direction = "BWD" if back else BN_DIRECTIONS[forw - 1]
    in_d = flags.integer("in_d", 0)
    layout = flags.text("layout", "")
    allowed = _LAYOUTS_3D if in_d else _LAYOUTS_2D
    if layout and layout not in allowed:
        hint = "; short flags are not uppercased" if layout.upper() != layout else ""
        raise flags.error("layout", f"is not one of {', '.join(allowed)} (in_d {in_d}){hint}")
    data_type, param_type = BNORM_TYPES[base]
    try:
        return _line_problem(flags, data_type, param_type, in_d, layout, direction)
    except InvalidProblemError as e:
        raise DriverLineError(f"impossible batch norm: {e}") from e


def _line_problem(
    flags: FlagValues, data_type: str, param_type: str, in_d: int, layout: str, direction: str
) -> BnProblem:
    return BnProblem(
        data_type=data_type,
        param_type=param_type,
        batchsize=flags.integer("batchsize", 32),
        in_channels=flags.integer("in_channels", 3),
        in_d=in_d,
        in_h=flags.integer("in_h", 32),
        in_w=flags.integer("in_w", 32),
        layout=layout,
        mode=_switch(flags, "mode", 1),
        direction=direction,
        save=bool(_switch(flags, "save", 1)),
        run=bool(_switch(flags, "run", 1)),
        alpha=_float(flags, "alpha", 1.0),
        beta=_float(flags, "beta", 0.0),
    )


def to_driver_line(p: BnProblem) -> str:
    """A MIOpenDriver line for ``p`` in the form MIOpen logs (``BnormArgsForMIOpenDriver``),
    with ``-A``/``-B`` added when alpha/beta are not the defaults."""
    parts = ["./bin/MIOpenDriver", p.cmd, "-n", str(p.batchsize), "-c", str(p.in_channels)]
    if p.in_d:
        parts += ["-D", str(p.in_d)]
    parts += ["-H", str(p.in_h), "-W", str(p.in_w), "-m", str(p.mode)]
    forw = {"FWD_TRAIN": "1", "FWD_INFER": "2", "BWD": "0"}[p.direction]
    parts += ["--forw", forw, "-b", "1" if p.direction == "BWD" else "0"]
    if p.save:
        parts += ["-s", "1"]
    if p.run:
        parts += ["-r", "1"]
    if p.alpha != 1.0:
        parts += ["-A", repr(p.alpha)]
    if p.beta != 0.0:
        parts += ["-B", repr(p.beta)]
    parts += ["--layout", p.layout]
    return " ".join(parts)


def bnorm_key(p: BnProblem) -> str:
    """Tuna's canonical key of a batch-norm problem (format in the module docstring)."""
    dtype = p.data_type if p.data_type == p.param_type else p.data_type + p.param_type
    dims = [p.batchsize, p.in_channels, *([p.in_d] if p.in_d else []), p.in_h, p.in_w]
    key = "-".join(["bn", dtype, p.layout, *map(str, dims), f"m{p.mode}", p.direction])
    key += "-s" * p.save + "-r" * p.run
    if p.alpha != 1.0:
        key += f"-a{p.alpha!r}"
    if p.beta != 0.0:
        key += f"-b{p.beta!r}"
    return key


_KEY_FORM = "bn-<dtype>-<layout>-<N>-<C>-[<D>-]<H>-<W>-m<mode>-<dir>[-s][-r][-a<alpha>][-b<beta>]"
_KEY = re.compile(
    r"bn-(?P<dtype>[A-Z0-9]+)-(?P<layout>[A-Z]+)-(?P<n>[0-9]+)-(?P<c>[0-9]+)-(?:(?P<d>[0-9]+)-)?"
    r"(?P<h>[0-9]+)-(?P<w>[0-9]+)-m(?P<mode>[0-9]+)-(?P<dir>[A-Z_]+)(?P<s>-s)?(?P<r>-r)?"
    r"(?:-a(?P<alpha>[^ab]+?))?(?:-b(?P<beta>[^ab]+))?"
)


def parse_bnorm_key(key: str) -> BnProblem:
    """Invert ``bnorm_key``; ``DbKeyError`` for a key it would not write."""
    m = _KEY.fullmatch(key)
    if m is None:
        raise DbKeyError(f"batch-norm key {key!r} is not of the form {_KEY_FORM}")
    dtype = m["dtype"]
    types = next((t for t in BNORM_TYPES.values() if dtype in (t[0], t[0] + t[1])), None)
    if types is None:
        raise DbKeyError(f"batch-norm key {key!r}: data type {dtype!r} is not known")
    try:
        alpha = float(m["alpha"]) if m["alpha"] else 1.0
        beta = float(m["beta"]) if m["beta"] else 0.0
        p = BnProblem(
            data_type=types[0],
            param_type=types[1],
            batchsize=int(m["n"]),
            in_channels=int(m["c"]),
            in_d=int(m["d"] or 0),
            in_h=int(m["h"]),
            in_w=int(m["w"]),
            layout=m["layout"],
            mode=int(m["mode"]),
            direction=m["dir"],
            save=bool(m["s"]),
            run=bool(m["r"]),
            alpha=alpha,
            beta=beta,
        )
    except (ValueError, InvalidProblemError) as e:
        raise DbKeyError(f"batch-norm key {key!r}: {e}") from e
    if bnorm_key(p) != key:
        raise DbKeyError(f"batch-norm key {key!r} is not canonical (it would be {bnorm_key(p)!r})")
    return p
