"""A trial of a ``tuna.tune`` study: the point asked (:class:`Trial`), its progress (the
intermediate values the objective reports and the study's pruner's verdict:
``trial.report``, ``trial.should_prune``), the input set it measures on (``trial.inputs``)
and one call of the objective as a Run (:func:`measure_call`).

``objective(params, trial)`` may call ``trial.report(step, value)`` as it makes progress
(a loss after each epoch) and ``trial.should_prune()`` after each report: True when the
study's pruner (``pruner="median" | "halving"``, :mod:`tuna.searchers.prune`) judges the
run hopeless against the study's other runs. The objective then raises (or returns)
``tuna.Pruned``: the run is recorded pruned, with the pruner's reason and the values it
reported, and the study goes on. Without a pruner ``should_prune()`` is always False; the
values are stored all the same. With ask and tell, ``study.tell(trial, tuna.Pruned)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tuna.searchers.errors import SearchError
from tuna.searchers.function import stats_of, takes_trial
from tuna.searchers.pareto import Goal
from tuna.searchers.prune import Peer, Pruned, Pruner
from tuna.searchers.run import Run

ObjectiveFn = Callable[..., float | Mapping[str, Any]]  # (params) or (params, trial)
#: The input set a study's runs measure on (``trial.inputs``); a validation stage names
#: another (:mod:`tuna.searches.validation`: ``"test"`` by default).
TUNING_INPUTS = "tune"


class TrialProgress:
    """One trial's ``intermediate`` values (step -> value) and the pruner's ``verdict``
    after the last report (None: go on), judged against ``peers``."""

    def __init__(
        self, pruner: Pruner | None = None, goal: Goal = "min", peers: Sequence[Peer] = ()
    ) -> None:
        self.intermediate: dict[int, float] = {}
        self.verdict: str | None = None
        self._pruner = pruner
        self._goal = goal
        self._peers = peers

    def report(self, step: int, value: float) -> None:
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise SearchError(f"trial.report: step {step!r}: give an integer >= 0")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SearchError(f"trial.report: value {value!r} at step {step}: give a number")
        if not math.isfinite(value):
            raise SearchError(f"trial.report: value {value!r} at step {step}: give a finite number")
        before = dict(self.intermediate)
        self.intermediate[step] = float(value)
        if self._pruner is not None:
            self.verdict = self._pruner.judge(step, float(value), before, self._peers, self._goal)

    def pruned_reason(self) -> str:
        """Why the run counts as pruned (the pruner's verdict, or the objective's own call)."""
        if self.verdict is not None:
            return self.verdict
        last = max(self.intermediate) if self.intermediate else None
        where = f" at step {last}" if last is not None else ""
        return f"pruned by the objective{where}"


@dataclass(frozen=True)
class Trial:
    """One point asked of a study: ``params`` to measure, ``number`` its run's ``seq``;
    ``report`` its progress, and ask whether to stop (:mod:`tuna.searches.trial`).
    ``inputs`` names the input set to measure on: ``"tune"`` while tuning, the validation
    stage's (``"test"``) when the front is measured again on inputs the tuning never saw."""

    search: int
    number: int
    params: dict[str, Any]
    progress: TrialProgress = field(default_factory=TrialProgress, compare=False, repr=False)
    inputs: str = TUNING_INPUTS

    def report(self, step: int, value: float) -> None:
        """The objective's value after ``step`` (an integer >= 0; a later report of the same
        step replaces it), judged by the study's pruner at once."""
        self.progress.report(step, value)

    def should_prune(self) -> bool:
        """Whether the pruner judged the last report hopeless: raise ``tuna.Pruned`` then."""
        return self.progress.verdict is not None

    @property
    def intermediate(self) -> dict[int, float]:
        """The values reported so far, by step."""
        return self.progress.intermediate


def measure_call(objective: ObjectiveFn, trial: Trial, stat: str) -> tuple[Run, bool]:
    """One call of the objective (given the trial if it takes one) as a Run: what it
    returned, or why it is invalid; and whether it was pruned."""
    params = trial.params
    try:
        out = objective(dict(params), trial) if takes_trial(objective) else objective(dict(params))
    except Pruned:
        return Run.invalid(params, trial.progress.pruned_reason()), True
    except Exception as e:  # the user's code: an invalid run, the search goes on
        return Run.invalid(params, f"objective raised {type(e).__name__}: {e}"), False
    if out is Pruned or isinstance(out, Pruned):
        return Run.invalid(params, trial.progress.pruned_reason()), True
    stats = stats_of(out, stat)
    if isinstance(stats, str):
        return Run.invalid(params, f"objective {stats}"), False
    return Run(params, stats), False
