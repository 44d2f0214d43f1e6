"""The kinds of parameter a space holds, and when a parameter exists at all.

* :class:`Categorical` — a list of values (a JSON array, a Python list): the parameter
  files' only kind before ranges. An empty list declares a parameter a searcher fills in.
* :class:`Int` — whole numbers ``lo, lo + step, ...`` up to ``hi`` (both bounds included):
  finite, so the exhaustive search lists it. ``log=True`` samples log-uniformly (step 1).
* :class:`Float` — reals in ``[lo, hi]``: continuous (a random search samples it, uniformly
  or, with ``log=True``, log-uniformly; the exhaustive search refuses it) unless it has a
  ``step``, which makes it the finite grid ``lo, lo + step, ...`` up to ``hi``.

Any of them may be **conditional**: ``when={"algo": "tiled"}`` (or a list of values,
``{"algo": ["tiled", "blocked"]}``; several names must all hold) means the parameter exists
only in points where ``algo`` has one of those values, and is absent from the others.

A parameter is plain data: made anywhere (a Python parameter file, ``tuna.tune``'s space,
the JSON reader), checked where its name and file are known
(:class:`tuna.searchers.space.ParameterSpace`), so a bad range is one line naming both.
:meth:`Param.problem` says what is wrong, without raising.
"""

from __future__ import annotations

import abc
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from tuna.searchers.run import Primitive, is_primitive

#: A parameter's condition: each named parameter must have one of the listed values.
Condition = Mapping[str, tuple[Primitive, ...]]


def _condition(when: Mapping[str, Any] | None) -> dict[str, tuple[Primitive, ...]]:
    """``when`` with a single value written as a one-value tuple (``{"a": 1}`` -> ``(1,)``)."""
    if not when:
        return {}
    if not isinstance(when, Mapping):
        return {"": (when,)}  # refused by problem(), with what was given
    return {str(k): tuple(v) if isinstance(v, list | tuple) else (v,) for k, v in when.items()}


def same_value(a: object, b: object) -> bool:
    """Equal, with a bool never equal to a number (``True == 1`` in Python)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


@dataclass(frozen=True)
class Param(abc.ABC):
    """One parameter's values (see the module docstring); ``when`` makes it conditional."""

    when: Condition = field(default_factory=dict, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "when", _condition(self.when))

    @property
    @abc.abstractmethod
    def finite(self) -> bool:
        """Whether the values can be listed (every kind but a Float without a step)."""

    @abc.abstractmethod
    def count(self) -> int:
        """How many values a finite parameter has (0: a searcher fills it in)."""

    @abc.abstractmethod
    def value_at(self, i: int) -> Primitive:
        """The ``i``-th of a finite parameter's values, in ascending (or listed) order."""

    @abc.abstractmethod
    def sample(self, rng: random.Random) -> Primitive:
        """One value drawn with ``rng`` (uniform over the values, or log-uniform)."""

    @abc.abstractmethod
    def contains(self, value: object) -> bool:
        """Whether a searcher may propose ``value`` for this parameter."""

    @abc.abstractmethod
    def problem(self) -> str | None:
        """What is wrong with the declaration (a bad range, step or log), or None."""

    @abc.abstractmethod
    def to_json(self) -> Any:
        """The JSON form a JSON parameter file declares this parameter with."""

    def values(self) -> list[Primitive]:
        """Every value of a finite parameter, in order."""
        return [self.value_at(i) for i in range(self.count())]

    def active(self, point: Mapping[str, Any]) -> bool:
        """Whether the parameter exists in ``point``: its condition holds there."""
        return all(
            name in point and any(same_value(point[name], v) for v in allowed)
            for name, allowed in self.when.items()
        )

    def _when_json(self) -> dict[str, Any]:
        if not self.when:
            return {}
        return {"when": {k: v[0] if len(v) == 1 else list(v) for k, v in self.when.items()}}


@dataclass(frozen=True)
class Categorical(Param):
    """A list of values: ``Categorical(["a", "b"], when={"algo": "tiled"})``; a plain list is
    the same parameter without a condition."""

    choices: tuple[Primitive, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "choices", tuple(self.choices))

    @property
    def finite(self) -> bool:
        return True

    def count(self) -> int:
        return len(self.choices)

    def value_at(self, i: int) -> Primitive:
        return self.choices[i]

    def sample(self, rng: random.Random) -> Primitive:
        return self.choices[rng.randrange(len(self.choices))]

    def contains(self, value: object) -> bool:
        return is_primitive(value)  # a searcher may fill in values the file does not list

    def problem(self) -> str | None:
        for i, v in enumerate(self.choices):
            if not is_primitive(v):
                return (
                    f"value {i} is {v!r}; values must be booleans, numbers or strings "
                    "(nested objects and arrays are not allowed)"
                )
        return None

    def to_json(self) -> Any:
        if not self.when:
            return list(self.choices)
        return {"values": list(self.choices), **self._when_json()}

    def __repr__(self) -> str:
        when = f", when={dict(self.when)!r}" if self.when else ""
        return f"Categorical({list(self.choices)!r}{when})"


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _range_problem(kind: str, lo: object, hi: object, log: bool) -> str | None:
    """What is wrong with a range's bounds (shared by Int and Float), or None."""
    if not _is_number(lo) or not _is_number(hi):
        return f"{kind} bounds must be numbers, not {lo!r} and {hi!r}"
    assert isinstance(lo, int | float) and isinstance(hi, int | float)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{kind} bounds must be finite numbers, not {lo!r} and {hi!r}"
    if lo > hi:
        return f"the range [{lo!r}, {hi!r}] is empty (lo is above hi); give lo <= hi"
    if not isinstance(log, bool):
        return f"log must be true or false, not {log!r}"
    if log and lo <= 0:
        return f"log=True needs lo > 0 (a log scale has no 0 or negatives), not lo={lo!r}"
    return None


@dataclass(frozen=True)
class Int(Param):
    """Whole numbers ``lo, lo + step, ...`` up to ``hi``: ``Int(4, 64, step=4)``; ``log=True``
    (step 1) draws log-uniformly, so 1..1000 is sampled as often below 32 as above."""

    lo: int
    hi: int
    step: int = 1
    log: bool = False

    @property
    def finite(self) -> bool:
        return True

    def count(self) -> int:
        return (self.hi - self.lo) // self.step + 1

    def value_at(self, i: int) -> Primitive:
        return self.lo + i * self.step

    def sample(self, rng: random.Random) -> Primitive:
        if self.log:
            x = math.exp(rng.uniform(math.log(self.lo - 0.5 + 1e-12), math.log(self.hi + 0.5)))
            return min(self.hi, max(self.lo, round(x)))
        return self.lo + self.step * rng.randrange(self.count())

    def contains(self, value: object) -> bool:
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and self.lo <= value <= self.hi
            and (value - self.lo) % self.step == 0
        )

    def problem(self) -> str | None:
        for what, v in (("lo", self.lo), ("hi", self.hi)):
            if not isinstance(v, int) or isinstance(v, bool):
                return f"Int {what} must be a whole number, not {v!r} (use Float for reals)"
        if not isinstance(self.step, int) or isinstance(self.step, bool) or self.step <= 0:
            return f"step {self.step!r}: an Int's step is a whole number of at least 1"
        problem = _range_problem("Int", self.lo, self.hi, self.log)
        if problem is None and self.log and self.step != 1:
            problem = f"log=True with step {self.step}: a log range steps by 1; drop one of them"
        return problem

    def to_json(self) -> Any:
        out: dict[str, Any] = {"int": [self.lo, self.hi]}
        if self.step != 1:
            out["step"] = self.step
        if self.log:
            out["log"] = True
        return {**out, **self._when_json()}

    def __repr__(self) -> str:
        step = f", step={self.step}" if self.step != 1 else ""
        log = ", log=True" if self.log else ""
        when = f", when={dict(self.when)!r}" if self.when else ""
        return f"Int({self.lo!r}, {self.hi!r}{step}{log}{when})"


@dataclass(frozen=True)
class Float(Param):
    """Reals in ``[lo, hi]``: ``Float(1e-4, 1e-1, log=True)``; with ``step`` the finite grid
    ``lo, lo + step, ...`` up to ``hi`` (``Float(0.0, 1.0, step=0.25)``: five values)."""

    lo: float
    hi: float
    step: float | None = None
    log: bool = False

    @property
    def finite(self) -> bool:
        return self.step is not None

    def count(self) -> int:
        if self.step is None:
            raise ValueError(f"{self!r} is continuous: it has no count of values")
        return int((_decimal(self.hi) - _decimal(self.lo)) // _decimal(self.step)) + 1

    def value_at(self, i: int) -> Primitive:
        assert self.step is not None
        # In decimal, as the file writes the numbers: 0.1 * 3 is 0.3, not 0.30000000000000004.
        return float(_decimal(self.lo) + i * _decimal(self.step))

    def sample(self, rng: random.Random) -> Primitive:
        if self.step is not None:
            return self.value_at(rng.randrange(self.count()))
        if self.log:
            x = math.exp(rng.uniform(math.log(self.lo), math.log(self.hi)))
        else:
            x = rng.uniform(self.lo, self.hi)
        return min(float(self.hi), max(float(self.lo), x))

    def contains(self, value: object) -> bool:
        return _is_number(value) and self.lo <= value <= self.hi  # type: ignore[operator]

    def problem(self) -> str | None:
        problem = _range_problem("Float", self.lo, self.hi, self.log)
        if problem is not None or self.step is None:
            return problem
        if not _is_number(self.step) or not math.isfinite(self.step) or self.step <= 0:
            return f"step {self.step!r}: a Float's step is a number above 0 (or none: continuous)"
        if self.log:
            return f"log=True with step {self.step!r}: a log range has no step; drop one of them"
        return None

    def to_json(self) -> Any:
        out: dict[str, Any] = {"float": [self.lo, self.hi]}
        if self.step is not None:
            out["step"] = self.step
        if self.log:
            out["log"] = True
        return {**out, **self._when_json()}

    def __repr__(self) -> str:
        step = f", step={self.step!r}" if self.step is not None else ""
        log = ", log=True" if self.log else ""
        when = f", when={dict(self.when)!r}" if self.when else ""
        return f"Float({self.lo!r}, {self.hi!r}{step}{log}{when})"


def _decimal(x: float) -> Decimal:
    """``x`` as the decimal its shortest repr writes (``0.1`` is 0.1, not 0.1000000000000000055)."""
    return Decimal(repr(x))


def as_param(value: object) -> Param | None:
    """``value`` as a parameter: a Param as it is, a list or tuple as a Categorical; else None."""
    if isinstance(value, Param):
        return value
    if isinstance(value, list | tuple):
        return Categorical(tuple(value))
    return None


__all__ = [
    "Categorical",
    "Condition",
    "Float",
    "Int",
    "Param",
    "as_param",
    "same_value",
]
