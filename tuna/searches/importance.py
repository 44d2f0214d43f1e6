"""Which parameters decide a search's stat: each one's share of a cost model's split gain.

Tuna's gradient-boosted trees (:mod:`tuna.searchers.costmodel`) fitted to a search's best
finished runs (the runs its page draws in parallel coordinates), on the log of the stat when
every value is positive (:func:`parameter_importance`).

A fit of 300 runs takes 70-120 ms on a loaded machine, the first import of LightGBM (and
the SciPy it loads) 1-5 s, holding the interpreter's lock: a server calls
:func:`load_model_library` as it starts, and the dashboard fits in the background
(:meth:`tuna.dashboard.cache.WarmCache.peek`), never while a page waits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuna.db import Database
from tuna.searchers import costmodel
from tuna.searches.query import SearchSummary

MIN_RUNS = 8
"""Finished runs a fit needs at least."""


@dataclass(frozen=True)
class Importance:
    """Each column's share of the model's split gain (0 to 1), largest first, and which
    model that is, in words a page can show."""

    shares: list[tuple[str, float]]
    model: str


def load_model_library() -> bool:
    """Import the cost model's library now, not in the middle of serving; False when it is
    not installed (an importance then says how to install it)."""
    try:
        costmodel.lightgbm()
    except costmodel.ModelLibraryMissing:
        return False
    return True


def fitted_importance(
    runs: Sequence[tuple[Mapping[str, Any], float]], stat: str = "the stat"
) -> Importance | str:
    """Trees fitted to ``runs`` ((parameters, value) pairs) on the parameters that vary
    among them; a note instead when there is too little to fit or no LightGBM."""
    names = sorted({k for p, _ in runs for k in p
                    if len({repr(q.get(k)) for q, _ in runs}) > 1})  # fmt: skip
    if len(runs) < MIN_RUNS or not names:
        return f"needs {MIN_RUNS} finished runs over parameters that vary"
    codes: dict[str, dict[str, int]] = {}

    def num(name: str, v: Any) -> float:
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v)
        c = codes.setdefault(name, {})
        return float(c.setdefault(repr(v), len(c)))

    rows = [[num(n, p.get(n)) for n in names] for p, _ in runs]
    values = [v for _, v in runs]
    targets = [math.log(v) for v in values] if min(values) > 0 else values
    try:
        trees = costmodel.Trees(costmodel.Settings(trees=50, min_leaf=2)).fit(rows, targets)
    except costmodel.ModelLibraryMissing as e:
        return str(e)
    return Importance(
        _largest_first(costmodel.importance(trees, names)),
        f"gradient-boosted trees (Tuna's cost model) fitted to the best {len(runs)} runs' {stat}",
    )


def parameter_importance(
    db: Database, search: SearchSummary, best_runs: Sequence[tuple[Mapping[str, Any], float]]
) -> Importance | str:
    """The importance of ``search``'s parameters: a fit to ``best_runs`` ((parameters,
    value) of its best runs)."""
    del db
    return fitted_importance(best_runs, search.stat)


def _largest_first(found: Mapping[str, float]) -> list[tuple[str, float]]:
    return sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))
