"""Strategies for a tunable solver's space: which candidates to measure, round by round.

``exhaustive``, ``random``, ``grid``, ``hillclimb`` (local search), ``genetic``, ``model``
(a cost model: gradient-boosted trees, with ``transfer`` from other problems' measurements),
``predictive`` (a model per objective stat; only the predicted Pareto front is measured),
``sliced`` (objectives known before measuring, such as threads, split the budget into
slices; one cost model picks each slice's candidates),
and Optuna's samplers ``tpe``, ``cmaes``, ``gp`` and ``nsga2`` (:mod:`.sampled`, an extra).
Each is a dynamic searcher of :mod:`tuna.searchers` that proposes candidates in rounds
(:mod:`tuna.searchers.strategies.base`), so the one search driver runs them like any other
searcher. Make one by name with :func:`make_strategy`, or from the options a command was
given (:class:`StrategyOptions`, checked once)::

    space = CandidateSpace.from_strings(("MR", "NV", "VW", "KC", "NT", "LO", "PB"), candidates)
    searcher = make_strategy("model", space, budget=0.1, patience=32, seed=1,
                             features=problem_features, history=history, transfer=True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tuna.searchers.builtin import SearcherInterface
from tuna.searchers.costmodel import HistoryEntry, ModelLibraryMissing
from tuna.searchers.errors import SearchError
from tuna.searchers.objective import Objective
from tuna.searchers.space import ParameterSpace
from tuna.searchers.strategies.base import (
    BudgetError,
    CandidateSpace,
    Rounds,
    RoundSearcher,
    resolve_budget,
)
from tuna.searchers.strategies.classic import Exhaustive, Genetic, Grid, HillClimb, RandomSearch
from tuna.searchers.strategies.model import ModelSearch
from tuna.searchers.strategies.predictive import PredictiveSearch
from tuna.searchers.strategies.sampled import (
    SAMPLED,
    CmaEsSearch,
    GPSearch,
    NSGA2Search,
    SamplerLibraryMissing,
    TPESearch,
    check_sampler,
)
from tuna.searchers.strategies.sampled_space import SampledSpace
from tuna.searchers.strategies.sliced import SlicedSearch

STRATEGIES: dict[str, type[RoundSearcher]] = {
    s.name: s
    for s in (
        Exhaustive, RandomSearch, Grid, HillClimb, Genetic, ModelSearch,
        TPESearch, CmaEsSearch, GPSearch, NSGA2Search, PredictiveSearch, SlicedSearch,
    )
}  # fmt: skip


#: The strategies whose cost model learns from other problems' measurements (``transfer``).
LEARNS_HISTORY = ("model", "sliced")


class UnknownStrategyError(SearchError):
    """Raised when a strategy is named that does not exist."""


def make_strategy(
    name: str,
    space: CandidateSpace | ParameterSpace,
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
    the model's and ``sliced``'s (the others take no history: they are refused with
    ``transfer``; ``sliced`` also needs ``known=``, a candidate's known stats). A
    :class:`ParameterSpace` is searched as its candidates (:meth:`CandidateSpace.of`)."""
    cls = STRATEGIES.get(name)
    if cls is None:
        raise UnknownStrategyError(
            f"unknown strategy {name!r}; the strategies are {', '.join(STRATEGIES)}"
        )
    if isinstance(space, ParameterSpace):
        space = CandidateSpace.of(space)
    common: dict[str, Any] = {
        "budget": budget,
        "patience": patience,
        "round_size": round_size,
        "seed": seed,
        "objective": objective,
    }
    if cls is ModelSearch or cls is SlicedSearch:
        return cls(
            space, features=features, history=history, transfer=transfer, **common, **options
        )
    if transfer:
        raise SearchError(
            f"strategy {name!r} does not learn from history; --transfer is for 'model' and 'sliced'"
        )
    return cls(space, **common, **options)


def strategy_over(
    name: str,
    space: ParameterSpace,
    *,
    budget: int | float | None = None,
    seed: int = 0,
    round_size: int = 8,
    patience: int | None = None,
    objective: Objective | None = None,
    **options: Any,
) -> SearcherInterface:
    """The strategy ``name`` over a parameter file's space (a bench search's ``--searcher
    tpe``, ``tuna.tune(strategy="tpe")``). Optuna's samplers sample its parameters as
    declared (ranges, conditions, several objectives: :class:`.sampled_space.SampledSpace`),
    constraints and ``META_is_config_valid`` staying the proposer's. The others search the
    points of its cartesian product that its constraints accept
    (:meth:`CandidateSpace.of`, the one way from a declared space to candidates);
    ``META_is_config_valid`` stays the proposer's (it reads the whole config, base settings
    included), so a point it refuses is a failed candidate and the strategy proposes
    another. ``options`` are the strategy's own (``margin=0.02`` for ``predictive``)."""
    if name not in STRATEGIES:
        raise UnknownStrategyError(
            f"unknown strategy {name!r}; the strategies are {', '.join(STRATEGIES)}"
        )
    if name in SAMPLED:  # Optuna's own distributions: ranges, conditions, several objectives
        if patience is not None or isinstance(budget, float) or options:
            raise SearchError(
                f"{space.source}: strategy {name!r} over a parameter space takes a budget of "
                "runs (an int such as 40; a range has no size to take a share of), no "
                "patience and no other option; give budget=N, or the search's own budget"
            )
        return SampledSpace(
            name, space, objective=objective, budget=budget, seed=seed, round_size=round_size
        )
    candidates = CandidateSpace.of(space, who=f"strategy {name!r}")
    return make_strategy(
        name, candidates, budget=budget, seed=seed, round_size=round_size, patience=patience,
        objective=objective, **options,
    )  # fmt: skip


DEFAULT_SEED = 0
DEFAULT_ROUND_SIZE = 8


@dataclass(frozen=True)
class StrategyOptions:
    """Which strategy searches and how far: ``budget`` is a count of measurements or a share
    of the space (None: all of it), ``patience`` measurements in a row without improvement
    stop it, ``round_size`` candidates per round (one build, one job), ``transfer`` lets the
    model learn from other problems' measurements, ``remeasure`` times a candidate again
    though a session whose history counts measured it already (by default its stored time
    is the candidate's, and no job times it).

    Checked when made (one clear line for a bad value, :class:`SearchError`), so whoever
    receives one need not check it again. The budget against a space's size is checked
    where the space is known (:func:`tuna.searchers.strategies.resolve_budget`).
    """

    strategy: str
    budget: int | float | None = None
    patience: int | None = None
    seed: int = DEFAULT_SEED
    round_size: int = DEFAULT_ROUND_SIZE
    transfer: bool = False
    remeasure: bool = False

    def __post_init__(self) -> None:
        if self.round_size < 1:
            raise SearchError(f"--round-size {self.round_size}: give at least 1")
        if self.strategy not in STRATEGIES:
            raise UnknownStrategyError(
                f"unknown strategy {self.strategy!r}; the strategies are {', '.join(STRATEGIES)}"
            )
        budget = self.budget
        if budget is not None and (isinstance(budget, bool) or budget <= 0):
            raise SearchError(
                f"budget {budget:g}: give a count of measurements (e.g. 64) or a share of the "
                "space (e.g. 0.1)"
            )
        if isinstance(budget, float) and budget > 1:
            raise SearchError(f"budget {budget:g}: a share of the space is at most 1")
        if self.patience is not None and self.patience < 1:
            raise SearchError(
                f"patience {self.patience}: give at least 1 measurement, or leave it out"
            )
        if self.transfer and self.strategy not in LEARNS_HISTORY:
            raise SearchError(
                f"--transfer is for the model and sliced strategies; {self.strategy!r} learns "
                "from no history"
            )
        if self.strategy in ("model", "predictive", "sliced"):
            from tuna.searchers.costmodel import lightgbm

            lightgbm()  # ModelLibraryMissing names the extra to install
        if self.strategy in SAMPLED:
            check_sampler(self.strategy)  # SamplerLibraryMissing names the extra to install

    def to_json(self) -> dict[str, Any]:
        """The options as a session's default and a stored search's spec keep them
        (``remeasure`` only when asked: what was stored before it existed reads the same)."""
        stored = asdict(self)
        if not self.remeasure:
            del stored["remeasure"]
        return stored

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> StrategyOptions:
        """The options :meth:`to_json` stored (other keys of ``stored`` are left alone)."""
        return cls(
            strategy=str(stored["strategy"]),
            budget=stored.get("budget"),
            patience=stored.get("patience"),
            seed=int(stored.get("seed") or DEFAULT_SEED),
            round_size=int(stored.get("round_size") or DEFAULT_ROUND_SIZE),
            transfer=bool(stored.get("transfer")),
            remeasure=bool(stored.get("remeasure")),
        )

    def searcher(
        self,
        space: CandidateSpace,
        *,
        objective: Objective | None = None,
        features: Mapping[str, float] | None = None,
        history: Sequence[HistoryEntry] = (),
        **options: Any,
    ) -> RoundSearcher:
        """The strategy over ``space`` (:func:`tuna.searchers.strategies.make_strategy`)."""
        return make_strategy(
            self.strategy, space, budget=self.budget, patience=self.patience,
            round_size=self.round_size, seed=self.seed, objective=objective, features=features,
            history=history, transfer=self.transfer, **options,
        )  # fmt: skip


__all__ = [
    "DEFAULT_ROUND_SIZE",
    "DEFAULT_SEED",
    "STRATEGIES",
    "SAMPLED",
    "BudgetError",
    "CandidateSpace",
    "CmaEsSearch",
    "Exhaustive",
    "GPSearch",
    "Genetic",
    "Grid",
    "HillClimb",
    "HistoryEntry",
    "LEARNS_HISTORY",
    "ModelLibraryMissing",
    "ModelSearch",
    "NSGA2Search",
    "PredictiveSearch",
    "RandomSearch",
    "RoundSearcher",
    "Rounds",
    "SamplerLibraryMissing",
    "SlicedSearch",
    "StrategyOptions",
    "TPESearch",
    "UnknownStrategyError",
    "make_strategy",
    "resolve_budget",
    "strategy_over",
]
