"""Pareto fronts of points in two objectives (pure: values in, values out).

MIOpen weighs a solver's time against the workspace it needs: a faster solver that
needs more memory than the caller can give is no use, so the find db keeps every
solver and the library picks. A benchmark search weighs two stats the user names the
same way (throughput up, p95 latency down). The Pareto-optimal points are those no other
point beats in both objectives; ``take_best`` marks the next ones too, front by front
(non-dominated sorting), for a caller who wants a few near-optimal fall-backs.

Both objectives are minimised; :func:`rank_goals` takes a goal per axis ("min" or "max")
and ranks in the same order by flipping the axes to maximise. Dominance is the searchers'
one rule (:func:`tuna.searchers.pareto.key_dominates`); what is the report's own is the
sorting into successive fronts, in two dimensions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tuna.errors import TunaError
from tuna.searchers.pareto import Goal, Target, key_dominates


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


def parse_stat_pair(text: str) -> tuple[Target, Target]:
    """``--pareto-stats``: two ``STAT:min|max`` separated by a comma
    (``throughput:max,p95_ms:min``), each a search's :class:`~tuna.searchers.pareto.Target`."""
    parts = [p.strip() for p in text.split(",")]
    example = "e.g. throughput:max,p95_ms:min"
    if len(parts) != 2:
        raise TunaError(f"--pareto-stats {text!r}: name two stats, {example}")
    out = []
    for part in parts:
        stat, sep, goal = part.rpartition(":")
        if not sep or not stat or goal not in ("min", "max"):
            raise TunaError(
                f"--pareto-stats {text!r}: {part!r} is not STAT:min or STAT:max, {example}"
            )
        out.append(Target(stat, "min" if goal == "min" else "max"))
    if out[0].stat == out[1].stat:
        raise TunaError(f"--pareto-stats {text!r}: name two different stats, {example}")
    return out[0], out[1]


def fronts(points: Sequence[tuple[float, float]]) -> list[int]:
    """The front of each point: 0 for the Pareto-optimal ones, 1 for those only they beat, ...

    Each front is the set of points no point of its own or a later front dominates (equal
    points share a front). Sorted by (x, y), a point can only be dominated by one before
    it, and the last point put on a front has that front's smallest y; so a point goes on
    the first front whose last point does not dominate it. O(n log n + n x fronts): a
    search of thousands of runs is ranked at once.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front_of = [-1] * len(points)
    last: list[tuple[float, float]] = []  # the last point put on each front
    for i in order:
        p = points[i]
        level = 0
        while level < len(last) and key_dominates(last[level], p):
            level += 1
        if level == len(last):
            last.append(p)
        else:
            last[level] = p
        front_of[i] = level
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


def rank_goals(
    points: Sequence[tuple[float, float]], goals: tuple[Goal, Goal], take_best: int = 0
) -> list[Ranked]:
    """:func:`rank` where each axis is minimised or maximised; x and y stay as given.

    Within a front, the ``take_best`` extras are taken best x first.
    """
    sx, sy = (1.0 if g == "min" else -1.0 for g in goals)
    ranked = rank([(sx * x, sy * y) for x, y in points], take_best)
    return [Ranked(r.index, sx * r.x, sy * r.y, r.front, r.near_optimal) for r in ranked]
