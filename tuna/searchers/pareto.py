"""The Pareto front of runs measured on several objectives (pure).

With objectives ``time_ms: min`` and ``accuracy: max``, run A **dominates** run B when A is
no worse than B on every objective and better on at least one. The **front** is the runs
no other run dominates: the trade-offs worth choosing among. Runs with equal values on
every objective are all on the front (none dominates the other).

The front is listed in **priority order**: by the first objective, ties by the second, and
so on (then by the order given), so its first run is the best by the first objective.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

Goal = Literal["min", "max"]  # an objective's direction: the one declaration, for every module
T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    """One objective: a stat and its direction."""

    stat: str
    goal: Goal = "min"

    def __str__(self) -> str:
        return f"{self.stat}:{self.goal}"


def _key(stats: Mapping[str, Any], targets: Sequence[Target]) -> tuple[float, ...]:
    """The stats as values to minimise (a maximised stat negated)."""
    return tuple(
        float(stats[t.stat]) if t.goal == "min" else -float(stats[t.stat]) for t in targets
    )


def dominates(a: Mapping[str, Any], b: Mapping[str, Any], targets: Sequence[Target]) -> bool:
    """Whether stats ``a`` dominate stats ``b`` on ``targets`` (each a number in both)."""
    return key_dominates(_key(a, targets), _key(b, targets))


def front(
    items: Sequence[T], targets: Sequence[Target], stats: Callable[[T], Mapping[str, Any]]
) -> list[T]:
    """The items no other dominates, in priority order (module docstring). Every item's
    ``stats(item)`` must hold each target's stat as a number.

    One pass in priority order: an item can only be dominated by one before it, and among
    those by one already on the front, so each item is compared with the front only.
    """
    keyed = sorted(
        ((_key(stats(item), targets), i, item) for i, item in enumerate(items)),
        key=lambda k: (k[0], k[1]),
    )
    kept: list[tuple[tuple[float, ...], int, T]] = []
    for key, i, item in keyed:
        if not any(key_dominates(k, key) for k, _, _ in kept):
            kept.append((key, i, item))
    return [item for _, _, item in kept]


def nondominated(keys: Iterable[tuple[float, ...]]) -> list[tuple[float, ...]]:
    """The distinct keys (values to minimise, as :func:`_key` makes them) that no other key
    dominates, sorted: :func:`front`'s rule for values already keyed."""
    kept: list[tuple[float, ...]] = []
    for key in sorted(set(keys)):
        if not any(key_dominates(k, key) for k in kept):
            kept.append(key)
    return kept


def key_dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Whether key ``a`` dominates key ``b`` (values to minimise): no worse on every
    objective and not equal. The one dominance rule: :func:`dominates`, :func:`front`,
    :func:`nondominated` and the report's fronts (:mod:`tuna.report.pareto`) use it."""
    return all(x <= y for x, y in zip(a, b, strict=True)) and a != b
