"""``model``: a cost model ranks the unmeasured candidates; each round measures its best.

The model (:mod:`tuna.searchers.costmodel`: gradient-boosted trees over the problem's features
and the parameters) is trained on this problem's measurements so far and, with
``transfer``, on other problems' measurements given as ``history`` (a plain list of
``(problem features, params, time)``; which problems and platforms are compatible is the
caller's choice, e.g. a database query).

* With transfer, a **base** model is fitted once on the other problems; the first round is
  its predicted best. Each later round fits a small model of what the base model gets wrong
  on this problem (its residuals on the measurements so far) and ranks by their sum.
* Without transfer (or with no compatible history: :attr:`ModelSearch.notes` says so and it
  falls back), the first round is random (seeded) and each later round is ranked by a model
  of this problem's measurements alone.
* The trees learn ``log(time / best)``, capped at ``log(cap)`` (4x slower): only the top
  of the ranking matters to a search, so hopeless candidates all look alike to them.
  ``derive`` adds the backend's features of a candidate on a problem (for cpuconv, the
  share of a register tile that falls off the matrix's edge, ...).
* Each round takes the ``round_size - explore`` best-ranked candidates and ``explore``
  random others (a model is only as good as where it has seen data).
* **Final validation**: nothing predicted is ever a result. The best is the best
  *measured* candidate, and when early stopping ends the search, one last round measures
  the model's predicted-best candidates still unmeasured (``validate`` of them) before it
  is over.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Mapping, Sequence

from tuna.searchers.costmodel import (
    Derive,
    Encoder,
    HistoryEntry,
    Settings,
    Trees,
    capped_log_times,
    lightgbm,
    problem_key,
    shares,
    split_gains,
)
from tuna.searchers.errors import SearcherError
from tuna.searchers.strategies.base import CandidateSpace, Plan, RoundSearcher

log = logging.getLogger(__name__)


class ModelSearch(RoundSearcher):
    """See the module docstring. ``features``: this problem's features (numbers by name);
    ``derive(features, params)``: the backend's features of a candidate on a problem
    (:data:`~tuna.searchers.costmodel.Derive`), for this problem and the history's alike."""

    name = "model"

    def __init__(
        self,
        space: CandidateSpace,
        *,
        features: Mapping[str, float] | None = None,
        history: Sequence[HistoryEntry] = (),
        transfer: bool = False,
        explore: int = 1,
        validate: int | None = None,
        settings: Settings | None = None,
        derive: Derive | None = None,
        cap: float | None = 4.0,
        **kwargs: object,
    ) -> None:
        super().__init__(space, **kwargs)  # type: ignore[arg-type]
        lightgbm()  # a missing library is an error now, not after the first round
        explore = max(0, min(explore, self.round_size - 1))
        self.features = {k: float(v) for k, v in (features or {}).items()}
        self.transfer = transfer
        self.cap = cap
        self.explore = explore
        self.validate = self.round_size if validate is None else validate
        self.settings = settings or Settings(seed=self.seed)
        names: list[str] = []
        if derive is not None:
            names = sorted(derive(self.features, space.points[0]))
        self.encoder = Encoder(sorted(self.features), space.names, derive, names)
        self.notes: list[str] = []
        self.own_history, self.other_history = self._split(history)
        self._candidate_rows = [self.encoder.row(self.features, p) for p in space.points]
        self._base: list[float] | None = None
        self._base_trees: Trees | None = None
        self._ranking: list[int] = []

    def _split(
        self, history: Sequence[HistoryEntry]
    ) -> tuple[list[HistoryEntry], list[HistoryEntry]]:
        """This problem's earlier measurements, and the compatible ones of other problems."""
        own: list[HistoryEntry] = []
        other: list[HistoryEntry] = []
        wrong = 0
        me = problem_key(self.features)
        names = set(self.space.names)
        for entry in history:
            feats, params, t = entry
            if (
                set(params) != names
                or set(feats) != set(self.features)
                or not isinstance(t, int | float)
                or not t > 0
                or not math.isfinite(t)
            ):
                wrong += 1
                continue
            (own if problem_key(feats) == me else other).append(entry)
        if self.transfer and not other:
            why = (
                f"none of the {len(history)} measurements given is of another problem with the "
                f"parameters {','.join(self.space.names)} and the features "
                f"{','.join(sorted(self.features)) or '(none)'}"
                if history
                else "no measurements of other problems were given"
            )
            self.notes.append(
                f"transfer: no compatible history ({why}); the model learns from this "
                "problem's measurements alone"
            )
            log.warning("%s: %s", self.space.source, self.notes[-1])
        elif wrong:
            self.notes.append(f"history: {wrong} measurement(s) of other spaces left out")
        return own, other if self.transfer else []

    # -- the model ------------------------------------------------------------------------------

    def _fit_base(self) -> list[float] | None:
        """The transfer model's prediction for every candidate (None without transfer)."""
        if not self.other_history:
            return None
        groups: dict[tuple[tuple[str, float], ...], list[HistoryEntry]] = {}
        for entry in self.other_history:
            groups.setdefault(problem_key(entry[0]), []).append(entry)
        rows: list[list[float]] = []
        targets: list[float] = []
        for entries in groups.values():
            rows += [self.encoder.row(f, p) for f, p, _ in entries]
            targets += capped_log_times([t for _, _, t in entries], self.cap)
        self._base_trees = Trees(self.settings).fit(rows, targets)
        return self._base_trees.predict(self._candidate_rows)

    def _target(self, score: float) -> float:
        """What the trees learn of a measured score: log(time), or -log(value) for a stat
        to maximise; both smaller-is-better, like the scores."""
        value = score if self.objective.goal == "min" else -score
        if not value > 0:
            raise SearcherError(
                f"{self.name}: the objective's {self.objective.stat} = {value!r}; the cost model "
                "learns positive values only (a time, a rate): pick another strategy"
            )
        return math.log(value) if self.objective.goal == "min" else -math.log(value)

    def _correction(self) -> Trees | None:
        """The trees fitted to this problem's measurements so far: the base model's
        residuals with transfer, else the centred targets themselves; None before any."""
        measured = [(i, s) for i, s in self.measured.items() if s is not None]
        # Earlier measurements of this problem (e.g. an interrupted search) count as own data.
        rows = [self._candidate_rows[i] for i, _ in measured]
        logs = [self._target(s) for _, s in measured]
        for f, p, t in self.own_history:
            rows.append(self.encoder.row(f, p))
            logs.append(math.log(t))
        if not rows:
            return None
        if self.cap is not None:  # the same scale as the base model's targets
            best, limit = min(logs), math.log(self.cap)
            logs = [min(y - best, limit) for y in logs]
        base = self._base
        if base is not None:
            # Residuals of the base model, centred: it ranks, the offset does not matter.
            prior = [base[i] for i, _ in measured] + self._base_of_own()
            offset = sum(y - b for y, b in zip(logs, prior, strict=True)) / len(logs)
            resid = [y - offset - b for y, b in zip(logs, prior, strict=True)]
            small = Settings(trees=40, leaves=7, min_leaf=2, seed=self.settings.seed)
            return Trees(small).fit(rows, resid)
        mean = sum(logs) / len(logs)
        own = Settings(trees=60, leaves=15, min_leaf=2, seed=self.settings.seed)
        return Trees(own).fit(rows, [y - mean for y in logs])

    def rank(self, rng: random.Random) -> tuple[list[int], bool]:
        """The unmeasured candidates, predicted best first, by a model of what this search
        measured (its rounds', or Runs given to :meth:`take`) and, with transfer, of the
        history; False when nothing informs the order yet, which is then ``rng``'s. For a
        strategy that chooses among the ranking itself (``sliced``)."""
        if self._base is None and self.other_history:
            self._base = self._fit_base()
        return self._rank(rng)

    def _rank(self, rng: random.Random) -> tuple[list[int], bool]:
        """Unmeasured candidates, predicted best first; False when nothing informs the order
        yet (no measurement, no transfer), which is then random."""
        base = self._base
        left = self.unmeasured()
        fix = self._correction()
        if fix is not None:
            pred = fix.predict([self._candidate_rows[i] for i in left])
            if base is not None:
                pred = [base[i] + r for i, r in zip(left, pred, strict=True)]
        elif base is not None:
            pred = [base[i] for i in left]
        else:
            order = list(left)
            rng.shuffle(order)
            return order, False
        return [i for _, i in sorted(zip(pred, left, strict=True))], True

    def importance(self) -> dict[str, float]:
        """Each column of the model that would rank the next round (:attr:`Encoder.columns`:
        the problem's features, the parameters, the derived features) and its share of the
        split gain of that model's trees: the base model's (with transfer) and the ones
        fitted to this problem's measurements so far, together. All 0 before any data."""
        if self._base is None and self.other_history:
            self._base = self._fit_base()
        columns = self.encoder.columns
        gains = dict.fromkeys(columns, 0.0)
        for trees in (self._base_trees, self._correction()):
            if trees is not None:
                for c, g in split_gains(trees, columns).items():
                    gains[c] += g
        return shares(gains)

    def _base_of_own(self) -> list[float]:
        if not self.own_history or self._base is None:
            return []
        rows = [self.encoder.row(f, p) for f, p, _ in self.own_history]
        # The base model's prediction for rows that are not candidates of this space.
        index = {tuple(r): i for i, r in enumerate(self._candidate_rows)}
        out = []
        for r in rows:
            i = index.get(tuple(r))
            if i is None:
                raise SearcherError(
                    f"{self.space.source}: a recorded measurement of this problem, "
                    f"{dict(zip(self.encoder.columns, r, strict=True))}, is not a candidate of "
                    "the space; the space changed since — search again without that history"
                )
            out.append(self._base[i])
        return out

    # -- the plan -------------------------------------------------------------------------------

    def _plan(self) -> Plan:
        rng = random.Random(self.seed)
        self._base = self._fit_base()
        while len(self.measured) < len(self.space):
            ranking, informed = self._rank(rng)
            self._ranking = ranking
            take = self.round_size - self.explore if informed else 0
            round_ = ranking[:take]
            rest = ranking[take:]
            extra = rng.sample(rest, min(self.round_size - len(round_), len(rest)))
            yield round_ + extra

    def _final_round(self) -> list[int]:
        """Final validation: the predicted-best candidates not measured yet."""
        if not self.validate:
            return []
        ranking, informed = self._rank(random.Random(self.seed + 1))
        return ranking[: self.validate] if informed else []

    def predicted_best(self, count: int = 1) -> list[str]:
        """The candidates the latest model ranked best (unmeasured), written as text."""
        return [self.space.text(i) for i in self._ranking[:count]]
