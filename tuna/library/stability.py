"""Whether a stored time can be trusted: the spread of a winner's repeated timings.

A winner is timed more than once before it is stored (cpuconv's final jobs re-time their
finalists in turns; a candidate measured again by a later job or search is timed again),
and each timing is a ``measurement`` row of its (session, config, solver, params). Its
**spread** is the slowest of its valid timings over the fastest, on the platform where the
stored (fastest) time was taken: on a quiet machine it stays near 1; above
:data:`~tuna.backends.base.UNSTABLE_SPREAD` the machine was disturbed while it timed
(busy, throttled), and the figure is marked **unstable** wherever a user compares results:
``tuna best``, the report's winners and speed-ups, ``tuna search show``, the quick start.
The stored time stays the fastest valid measurement (a disturbance only ever slows a run);
the mark says how far apart its timings were.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from tuna.backends.base import UNSTABLE_SPREAD
from tuna.db import Database
from tuna.db.bulk import chunks
from tuna.db.models import Measurement

_CONFIGS_PER_QUERY = 900  # a key range per config on MariaDB (see tuna.library.effort)

__all__ = ["UNSTABLE_SPREAD", "Key", "Spread", "spreads_of", "timing_spreads", "unstable_note"]

Key = tuple[int, int, int, str]
"""A stored winner: (session, config, solver id, params; ``''`` for none)."""


@dataclass(frozen=True)
class Spread:
    """How many valid timings a stored winner has and how far apart they are."""

    timings: int
    ratio: float  # slowest over fastest (1.0 for one timing)

    @property
    def unstable(self) -> bool:
        return self.ratio > UNSTABLE_SPREAD

    def note(self) -> str:
        """``4 runs, spread 1.62x: unstable`` (``1 run`` when it was timed once)."""
        if self.timings == 1:
            return "1 run"
        return f"{self.timings} runs, spread {self.ratio:.2f}x" + (
            ": unstable" if self.unstable else ""
        )

    def as_dict(self) -> dict[str, Any]:
        return {"timings": self.timings, "spread": round(self.ratio, 4), "unstable": self.unstable}


def timing_spreads(s: Any, winners: Iterable[tuple[Key, float]]) -> dict[Key, Spread]:
    """The spread of each stored winner (its key and stored time) that has valid
    measurements; ``s`` is a session or a connection. Of a winner timed on several
    platforms, the platform whose fastest timing is nearest its stored time counts."""
    wanted: dict[Key, float] = {k: t for k, t in winners}
    by_config: defaultdict[int, set[Key]] = defaultdict(set)
    for key in wanted:
        by_config[key[1]].add(key)
    m = Measurement
    out: dict[Key, Spread] = {}
    nearest: dict[Key, float] = {}
    for part in chunks(sorted(by_config), _CONFIGS_PER_QUERY):
        keys = [k for c in part for k in by_config[c]]
        q = (
            select(
                m.session,
                m.config,
                m.solver,
                m.params,
                func.count(),
                func.min(m.time_ms),
                func.max(m.time_ms),
            )  # fmt: skip
            .where(
                m.session.in_(sorted({k[0] for k in keys})),
                m.config.in_(part),
                m.solver.in_(sorted({k[2] for k in keys})),
                m.params.in_(sorted({k[3] for k in keys})),
                m.valid.is_(True),
                m.time_ms > 0,
            )
            .group_by(m.session, m.config, m.solver, m.params, m.platform)
        )
        for session, config, solver, params, n, fastest, slowest in s.execute(q):
            key = (int(session), int(config), int(solver), str(params))
            if key not in wanted or fastest is None:
                continue
            off = abs(float(fastest) - wanted[key])
            if key in nearest and nearest[key] <= off:
                continue
            nearest[key] = off
            out[key] = Spread(int(n), float(slowest) / float(fastest))
    return out


def spreads_of(db: Database, winners: Iterable[tuple[Key, float]]) -> dict[Key, Spread]:
    """:func:`timing_spreads` in a session of its own (the report's)."""
    with db.session() as s:
        return timing_spreads(s, list(winners))


def unstable_note(spreads: Iterable[Spread], what: str = "winner") -> str:
    """``3 of 19 winners' timings unstable (their runs spread up to 1.62x: machine
    busy?); each time is its fastest run`` (empty when none is)."""
    found = list(spreads)
    bad = [x for x in found if x.unstable]
    if not bad:
        return ""
    worst = max(x.ratio for x in bad)
    return (
        f"timings unstable: {len(bad)} of {len(found)} {what}s' repeated runs spread more than "
        f"{UNSTABLE_SPREAD:g}x (up to {worst:.2f}x: machine busy?); each time is its fastest run"
    )
