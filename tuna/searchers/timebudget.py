"""A search's wall-clock budget: ``--time-budget 10m`` and ``tuna.tune(timeout=...)``.

Once the budget is spent the search proposes nothing more: the runs in flight finish and
are recorded, the search ends ``done`` and its reason says the time ran out
(:meth:`TimeBudget.reason`). The clock is given (``time.monotonic`` by default), so the
logic is tested with a fake one.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tuna.searchers.errors import SearchError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([smhd]?)")


def parse_duration(text: str | float | int, what: str = "time budget") -> float:
    """Seconds of ``90``, ``"90"``, ``"90s"``, ``"10m"``, ``"1h30m"``, ``"2.5h"``, ``"1d"``
    (a bare number is seconds); a :class:`SearchError` unless it is finite and above 0."""
    if isinstance(text, bool):
        seconds = math.nan
    elif isinstance(text, int | float):
        seconds = float(text)
    else:
        compact = str(text).strip().lower().replace(" ", "")
        parts = list(_PART.finditer(compact))
        whole = "".join(m.group(0) for m in parts)
        seconds = math.nan
        if parts and whole == compact and (len(parts) == 1 or all(m.group(2) for m in parts)):
            seconds = sum(float(m.group(1)) * _UNITS[m.group(2) or "s"] for m in parts)
    if not (math.isfinite(seconds) and seconds > 0):
        raise SearchError(
            f"{what} {text!r}: give a duration above 0, e.g. 90 (seconds), 90s, 10m, 1h30m or 2h"
        )
    return seconds


def format_duration(seconds: float) -> str:
    """``600`` -> ``10m``, ``5400`` -> ``1h30m``, ``2.5`` -> ``2.5s``."""
    if seconds < 60 or seconds != int(seconds):
        return f"{seconds:g}s"
    out, left = "", int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            out += f"{left // size}{unit}"
            left %= size
    return out


@dataclass
class TimeBudget:
    """``seconds`` of wall-clock time, ``used`` of them spent before this clock started
    (a resumed search's)."""

    seconds: float
    used: float = 0.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def __post_init__(self) -> None:
        self._start = self.clock()

    @property
    def elapsed(self) -> float:
        return self.used + (self.clock() - self._start)

    @property
    def spent(self) -> bool:
        return self.elapsed >= self.seconds

    def reason(self, runs: int, what: str = "time budget") -> str:
        """What a search ended by its budget says: ``time budget of 10m spent after 12 run(s)``."""
        return f"{what} of {format_duration(self.seconds)} spent after {runs} run(s)"
