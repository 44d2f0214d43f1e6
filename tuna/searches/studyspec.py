"""A study's inputs, checked: :func:`check_study` turns what ``tuna.tune`` and ``tuna.study``
were given into a :class:`StudySpec` before anything is opened or written (a SearchError
says what is wrong), and :class:`TuneResult` is what a study gives back."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tuna.searchers import Objective, Run, dry_run
from tuna.searchers.errors import SearchError
from tuna.searchers.params import Param
from tuna.searchers.pareto import Goal
from tuna.searchers.prune import Pruner
from tuna.searchers.space import ParameterSpace, parse_json_space
from tuna.searches.create import make_searcher
from tuna.searches.objectives import baseline_config, stored_objective, study_objective

DIRECTIONS = {"minimize": "min", "min": "min", "maximize": "max", "max": "max"}


@dataclass(frozen=True)
class TuneResult:
    """A study's outcome: its search id, every run in proposal order, the best that counts
    (with several objectives, the front's first: best by the first objective), the Pareto
    front of the runs that count (in that order; the baseline is one of them) and the
    baseline run, if one was named."""

    search: int
    name: str
    stat: str
    runs: list[Run]
    best: Run | None
    pareto: list[Run] = field(default_factory=list)
    baseline: Run | None = None
    reason: str | None = None  # why the study stopped early (its timeout), if it did

    @property
    def best_params(self) -> dict[str, Any] | None:
        return dict(self.best.config) if self.best is not None else None

    @property
    def best_value(self) -> float | None:
        return float(self.best.stats[self.stat]) if self.best is not None else None


@dataclass(frozen=True)
class StudySpec:
    """A study as checked: its name, space (parsed and as stored), strategy, objective,
    budget, baseline configuration and pruner."""

    name: str
    space: ParameterSpace
    space_text: str
    strategy: str | None
    objective: Objective
    budget: int | None
    baseline: dict[str, Any] | None = None
    pruner: Pruner | None = None

    @property
    def stored_objective(self) -> dict[str, Any]:
        """The search row's ``objective``: :meth:`Objective.stored` and the baseline's config."""
        return stored_objective(self.objective, self.baseline)


def check_study(
    objective: object,
    space: object,
    direction: str,
    strategy: str | None,
    budget: int | None,
    name: str | None,
    stat: str,
) -> StudySpec:
    """Every input checked before anything is opened or written; a SearchError says what.
    ``objective`` None: a study for ask and tell (its name must be given)."""
    if objective is not None and not callable(objective):
        raise SearchError(f"objective {objective!r} is not callable; give a function of params")
    if direction not in DIRECTIONS:
        raise SearchError(f"direction {direction!r}: use 'minimize' or 'maximize'")
    if budget is not None and (isinstance(budget, bool) or budget < 1):
        raise SearchError(f"budget {budget!r}: give at least 1 run, or None for no limit")
    if not isinstance(stat, str) or not stat.strip():
        raise SearchError(f"stat {stat!r}: name the stat the objective returns")
    study_name = name if name is not None else getattr(objective, "__name__", "")
    if not study_name.strip() or len(study_name) > 128:
        raise SearchError(f"study name {study_name!r}: give 1 to 128 characters (name=...)")
    if not isinstance(space, Mapping):
        raise SearchError(
            f"space {space!r}: give a dict of each parameter's values, e.g. {{'x': [1, 2, 4]}}"
        )
    try:
        text = json.dumps({str(k): _json_form(v) for k, v in space.items()})
    except (TypeError, ValueError) as e:
        raise SearchError(
            f"space: {e}; each parameter's values must be a list of numbers, strings or booleans"
        ) from e
    parsed = parse_json_space(text, source=f"{study_name}.json")
    goal: Goal = "max" if DIRECTIONS[direction] == "max" else "min"
    searcher = make_searcher(strategy, parsed, Objective(stat, goal))
    plan = dry_run(parsed, searcher)  # an empty parameter, a searcher that raises: refused now
    if not plan.proposals:
        raise SearchError(f"study {study_name!r}: the strategy proposes nothing to run")
    return StudySpec(study_name, parsed, text, strategy or None, Objective(stat, goal), budget)


def _json_form(value: Any) -> Any:
    """A space's value as its parameter file's JSON form (a range's object, else a list)."""
    if isinstance(value, Param):
        return value.to_json()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{value!r} is not a list of values or a range")
    return list(value)


def with_objectives(
    study: StudySpec,
    stat: str,
    directions: Mapping[str, str] | None,
    constraints: Sequence[str],
    baseline: Mapping[str, Any] | None,
) -> StudySpec:
    """The study with several objectives, constraints and a baseline, each checked."""
    if directions is None and not constraints and baseline is None:
        return study
    objective = study_objective(study.objective, stat, directions, constraints)
    config = baseline_config(baseline, study.space.names, objective)
    return replace(study, objective=objective, baseline=config)
