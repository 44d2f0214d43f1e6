"""Optuna's samplers over a parameter file's or a study's space: ranges, conditions, and
several objectives (issue #28).

:mod:`.sampled` searches a kernel's finite list of candidates. A parameter file's space
(:class:`~tuna.searchers.space.ParameterSpace`) may be infinite and conditional, so here each
parameter is Optuna's own distribution, suggested define-by-run in the space's order (a
conditional parameter only where its condition holds):

* a list of values: ``CategoricalDistribution``;
* ``Int(lo, hi, step, log)``: ``IntDistribution(lo, hi, step=step, log=log)``;
* ``Float(lo, hi, step, log)``: ``FloatDistribution(lo, hi, step=step, log=log)``.

With several objectives (``tuna.tune(directions=...)``) the study has one direction per
objective and each trial is told every objective's value: ``nsga2`` (NSGA-II) and ``tpe``
search for the Pareto front; ``cmaes`` optimises one objective only and is refused.

As in :mod:`.sampled`: a round of N points is N ``ask()``s before any result; a run that does
not count (invalid, refused by a constraint or ``META_is_config_valid``, an objective's stat
missing) is a failed trial; a point measured before is told its values and asked again,
:data:`~.sampled.ASKS` times at most, then a random point never measured takes its place (the
space's own sampling, seeded). Seeded, so a resumed study replays to the same place.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from tuna.searchers.builtin import Proposals, SearcherInterface
from tuna.searchers.errors import SearcherError, SearchError
from tuna.searchers.objective import Objective
from tuna.searchers.params import Categorical, Float, Int
from tuna.searchers.run import Point, Run
from tuna.searchers.space import MAX_REPEATS, ParameterSpace
from tuna.searchers.strategies.base import points_of
from tuna.searchers.strategies.sampled import (
    ASKS,
    check_objectives,
    check_sampler,
    make_sampler,
    optuna_module,
)


def _key(point: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, (isinstance(v, bool), v)) for k, v in point.items()))


class SampledSpace(SearcherInterface):
    """Optuna's sampler ``name`` over ``space``; see the module docstring. ``budget``: most
    points proposed (None: until a finite space is exhausted, or forever)."""

    def __init__(
        self,
        name: str,
        space: ParameterSpace,
        *,
        objective: Objective | None = None,
        budget: int | None = None,
        seed: int = 0,
        round_size: int = 8,
    ) -> None:
        check_sampler(name)
        if round_size < 1:
            raise SearcherError(f"{name}: round_size must be >= 1, not {round_size}")
        self.name, self.space, self.seed, self.round_size = name, space, seed, round_size
        self.budget = budget
        self.objective = objective or Objective("time_ms")
        check_objectives(name, len(self.objective.targets))
        self._optuna = optuna_module()
        self._order = space.ordered(space.names)
        for n in self._order:
            self._check(n)
        self._size = space.size() if space.finite else None
        self.best: Run | None = None

    @property
    def label(self) -> str:
        return self.name

    def _check(self, name: str) -> None:
        p = self.space.parameters[name]
        if isinstance(p, Categorical) and not p.choices:
            raise SearchError(
                f"{self.space.source}: strategy {self.name!r} chooses among listed values, "
                f"and {name} lists none; give its values"
            )
        if not isinstance(p, Categorical | Int | Float):
            raise SearchError(
                f"{self.space.source}: {name} is {p!r}, which {self.name} cannot sample"
            )

    @property
    def is_dynamic(self) -> bool:
        return True

    def rounds(self) -> Generator[list[Point], list[Run], None]:
        """Rounds of ``round_size`` points; each is sent the round's Runs (any order)."""
        optuna = self._optuna
        directions = [
            "maximize" if t.goal == "max" else "minimize" for t in self.objective.targets
        ]  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = make_sampler(self.name, seed=self.seed, round_size=self.round_size)
            study = optuna.create_study(directions=directions, sampler=sampler)
        rng = random.Random(self.seed)
        seen: dict[tuple[Any, ...], list[float] | None] = {}
        proposed = 0
        self.best = None
        while self.budget is None or proposed < self.budget:
            want = self.round_size if self.budget is None else self.budget - proposed
            taken: set[tuple[Any, ...]] = set()
            asked: list[tuple[Any, Point]] = []
            for _ in range(min(want, self.round_size)):
                slot = self._ask(study, seen, taken, rng)
                if slot is None:
                    break
                asked.append(slot)
                taken.add(_key(slot[1]))
            if not asked:
                return
            runs = yield [dict(p) for _, p in asked]
            proposed += len(asked)
            by_key = {_key({k: r.config.get(k) for k in p}): r for _, p in asked for r in runs}
            for trial, point in asked:
                run = by_key.get(_key(point))
                values = self._values(run)
                seen[_key(point)] = values
                self._tell(study, trial, values)
                if values is not None and run is not None and self._better(run):
                    self.best = run

    def _ask(
        self,
        study: Any,
        seen: Mapping[tuple[Any, ...], list[float] | None],
        taken: set[tuple[Any, ...]],
        rng: random.Random,
    ) -> tuple[Any, Point] | None:
        """One slot of a round: a trial and its point, never one measured or taken; None
        when a finite space has nothing left."""
        for _ in range(ASKS):
            trial = self._ask_trial(study)
            point = self._suggest(trial)
            key = _key(point)
            if key in seen:
                self._tell(study, trial, seen[key])  # measured before: its values, ask again
                continue
            if key in taken:
                self._tell(study, trial, None)
                continue
            return trial, point
        if self._size is not None and len(seen) + len(taken) >= self._size:
            return None
        for _ in range(MAX_REPEATS):  # the sampler keeps to measured points: a fresh one
            point = self.space.sample(rng)
            if _key(point) not in seen and _key(point) not in taken:
                study.enqueue_trial(point)
                trial = self._ask_trial(study)
                return trial, self._suggest(trial)
        return None

    def _ask_trial(self, study: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", self._optuna.exceptions.ExperimentalWarning)
            return study.ask()

    def _suggest(self, trial: Any) -> Point:
        point: Point = {}
        for name in self._order:
            p = self.space.parameters[name]
            if not p.active(point):
                continue
            if isinstance(p, Categorical):
                point[name] = trial.suggest_categorical(name, list(p.choices))
            elif isinstance(p, Int):
                point[name] = trial.suggest_int(name, p.lo, p.hi, step=p.step, log=p.log)
            elif isinstance(p, Float):
                point[name] = trial.suggest_float(name, p.lo, p.hi, step=p.step, log=p.log)
        return point

    def _values(self, run: Run | None) -> list[float] | None:
        if run is None or not self.objective.counts(run):
            return None
        return [float(run.stats[t.stat]) for t in self.objective.targets]

    def _tell(self, study: Any, trial: Any, values: Sequence[float] | None) -> None:
        if values is None:
            study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, list(values))

    def _better(self, run: Run) -> bool:
        if self.best is None:
            return True
        a, b = float(run.stats[self.objective.stat]), float(self.best.stats[self.objective.stat])
        return a < b if self.objective.goal == "min" else a > b

    def generate(self) -> Proposals:
        """The one-point protocol: each point of each round, each sent its Run."""
        return points_of(self.rounds(), self.name)

    def get_best(self) -> Point:
        """The best point measured so far by the first objective."""
        if self.best is None:
            raise SearcherError(f"{self.name}: no point measured so far counts")
        return {k: self.best.config[k] for k in self.best.config if k in self.space.parameters}
