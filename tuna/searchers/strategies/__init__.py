"""Strategies for a tunable solver's space: which candidates to measure, round by round.

``exhaustive``, ``random``, ``grid``, ``hillclimb`` (local search), ``genetic`` and ``model``
(a cost model: gradient-boosted trees, with ``transfer`` from other problems' measurements).
Each is a dynamic searcher of :mod:`tuna.searchers` that proposes candidates in rounds
(:mod:`tuna.searchers.strategies.base`), so the one search driver runs them like any other
searcher. Make one by name with :func:`make_strategy`::

    space = CandidateSpace.from_strings(("MR", "NV", "VW", "KC", "NT", "LO", "PB"), candidates)
    searcher = make_strategy("model", space, budget=0.1, patience=32, seed=1,
                             features=problem_features, history=history, transfer=True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tuna.searchers.costmodel import HistoryEntry, ModelLibraryMissing
from tuna.searchers.errors import SearchError
from tuna.searchers.objective import Objective
from tuna.searchers.strategies.base import (
    BudgetError,
    CandidateSpace,
    Rounds,
    RoundSearcher,
    resolve_budget,
)
from tuna.searchers.strategies.classic import Exhaustive, Genetic, Grid, HillClimb, RandomSearch
from tuna.searchers.strategies.model import ModelSearch

STRATEGIES: dict[str, type[RoundSearcher]] = {
    s.name: s for s in (Exhaustive, RandomSearch, Grid, HillClimb, Genetic, ModelSearch)
}


class UnknownStrategyError(SearchError):
    """Raised when a strategy is named that does not exist."""


def make_strategy(
    name: str,
    space: CandidateSpace,
    *,
    budget: int | float | None = None,
    patience: int | None = None,
    round_size: int = 8,
    seed: int = 0,
    objective: Objective | None = None,
    features: Mapping[str, float] | None = None,
    history: Sequence[HistoryEntry] = (),
    transfer: bool = False,
    **options: Any,
) -> RoundSearcher:
    """The strategy ``name`` over ``space``; ``features``, ``history`` and ``transfer`` are
    the model's (the others take no history: they are refused with ``transfer``)."""
    cls = STRATEGIES.get(name)
    if cls is None:
        raise UnknownStrategyError(
            f"unknown strategy {name!r}; the strategies are {', '.join(STRATEGIES)}"
        )
    common: dict[str, Any] = {
        "budget": budget,
        "patience": patience,
        "round_size": round_size,
        "seed": seed,
        "objective": objective,
    }
    if cls is ModelSearch:
        return ModelSearch(
            space, features=features, history=history, transfer=transfer, **common, **options
        )
    if transfer:
        raise SearchError(
            f"strategy {name!r} does not learn from history; --transfer is for 'model'"
        )
    return cls(space, **common, **options)


__all__ = [
    "STRATEGIES",
    "BudgetError",
    "CandidateSpace",
    "Exhaustive",
    "Genetic",
    "Grid",
    "HillClimb",
    "HistoryEntry",
    "ModelLibraryMissing",
    "ModelSearch",
    "RandomSearch",
    "RoundSearcher",
    "Rounds",
    "UnknownStrategyError",
    "make_strategy",
    "resolve_budget",
]
