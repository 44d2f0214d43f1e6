"""Pareto fronts of points to minimise in two objectives (pure: values in, values out).

MIOpen weighs a solver's time against the workspace it needs: a faster solver that
needs more memory than the caller can give is no use, so the find db keeps every
solver and the library picks. The Pareto-optimal points are those no other point beats
in both objectives; ``take_best`` marks the next ones too, front by front (non-dominated
sorting), for a caller who wants a few near-optimal fall-backs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Ranked:
    """A point's front (0 = Pareto-optimal) and whether ``take_best`` marked it."""

    index: int
    x: float
    y: float
    front: int
    near_optimal: bool

    @property
    def optimal(self) -> bool:
        return self.front == 0


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """``a`` is no worse than ``b`` in both objectives and better in at least one."""
    return a[0] <= b[0] and a[1] <= b[1] and (a[0] < b[0] or a[1] < b[1])


def fronts(points: Sequence[tuple[float, float]]) -> list[int]:
    """The front of each point: 0 for the Pareto-optimal ones, 1 for those only they beat, ...

    Each front is the set of remaining points no remaining point dominates, peeled off in
    turn (equal points share a front). Quadratic per front, fine for the tens of solvers
    of one problem.
    """
    front_of = [-1] * len(points)
    remaining = list(range(len(points)))
    level = 0
    while remaining:
        current = [
            i
            for i in remaining
            if not any(dominates(points[j], points[i]) for j in remaining if j != i)
        ]
        for i in current:
            front_of[i] = level
        taken = set(current)
        remaining = [i for i in remaining if i not in taken]
        level += 1
    return front_of


def rank(points: Sequence[tuple[float, float]], take_best: int = 0) -> list[Ranked]:
    """Each point with its front; the Pareto-optimal ones and ``take_best`` more are marked.

    The extra ones are taken front by front (1, 2, ...), within a front by x then y.
    """
    if take_best < 0:
        raise ValueError("take_best must be >= 0")
    front_of = fronts(points)
    extra = sorted(
        (i for i in range(len(points)) if front_of[i] > 0),
        key=lambda i: (front_of[i], points[i][0], points[i][1]),
    )[:take_best]
    marked = set(extra)
    return [
        Ranked(i, points[i][0], points[i][1], front_of[i], front_of[i] == 0 or i in marked)
        for i in range(len(points))
    ]
