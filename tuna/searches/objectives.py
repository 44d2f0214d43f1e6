"""A study's objectives as ``tuna.tune`` and ``tuna search create`` are given them: several
stats with directions, constraints, a baseline configuration, each checked into one line
before anything is written (:mod:`tuna.searchers.objective` holds what they mean)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tuna.searchers import Objective, Run
from tuna.searchers.errors import ObjectiveError, SearchError
from tuna.searchers.objective import make_objective


def study_objective(
    single: Objective,
    stat: str,
    directions: Mapping[str, str] | None,
    constraints: Sequence[str],
) -> Objective:
    """``single`` (one stat, one direction) with ``directions`` in place of it when given
    (``stat`` then left at its default, "value") and ``constraints`` added."""
    if directions is not None:
        if stat != "value":
            raise SearchError("give the objectives as directions= or as stat=, not both")
        if not isinstance(directions, Mapping):
            raise SearchError(
                f"directions {directions!r}: give a dict of stat -> 'min' or 'max', "
                "e.g. {'time_ms': 'min', 'accuracy': 'max'}"
            )
        return make_objective(directions, constraints)
    return make_objective({single.stat: single.goal}, constraints)


def baseline_config(
    baseline: Mapping[str, Any] | None, names: Iterable[str], objective: Objective
) -> dict[str, Any] | None:
    """The baseline configuration checked: a value of each parameter, JSON data; None when
    none is given, which no constraint may then compare with (``baseline.NAME``)."""
    names = sorted(names)
    if baseline is None:
        text = next((c.text for c in objective.constraints if c.baseline_stats), None)
        if text is not None:
            raise SearchError(
                f"constraint {text!r} compares with the baseline, but no baseline is given; "
                "name the configuration to compare with, e.g. baseline={'knob': 0}"
            )
        return None
    if not isinstance(baseline, Mapping) or not baseline:
        raise SearchError(
            f"baseline {baseline!r}: give the configuration to compare with, a value of "
            f"each parameter ({', '.join(names)})"
        )
    unknown = sorted(set(map(str, baseline)) - set(names))
    missing = sorted(set(names) - set(map(str, baseline)))
    if unknown or missing:
        what = f"names no parameter {unknown[0]!r}" if unknown else f"misses {missing[0]!r}"
        raise SearchError(
            f"baseline {dict(baseline)!r} {what}; give a value of each of the space's "
            f"parameters ({', '.join(names)})"
        )
    config = {str(k): v for k, v in baseline.items()}
    try:
        json.dumps(config)
    except (TypeError, ValueError) as e:
        raise SearchError(f"baseline: {e}; give numbers, strings or booleans") from e
    return config


def stored_objective(objective: Objective, baseline: Mapping[str, Any] | None) -> dict[str, Any]:
    """A search row's ``objective`` JSON: the objective's (:meth:`Objective.stored`) and
    the baseline configuration measured first as run -1 (none: left out), which the driver
    and the read side (:mod:`tuna.searches.query`) both take from there."""
    out = objective.stored()
    return out if baseline is None else {**out, "baseline": dict(baseline)}


def check_baseline_run(
    subject: str, config: Mapping[str, Any] | None, objective: Objective, base: Run
) -> None:
    """The baseline ran and printed every stat the objective names; else one line that
    starts with ``subject`` (``study 'name'``, ``search 3 (name)``)."""
    if not base.valid:
        raise SearchError(
            f"{subject}: the baseline {dict(config or {})!r} is invalid ({base.reason}); "
            "fix the objective or name another baseline"
        )
    try:
        objective.with_baseline(base.stats).check_stats([base.stats], whose="baseline")
    except ObjectiveError as e:
        raise SearchError(f"{subject}: {e}") from e
