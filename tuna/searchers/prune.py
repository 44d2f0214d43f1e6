"""Pruners: whether a run's intermediate values say it is hopeless (issue #28).

A run may report **intermediate values** while it runs, one per step (an epoch, an
iteration count, a prefix of the input): a command prints ``tuna:intermediate STEP VALUE``
lines (:func:`parse_intermediate`), a Python objective calls ``trial.report(step, value)``.
Each report is judged against the search's other runs (their **curves**: step -> value)
by the search's pruner; a pruned run is stopped, recorded as pruned (not counted, never
the best) and its searcher goes on.

* :class:`MedianPruner` (``median``): a run whose value at step ``s`` is worse than the
  median of the values the search's *completed* runs (valid, not pruned) reported at ``s``,
  once at least ``warmup_runs`` of them reported there and ``s >= warmup_steps``.
* :class:`HalvingPruner` (``halving``, asynchronous successive halving): rungs at steps
  ``min_step * factor**k``; a run's value at a rung is the first it reported at or past
  the rung's step. A run that reaches a rung goes on only if its value there is among the
  best ``1/factor`` of the values every run of the search (running, completed or pruned)
  had at that rung, itself included — at least the single best, so of the first runs to
  reach a rung, one that is not the best so far stops.

Pruners are pure: they are given the curves and say why to stop (a reason) or None.
A pruner is written ``median``, ``median(warmup_runs=3, warmup_steps=2)``, ``halving`` or
``halving(min_step=1, factor=3)`` (:func:`parse_pruner`) and stored as JSON
(:meth:`to_json`, :func:`pruner_from_json`).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from tuna.errors import TunaError
from tuna.searchers.errors import SearchError
from tuna.searchers.pareto import Goal

INTERMEDIATE = "tuna:intermediate"
"""The first word of a command's intermediate-value line: ``tuna:intermediate 3 0.25``."""

Curve = Mapping[int, float]


class Pruned(TunaError):
    """Raised (or returned) by a ``tuna.tune`` objective to stop its run as pruned, as
    ``trial.should_prune()`` advises: the run is recorded pruned, not as an error."""


@dataclass(frozen=True)
class Peer:
    """Another run of the search as a pruner sees it: its curve so far, and whether it
    completed (ended valid and not pruned: the median pruner's reference runs)."""

    curve: Curve
    completed: bool = False


def parse_intermediate(line: str) -> tuple[int, float] | None:
    """``(step, value)`` of a ``tuna:intermediate STEP VALUE`` line; None for any other
    line; a :class:`SearchError` for such a line that does not hold an integer step >= 0
    and a finite number."""
    words = line.split()
    if not words or words[0] != INTERMEDIATE:
        return None
    if len(words) == 3:
        try:
            step, value = int(words[1]), float(words[2])
        except ValueError:
            pass
        else:
            if step >= 0 and math.isfinite(value):
                return step, value
    raise SearchError(
        f"intermediate line {line.strip()[:200]!r}: write '{INTERMEDIATE} STEP VALUE' with "
        "an integer step >= 0 and a finite number, e.g. 'tuna:intermediate 3 0.25'"
    )


def _worse(value: float, than: float, goal: Goal) -> bool:
    return value > than if goal == "min" else value < than


@dataclass(frozen=True)
class MedianPruner:
    """Stop a run worse than the completed runs' median at the same step (module docstring)."""

    warmup_runs: int = 5
    warmup_steps: int = 0
    name = "median"

    def __post_init__(self) -> None:
        _at_least("warmup_runs", self.warmup_runs, 1, self.name)
        _at_least("warmup_steps", self.warmup_steps, 0, self.name)

    def judges(self, step: int, curve: Curve) -> bool:
        """Whether a report at ``step`` can stop the run (else the peers need not be read)."""
        return step >= self.warmup_steps

    def judge(
        self, step: int, value: float, curve: Curve, peers: Sequence[Peer], goal: Goal
    ) -> str | None:
        """Why the run whose ``curve`` just got ``value`` at ``step`` should stop, or None."""
        if not self.judges(step, curve):
            return None
        seen = [p.curve[step] for p in peers if p.completed and step in p.curve]
        if len(seen) < self.warmup_runs:
            return None
        median = statistics.median(seen)
        if not _worse(value, median, goal):
            return None
        return (
            f"pruned at step {step} by the median pruner: {value:g} is worse than the median "
            f"{median:g} of {len(seen)} completed run(s) at that step"
        )

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, **{f.name: getattr(self, f.name) for f in fields(self)}}

    @property
    def text(self) -> str:
        """Its written form, every setting given: ``median(warmup_runs=5, warmup_steps=0)``."""
        return _text(self)


@dataclass(frozen=True)
class HalvingPruner:
    """Asynchronous successive halving over rungs ``min_step * factor**k`` (module docstring)."""

    min_step: int = 1
    factor: int = 3
    name = "halving"

    def __post_init__(self) -> None:
        _at_least("min_step", self.min_step, 1, self.name)
        _at_least("factor", self.factor, 2, self.name)

    def rung_step(self, rung: int) -> int:
        return int(self.min_step * self.factor**rung)

    def rung_of(self, step: int) -> int | None:
        """The highest rung whose step is at most ``step`` (None: below the first)."""
        if step < self.min_step:
            return None
        rung = 0
        while self.rung_step(rung + 1) <= step:
            rung += 1
        return rung

    def value_at(self, curve: Curve, rung: int) -> float | None:
        """A curve's value at ``rung``: the first it reported at or past the rung's step."""
        start = self.rung_step(rung)
        reached = [s for s in curve if s >= start]
        return curve[min(reached)] if reached else None

    def judges(self, step: int, curve: Curve) -> bool:
        """Whether a report at ``step`` reaches a new rung (only such a report can stop the
        run; the peers need not be read for the others)."""
        rung = self.rung_of(step)
        if rung is None:
            return False
        earlier = [s for s in curve if s != step]
        before = self.rung_of(max(earlier)) if earlier else None
        return before is None or before < rung

    def judge(
        self, step: int, value: float, curve: Curve, peers: Sequence[Peer], goal: Goal
    ) -> str | None:
        """Why the run should stop at the rung this report reached, or None (it goes on;
        a report that reaches no new rung never stops it)."""
        rung = self.rung_of(step)
        if rung is None or not self.judges(step, curve):
            return None
        own = self.value_at({**curve, step: value}, rung)
        assert own is not None
        values = [v for p in peers if (v := self.value_at(p.curve, rung)) is not None]
        ranked = sorted([*values, own], reverse=goal == "max")
        keep = max(1, len(ranked) // self.factor)
        if not _worse(own, ranked[keep - 1], goal):
            return None
        return (
            f"pruned at step {step} by successive halving: {own:g} at rung {rung} (step "
            f"{self.rung_step(rung)}) is not among the best {keep} of {len(ranked)} run(s) there"
        )

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, **{f.name: getattr(self, f.name) for f in fields(self)}}

    @property
    def text(self) -> str:
        """Its written form, every setting given: ``median(warmup_runs=5, warmup_steps=0)``."""
        return _text(self)


Pruner = MedianPruner | HalvingPruner
PRUNERS: dict[str, type[MedianPruner] | type[HalvingPruner]] = {
    "median": MedianPruner,
    "halving": HalvingPruner,
}
_FORM = re.compile(r"^\s*([a-z_]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


def _text(pruner: MedianPruner | HalvingPruner) -> str:
    settings = ", ".join(f"{f.name}={getattr(pruner, f.name)}" for f in fields(pruner))
    return f"{pruner.name}({settings})"


def _at_least(field: str, value: object, low: int, pruner: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise SearchError(f"pruner {pruner}: {field} {value!r}: give an integer >= {low}")


def parse_pruner(text: str) -> Pruner:
    """A pruner from its written form: ``median``, ``halving(min_step=2, factor=3)``..."""
    m = _FORM.match(text)
    kind = PRUNERS.get(m.group(1)) if m else None
    example = "'median', 'median(warmup_runs=5, warmup_steps=0)' or 'halving(min_step=1, factor=3)'"
    if m is None or kind is None:
        raise SearchError(f"pruner {text!r}: write {example}")
    settings: dict[str, int] = {}
    known = {f.name for f in fields(kind)}
    for part in filter(None, (p.strip() for p in (m.group(2) or "").split(","))):
        key, eq, raw = (s.strip() for s in part.partition("="))
        if not eq or key not in known:
            raise SearchError(
                f"pruner {text!r}: {part!r} is not a setting of {m.group(1)} "
                f"(its settings: {', '.join(sorted(known))}); write {example}"
            )
        try:
            settings[key] = int(raw)
        except ValueError:
            raise SearchError(f"pruner {text!r}: {key}={raw!r}: give an integer") from None
    return kind(**settings)


def pruner_from_json(data: Mapping[str, Any] | None) -> Pruner | None:
    """The pruner a search stores (:meth:`to_json`), None for none."""
    if not data:
        return None
    settings = {k: v for k, v in data.items() if k != "name"}
    kind = PRUNERS.get(str(data.get("name")))
    if kind is None:
        raise SearchError(f"stored pruner {dict(data)!r}: use one of {', '.join(PRUNERS)}")
    return kind(**settings)


def as_pruner(value: object) -> Pruner | None:
    """A pruner from ``tune(pruner=...)``'s argument: None, a written form, or a pruner."""
    if value is None or isinstance(value, MedianPruner | HalvingPruner):
        return value
    if isinstance(value, str):
        return parse_pruner(value)
    raise SearchError(
        f"pruner {value!r}: give 'median', 'halving', a written form such as "
        "'median(warmup_runs=3)', or tuna.searchers.MedianPruner(...)"
    )
