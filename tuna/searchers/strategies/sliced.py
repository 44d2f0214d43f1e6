"""``sliced``: objectives known before measuring split the budget; one model ranks them all.

Some objectives are not measured: a backend computes them from a candidate's parameters
(``Backend.candidate_stats``: cpuconv's ``threads`` is its ``NT``, its ``workspace_bytes``
follows from the tile sizes). With ``time_ms:min`` measured and ``threads:min`` known, the
Pareto front is *the fastest candidate of each thread count* that no fewer-thread
candidate beats, so a two-objective sampler spends measurements learning what is known,
and a search of time alone spends them all where the fastest candidates are and may never
find the fastest of a slower thread count. This strategy uses what is known instead:

* the candidates are split into **slices** by the values of the known objectives (one
  slice per thread count); a candidate whose known stats fail a constraint that names
  only known stats is never measured;
* the **budget is shared** among the slices in proportion to their sizes (at least one
  measurement each, so more slices than the budget is refused), and every round gives
  each slice still searching its share of the round (``round_size`` split evenly, the
  remainder in turn), so the slices advance together and a search cut short has looked
  at all of them;
* **one cost model** (the ``model`` strategy's, :class:`~.model.ModelSearch`, with the
  problem's ``features``, ``derive``, ``explore`` and, with ``transfer``, other problems'
  ``history``) learns the measured objective from every measurement of every slice, and
  each slice's share of a round is its best-ranked unmeasured candidates (``explore`` of
  each round random, given to the slices in turn; a first round with nothing to learn
  from is random). One model, not one per slice: what makes a candidate fast mostly
  carries over between thread counts, and a slice's model would learn from half the data;
  on cpuconv's tables independent searches per slice found less of the front than one
  search of the whole space did (bench/search.md, "Two objectives");
* the answer is the front of what was measured (the driver's, as for any strategy);
  :meth:`get_best` is the best by the measured objective. When ``patience`` ends the
  search, one last round measures each slice's predicted-best candidates not measured
  yet (the model's final validation, slice by slice).

``known`` says which objectives are known: a function from a candidate to its known stats
(a strategy search passes the backend's ``candidate_stats`` on its problem). One
objective must be measured and the others known, else it is refused in one line; with
one objective there is one slice, and it is the ``model`` strategy. Needs LightGBM (the
``model`` extra). Pure and seeded: the same Runs give the same rounds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuna.searchers.costmodel import HistoryEntry, lightgbm
from tuna.searchers.errors import SearcherError
from tuna.searchers.objective import Objective
from tuna.searchers.pareto import Target
from tuna.searchers.run import Run
from tuna.searchers.strategies.base import CandidateSpace, Plan, RoundSearcher
from tuna.searchers.strategies.model import ModelSearch

#: A candidate's stats known without measuring it (``Backend.candidate_stats`` on a problem).
Known = Callable[[Mapping[str, Any]], Mapping[str, float]]


@dataclass(frozen=True)
class Slice:
    """The candidates (indices of the whole space) whose known objectives have ``values``,
    and the measurements the budget gives them."""

    values: tuple[float, ...]
    members: tuple[int, ...]
    budget: int


class SlicedSearch(RoundSearcher):
    """See the module docstring. ``known``: a candidate's stats known before measuring;
    ``features``, ``history``, ``transfer`` and ``options`` (``derive=``, ``explore=``, ...)
    are the cost model's (:class:`~.model.ModelSearch`)."""

    name = "sliced"

    def __init__(
        self,
        space: CandidateSpace,
        *,
        known: Known | None = None,
        features: Mapping[str, float] | None = None,
        history: Sequence[HistoryEntry] = (),
        transfer: bool = False,
        budget: int | float | None = None,
        patience: int | None = None,
        round_size: int = 8,
        seed: int = 0,
        objective: Objective | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            space, budget=budget, patience=patience, round_size=round_size, seed=seed,
            objective=objective,
        )  # fmt: skip
        lightgbm()  # a missing library is an error now, not at the first round
        if known is None:
            raise SearcherError(
                f"{self.name}: {space.source}: no stats are known here before measuring (a "
                "strategy search of a backend's solver space has its candidate_stats); pick "
                "another strategy"
            )
        self.known = known
        self.measured_target, self.known_targets = self._split_targets()
        self._model_options: dict[str, Any] = {
            "features": features, "history": history, "transfer": transfer, **options,
        }  # fmt: skip
        self.slices = self._slices()
        self.model = self._new_model()  # its own checks and notes now, not at the first round

    @property
    def notes(self) -> list[str]:
        """What the cost model said of its history (transfer found none, ...)."""
        return self.model.notes

    def _split_targets(self) -> tuple[Target, tuple[Target, ...]]:
        """The one objective measured, and those ``known`` gives."""
        stats = self.known(self.space.points[0])
        measured = [t for t in self.objective.targets if t.stat not in stats]
        if len(measured) != 1:
            which = ", ".join(str(t) for t in measured) or "none"
            raise SearcherError(
                f"{self.name}: {self.space.source}: one objective must be measured and the "
                f"others known before measuring (known: {', '.join(sorted(stats)) or 'none'}); "
                f"the measured ones here are {which}: measure one (time_ms:min), or pick "
                "another strategy"
            )
        return measured[0], tuple(t for t in self.objective.targets if t.stat in stats)

    def _slices(self) -> list[Slice]:
        """The candidates by their known objectives' values, each slice's share of the budget."""
        names = set(self.known(self.space.points[0]))
        judged = [
            c for c in self.objective.constraints if not c.baseline_stats and set(c.stats) <= names
        ]  # fmt: skip
        by_values: dict[tuple[float, ...], list[int]] = {}
        for i, point in enumerate(self.space.points):
            stats = self.known(point)
            if all(c.holds(stats, None) for c in judged):
                values = tuple(float(stats[t.stat]) for t in self.known_targets)
                by_values.setdefault(values, []).append(i)
        if not by_values:
            raise SearcherError(
                f"{self.name}: {self.space.source}: no candidate meets the constraints "
                f"{'; '.join(c.text for c in judged)} (their stats are known before "
                "measuring); loosen them"
            )
        if len(by_values) > self.budget:
            raise SearcherError(
                f"{self.name}: {self.space.source}: the known objectives "
                f"({', '.join(t.stat for t in self.known_targets)}) take {len(by_values)} "
                f"values, more than the budget of {self.budget} measurements (each slice "
                "needs one); give a larger budget, or pick another strategy"
            )
        members = [tuple(m) for _, m in sorted(by_values.items())]
        shares = share(self.budget, [len(m) for m in members])
        return [Slice(v, m, b) for v, m, b in zip(sorted(by_values), members, shares, strict=True)]

    def _new_model(self) -> ModelSearch:
        """The cost model of the measured objective (the constraints' runs count as there)."""
        t = self.measured_target
        return ModelSearch(
            self.space,
            seed=self.seed,
            round_size=self.round_size,
            objective=Objective(
                t.stat,
                t.goal,
                self.objective.validity,
                constraints=self.objective.constraints,
                baseline=self.objective.baseline,
            ),
            **self._model_options,
        )

    # -- the plan -------------------------------------------------------------------------------

    def _note(self, i: int, run: Run) -> None:
        super()._note(i, run)
        self.model.take([run])  # the model learns each run as it is recorded

    def _plan(self) -> Plan:
        model = self.model = self._new_model()
        rng = random.Random(self.seed)
        slice_of = {i: k for k, s in enumerate(self.slices) for i in s.members}
        spent = [0] * len(self.slices)
        turn = 0
        while True:
            left = [
                min(s.budget - spent[k], sum(i not in self.measured for i in s.members))
                for k, s in enumerate(self.slices)
            ]
            quotas = round_quotas(self.round_size, left, turn)
            if not any(quotas):
                return
            ranking, informed = model.rank(rng)
            explore = [0] * len(quotas)
            active = [k for k, q in enumerate(quotas) if q]
            for j in range(model.explore if informed else 0):
                explore[active[(turn + j) % len(active)]] += 1
            batch: list[int] = []
            for k, quota in enumerate(quotas):
                ranked = [i for i in ranking if slice_of.get(i) == k]
                chosen = ranked[: max(0, quota - explore[k])] if informed else []
                rest = ranked[len(chosen) :]
                chosen += rng.sample(rest, min(quota - len(chosen), len(rest)))
                spent[k] += len(chosen)
                batch += chosen
            turn += 1
            yield batch

    def _final_round(self) -> list[int]:
        """Final validation, as the model's: when patience ends the search, each slice's
        share of one more round goes to its predicted-best candidates not measured yet."""
        ranking, informed = self.model.rank(random.Random(self.seed + 1))
        if not informed:
            return []
        left = [sum(i not in self.measured for i in s.members) for s in self.slices]
        quotas = round_quotas(self.round_size, left, 0)
        out: list[int] = []
        for s, quota in zip(self.slices, quotas, strict=True):
            members = set(s.members)
            out += [i for i in ranking if i in members][:quota]
        return out


def share(budget: int, sizes: Sequence[int]) -> list[int]:
    """``budget`` measurements over slices of ``sizes`` candidates, in proportion to their
    sizes (largest remainders first), at least one each and at most a slice's size."""
    total = sum(sizes)
    exact = [budget * n / total for n in sizes]
    out = [min(n, max(1, math.floor(e))) for n, e in zip(sizes, exact, strict=True)]
    order = sorted(range(len(sizes)), key=lambda k: (math.floor(exact[k]) - exact[k], k))
    while sum(out) > budget:  # the ones given to slices too small for a share of their own
        out[max(range(len(out)), key=lambda k: (out[k], -k))] -= 1
    left = budget - sum(out)
    while left > 0 and any(out[k] < sizes[k] for k in order):
        for k in order:
            if left > 0 and out[k] < sizes[k]:
                out[k] += 1
                left -= 1
    return out


def round_quotas(round_size: int, left: Sequence[int], turn: int) -> list[int]:
    """A round's ``round_size`` candidates over slices that may take ``left`` more each: one
    at a time, in turn from slice ``turn`` (so that a remainder rotates among them)."""
    quotas = [0] * len(left)
    given = 0
    while given < round_size and any(q < n for q, n in zip(quotas, left, strict=True)):
        for j in range(len(left)):
            k = (turn + j) % len(left)
            if given < round_size and quotas[k] < left[k]:
                quotas[k] += 1
                given += 1
    return quotas
