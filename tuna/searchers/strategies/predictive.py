"""``predictive``: a cost model per objective stat; only the predicted front is measured.

PredTuner's way of tuning several objectives (speed against accuracy) when a measurement
is dear: measure a small **seed** set, fit one model per stat the objective needs (every
objective's stat, and the stats the constraints name), predict every candidate not
measured yet, and measure only the candidates **predicted on or near the front**. Each
round refits the models with what it measured, so a candidate predicted well but measured
poorly stops pulling its neighbours in, and the search ends when no unmeasured candidate
is predicted near the front any more (or the budget is spent).

* **Near**: with each objective as a value to minimise (a maximised stat negated) and
  scaled by its spread among the measured runs, a candidate's gap to a front point is what
  it must gain to beat that point on one objective (a tie is no escape: as fast as a
  front point and worse on the other objective is that far); it is near the front when
  its gap to every front point is at most ``margin``: ``margin=0`` measures the predicted
  front only, a larger margin forgives the model's error (and measures more). A stat
  measured at few distinct values (at most a quarter as many as measurements: a thread
  count) is predicted as the nearest of them, so that model noise makes no false ties.
  The predicted front is that of the measured runs and the candidates together, each
  meeting the constraints.
* **Constraints as predicted**: a candidate whose predicted stats fail a constraint is
  not measured. A constraint naming ``baseline.NAME`` is judged when the objective carries
  the baseline's stats (``tuna.tune`` and the queue's driver give them once it is
  measured); without them it is left to the measurement.
* The seed set is two rounds (at least 8 candidates), but at most half the budget (at
  least 4), so that a small budget leaves rounds for the models to choose.
* Each round measures the nearest candidates first (those on the predicted front, then by
  how far they are from it; trees predict plateaus, so equal gaps go in a seeded random
  order, not the space's). With one objective the front is the predicted best, and near
  means within ``margin`` of the spread of the measured values.
* The models are :mod:`tuna.searchers.costmodel`'s gradient-boosted trees (LightGBM, the
  ``model`` extra), one per stat: of its log where every measurement of it is positive
  (times, FLOPs: a few slow candidates would take the splits of raw values), else of its
  raw values; nearness is judged on the same scale. A minimised stat's log is capped at
  ``cap`` (4) times its best measurement, as the ``model`` strategy caps times: only the
  top of the ranking matters, so hopeless candidates all look alike to the trees. Spaces
  larger than ``sample`` candidates have a seeded sample of ``sample`` of their
  unmeasured candidates predicted each round.
* What the model predicted for each candidate it chose, when it chose it, is kept
  (:meth:`PredictiveSearch.predicted`): the validation stage
  (:mod:`tuna.searches.validation`) sets it beside what was measured.

Pure and seeded, like every strategy: the same Runs give the same proposals and the same
predictions, so a stored study replayed into a fresh one predicts what it predicted.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from tuna.searchers.costmodel import Encoder, Settings, Trees, lightgbm
from tuna.searchers.errors import SearcherError
from tuna.searchers.pareto import Target, nondominated
from tuna.searchers.run import Run
from tuna.searchers.strategies.base import CandidateSpace, Plan, RoundSearcher

#: Trees for a few dozen rows: shallow, few, leaves of two (as the model strategy's own).
_SETTINGS = Settings(trees=80, leaves=15, min_leaf=2)


class PredictiveSearch(RoundSearcher):
    """See the module docstring. ``seed_runs``: random candidates measured before any model
    (default: two rounds, at least 8, but at most half the budget and at least 4);
    ``margin``: how far from the predicted front, as a
    share of each objective's measured spread, a candidate may be and still be measured;
    ``sample``: the most unmeasured candidates predicted per round."""

    name = "predictive"

    def __init__(
        self,
        space: CandidateSpace,
        *,
        seed_runs: int | None = None,
        margin: float = 0.05,
        sample: int = 50_000,
        cap: float | None = 4.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(space, **kwargs)
        lightgbm()  # a missing library is an error now, not after the seed round
        if seed_runs is not None and (isinstance(seed_runs, bool) or seed_runs < 2):
            raise SearcherError(
                f"{self.name}: seed_runs {seed_runs!r}: give at least 2 (a model needs data)"
            )
        if isinstance(margin, bool) or not isinstance(margin, int | float) or not margin >= 0:
            raise SearcherError(
                f"{self.name}: margin {margin!r}: give a share of each objective's spread >= 0 "
                "(0: the predicted front only; 0.05: within 5% of it)"
            )
        if isinstance(sample, bool) or sample < 1:
            raise SearcherError(f"{self.name}: sample {sample!r}: give at least 1 candidate")
        default = min(max(8, 2 * self.round_size), max(4, self.budget // 2))
        self.seed_runs = min(seed_runs or default, len(space), self.budget)
        self.margin = float(margin)
        self.sample = sample
        self.targets: tuple[Target, ...] = self.objective.targets
        constrained = sorted({n for c in self.objective.constraints for n in c.stats})
        #: Every stat a model is fitted to: the objectives', then the constraints'.
        self.stats = list(dict.fromkeys([*(t.stat for t in self.targets), *constrained]))
        self._encoder = Encoder((), space.names)
        self._rows = [self._encoder.row({}, p) for p in space.points]
        self._predicted: dict[int, dict[str, float]] = {}
        self._logged: dict[str, bool] = {}  # stat -> its model learns log(value)
        self.cap = cap
        self._minimised = {t.stat for t in self.targets if t.goal == "min"}

    def _reset(self) -> None:
        super()._reset()
        #: candidate index -> its measured stats, for the runs valid with every model's stat.
        self.observed: dict[int, dict[str, float]] = {}
        self._predicted = {}

    def _note(self, i: int, run: Run) -> None:
        super()._note(i, run)
        if run.valid and all(_number(run.stats.get(n)) for n in self.stats):
            self.observed[i] = {n: float(run.stats[n]) for n in self.stats}

    # -- the models ----------------------------------------------------------------------------

    def predict(self, candidates: Sequence[int]) -> dict[int, dict[str, float]]:
        """Each candidate's stats as models fitted to the measurements so far predict them
        (an empty dict before two measurements hold every stat)."""
        known = sorted(self.observed)
        if len(known) < 2 or not candidates:
            return {}
        rows = [self._rows[i] for i in known]
        wanted = [self._rows[i] for i in candidates]
        columns: dict[str, list[float]] = {}
        for n in self.stats:
            targets = [self.observed[i][n] for i in known]
            self._logged[n] = all(v > 0 for v in targets)
            if self._logged[n]:  # times, FLOPs: the trees learn log(value)
                targets = [math.log(v) for v in targets]
                if n in self._minimised and self.cap is not None:  # only the top matters
                    limit = min(targets) + math.log(self.cap)
                    targets = [min(v, limit) for v in targets]
            trees = Trees(replace(_SETTINGS, seed=self.seed)).fit(rows, targets)
            guesses = trees.predict(wanted)
            columns[n] = [math.exp(g) for g in guesses] if self._logged[n] else guesses
            levels = sorted({self.observed[i][n] for i in known})
            if len(known) >= 8 and len(levels) <= len(known) // 4:  # a discrete stat
                columns[n] = [min(levels, key=lambda v: abs(v - g)) for g in columns[n]]
        return {
            c: {n: columns[n][j] for n in self.stats} for j, c in enumerate(candidates)
        }  # fmt: skip

    def predicted(self, point: Mapping[str, Any]) -> dict[str, float] | None:
        """What the models predicted for ``point`` when this search chose to measure it
        (None: a seed candidate, chosen at random, or not a candidate it chose)."""
        i = self.space.index(point)
        return None if i is None else self._predicted.get(i)

    def _meets(self, stats: Mapping[str, float]) -> bool:
        """Whether stats meet every constraint this search can judge (a ``baseline.NAME``
        one only when the objective carries the baseline's stats)."""
        base = self.objective.baseline
        return all(
            c.holds(stats, base) for c in self.objective.constraints if base or not c.baseline_stats
        )  # fmt: skip

    def _scale(self, stat: str, value: float) -> float:
        """A stat's value on the scale its model learnt: log for a stat measured positive."""
        return math.log(value) if self._logged.get(stat) and value > 0 else value

    def _key(self, stats: Mapping[str, float], scale: Sequence[float]) -> tuple[float, ...]:
        return tuple(
            (self._scale(t.stat, stats[t.stat]) * (1 if t.goal == "min" else -1)) / s
            for t, s in zip(self.targets, scale, strict=True)
        )

    def gaps(self, predictions: Mapping[int, Mapping[str, float]]) -> dict[int, float]:
        """How far each unmeasured candidate predicted to meet the constraints is from the
        predicted front: the most a front point beats it by on every objective at once, in
        spreads (0: on the front). ``predictions`` holds the measured candidates too: the
        front is drawn through every candidate's prediction, the measured ones' included
        (a model's prediction shrinks towards the mean, so a measured extreme would look
        out of reach of every prediction), of those measured to meet the constraints."""
        scale = []
        for t in self.targets:
            values = [self._scale(t.stat, s[t.stat]) for s in self.observed.values()]
            spread = max(values) - min(values) if values else 0.0
            scale.append(spread if spread > 0 else 1.0)
        keys = {
            c: self._key(p, scale)
            for c, p in predictions.items()
            if self._meets(self.observed.get(c, p))
        }
        front = nondominated(keys.values())
        return {c: max(_gap(k, f) for f in front)
                for c, k in keys.items() if c not in self.measured}  # fmt: skip

    # -- the plan ------------------------------------------------------------------------------

    def _plan(self) -> Plan:
        rng = random.Random(self.seed)
        order = list(range(len(self.space)))
        rng.shuffle(order)
        tie = {c: k for k, c in enumerate(order)}  # trees predict plateaus: ties go at random
        seed = order[: self.seed_runs]
        for start in range(0, len(seed), self.round_size):
            yield seed[start : start + self.round_size]
        while len(self.measured) < len(self.space):
            left = self.unmeasured()
            if len(left) > self.sample:
                left = sorted(rng.sample(left, self.sample))
            predictions = self.predict([*left, *sorted(self.observed)])
            if not predictions:
                self.stop_reason = (
                    f"fewer than 2 of the {len(self.measured)} seed measurements hold every "
                    f"stat the models need ({', '.join(self.stats)}): nothing to predict from"
                )
                return
            gaps = self.gaps(predictions)
            near = sorted((g, tie[i], i) for i, g in gaps.items() if g <= self.margin)
            if not near:
                self.stop_reason = (
                    f"no unmeasured candidate is predicted within {self.margin:g} of the front"
                )
                return
            chosen = [i for _, _, i in near[: self.round_size]]
            for i in chosen:
                self._predicted[i] = predictions[i]
            yield chosen


def _gap(key: Sequence[float], front: Sequence[float]) -> float:
    """How far a candidate (``key``, to minimise, in spreads) is from escaping a front point:
    negative when it beats the point on some objective (by how much), else the least it
    must gain on one objective where it is worse (0: equal on all). A tie is no escape: a
    candidate as fast as a front point and slower on the other objective is that far."""
    diffs = [a - b for a, b in zip(key, front, strict=True)]
    if min(diffs) < 0:
        return min(diffs)
    worse = [d for d in diffs if d > 0]
    return min(worse) if worse else 0.0


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
