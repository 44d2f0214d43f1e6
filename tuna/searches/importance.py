"""Which parameters decide a search's stat: each one's share of a cost model's split gain.

Two models answer (:func:`parameter_importance`), both Tuna's gradient-boosted trees
(:mod:`tuna.searchers.costmodel`):

* a search of the ``model`` strategy is asked what its **own model** learnt: the strategy is
  made again as its driver makes it (its history as it was when the search was created,
  with ``transfer`` its base model of other problems), sent every run the search has
  recorded, and its trees that would rank the next round give the shares
  (:meth:`~tuna.searchers.strategies.ModelSearch.importance`). Their columns are the
  problem's features (they vary only across the problems of a transfer), the candidate's
  parameters and the features the backend derives from both;
* any other search: trees fitted here to its best finished runs (the runs its page draws in
  parallel coordinates), on the log of the stat when every value is positive.

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

from sqlalchemy import select

from tuna.db import Database
from tuna.db.models import Search, SearchRun
from tuna.searchers import costmodel
from tuna.searchers.strategies import ModelSearch
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


def strategy_importance(db: Database, search_id: int) -> Importance | str | None:
    """What the ``model`` strategy of search ``search_id`` learnt (see the module
    docstring); None when the search is not of that strategy."""
    from tuna.searches.runrows import run_of
    from tuna.searches.strategy import OBJECTIVE, is_strategy, make_searcher_for

    with db.session() as s:
        row = s.get(Search, search_id)
        if row is None or not is_strategy(row.spec) or row.spec.get("strategy") != "model":
            return None
        session, spec = row.session, dict(row.spec)
        ended = s.execute(
            select(SearchRun.config, SearchRun.stats, SearchRun.valid, SearchRun.reason)
            .where(SearchRun.search == search_id, SearchRun.valid.is_not(None))
            .order_by(SearchRun.seq)
        ).all()
    try:
        model = make_searcher_for(db, session, spec)
    except costmodel.ModelLibraryMissing as e:
        return str(e)
    if not isinstance(model, ModelSearch):
        return None
    runs = [run_of(r) for r in ended]
    counting = [r for r in runs if OBJECTIVE.counts(r)]
    history = len(model.other_history)
    if not counting and not history:
        return "the model strategy has measured nothing yet"
    model.take(runs)
    found = model.importance()
    params = set(model.space.names)
    shown = {c: v for c, v in found.items() if c in params or v > 0}
    return Importance(
        _largest_first(shown),
        f"the model strategy's own cost model, trained on this search's {len(counting)} "
        "valid measurements"
        + (f" on top of its base model of {history} measurements of other problems"
           if history else "")
        + " (problem.* and derived.* are the features it reads besides the parameters)",
    )  # fmt: skip


def parameter_importance(
    db: Database, search: SearchSummary, best_runs: Sequence[tuple[Mapping[str, Any], float]]
) -> Importance | str:
    """The importance of ``search``'s parameters: its model strategy's own model where it
    has one, else a fit to ``best_runs`` ((parameters, value) of its best runs)."""
    if search.searcher == "model":
        own = strategy_importance(db, search.id)
        if own is not None:
            return own
    return fitted_importance(best_runs, search.stat)


def _largest_first(found: Mapping[str, float]) -> list[tuple[str, float]]:
    return sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))
