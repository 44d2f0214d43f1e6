"""Finalists re-timed before a winner is stored, for every backend that times candidates.

A backend's evaluation that stores a winner (a perf or find job, a strategy's final job)
times its :data:`FINALISTS` fastest passed candidates again, in :data:`RETIME_TURNS`
turns, each turn timing each finalist once with the order rotated (as ``bench/cpuconv.py
--versus`` does), and each finalist counts by its fastest timing: a disturbed run only
ever makes a candidate slower, so one disturbed run cannot crown a slow candidate. Every
timing is a measurement row, so how far apart a winner's timings were is stored too
(:mod:`tuna.library.stability` reads it where results are shown); the evaluation logs it
when it is above :data:`~tuna.backends.base.UNSTABLE_SPREAD`.

A backend may name a **baseline** that takes the turns beside the finalists (cpuconv: the
solver's default parameters): what tuning gained over it is then a ratio of timings taken
side by side, seconds apart, rather than of two jobs timed minutes apart under whatever load
each met (the quick start's tuned / default geomean moved 8.8x-17.0x between back-to-back
runs when its two halves came from two sessions; issue #30). Its timings are measurements
like the finalists', so it can only win by being the fastest measured.

The backend says how to time a turn (:func:`retime`'s ``measure``): cpuconv in forked
children under its time budget, keeping each candidate's fastest run of the turn; cuda on
the device in a child it can kill.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from tuna.backends.base import UNSTABLE_SPREAD

log = logging.getLogger(__name__)

#: The fastest candidates re-timed before a winner is stored, and the turns they take.
FINALISTS = 3
RETIME_TURNS = 3


class Timed(Protocol):
    @property
    def params(self) -> str: ...

    @property
    def time_ms(self) -> float | None: ...


M = TypeVar("M", bound=Timed)


def finalists(
    measured: Sequence[Timed], eligible: Callable[[str], bool], baseline: str | None = None
) -> list[str]:
    """The :data:`FINALISTS` fastest candidates with a time (ties by params) that
    ``eligible`` allows (e.g. those the evaluation has a kernel for), then ``baseline``
    when it is not one of them but passed and is eligible."""
    passed = sorted(
        (m for m in measured if m.time_ms is not None and eligible(m.params)),
        key=lambda m: (m.time_ms, m.params),
    )
    names = list(dict.fromkeys(m.params for m in passed))
    chosen = names[:FINALISTS]
    if baseline is not None and baseline in names and baseline not in chosen:
        chosen.append(baseline)
    return chosen


def retime(names: Sequence[str], measure: Callable[[list[str]], tuple[list[M], bool]]) -> list[M]:
    """``names`` timed in :data:`RETIME_TURNS` turns, the order rotated each turn;
    ``measure`` times one turn's order and says whether to go on (False: a time budget
    ran out or the device failed: what was timed counts)."""
    out: list[M] = []
    n = len(names)
    for turn in range(RETIME_TURNS if n else 0):
        order = list(names[turn % n :]) + list(names[: turn % n])
        timed, go_on = measure(order)
        out += timed
        if not go_on:
            break
    return out


def say_if_unstable(job: int, measured: Sequence[Timed], retimed: Sequence[Timed]) -> float:
    """The finalists' largest spread (slowest over fastest of each one's timings), logged
    when above :data:`UNSTABLE_SPREAD` (a busy machine)."""
    names = {r.params for r in retimed}
    times: dict[str, list[float]] = {}
    for m in [*measured, *retimed]:
        if m.time_ms and m.params in names:
            times.setdefault(m.params, []).append(m.time_ms)
    spread = max((max(t) / min(t) for t in times.values() if len(t) > 1), default=1.0)
    if spread > UNSTABLE_SPREAD:
        log.warning(
            "job %d: timings unstable: a finalist's %d timings spread %.2fx (machine busy?); "
            "the fastest of each counts",
            job, RETIME_TURNS + 1, spread,
        )  # fmt: skip
    return spread
