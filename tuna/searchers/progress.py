"""How a search progresses: the best value found after each measurement (pure).

"Best so far vs measurements" is how searches are compared side by side (the reference's
§4): after the n-th finished measurement, the best objective value among the first n. A
measurement that does not count (invalid, or the stat missing) keeps the best as it was.
The curve changes only where a measurement improves on it, so :func:`improvements` (the
steps) is all a chart needs to draw it, however many measurements a search made.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tuna.searchers.objective import Objective
from tuna.searchers.pareto import Goal
from tuna.searchers.run import Run


def better(a: float, b: float | None, goal: Goal) -> bool:
    """``a`` beats ``b`` (None, no value yet, is beaten by anything)."""
    return b is None or (a < b if goal == "min" else a > b)


def best_so_far(values: Iterable[float | None], goal: Goal) -> list[float | None]:
    """After each measurement (in the order they finished), the best value so far; None
    until one counts. ``values`` holds None for a measurement that does not count."""
    out: list[float | None] = []
    best: float | None = None
    for v in values:
        if v is not None and better(v, best, goal):
            best = v
        out.append(best)
    return out


@dataclass(frozen=True)
class Improvement:
    """The ``n``-th measurement (from 1) made ``best`` the best so far."""

    n: int
    best: float


def improvements(values: Iterable[float | None], goal: Goal) -> list[Improvement]:
    """The measurements that improved the best so far: the corners of the step curve."""
    steps: list[Improvement] = []
    best: float | None = None
    for n, v in enumerate(values, start=1):
        if v is not None and better(v, best, goal):
            best = v
            steps.append(Improvement(n, v))
    return steps


def objective_values(runs: Sequence[Run], objective: Objective) -> list[float | None]:
    """Each Run's objective value, None where the Run does not count."""
    return [float(r.stats[objective.stat]) if objective.counts(r) else None for r in runs]
