"""The classical strategies: exhaustive, random, grid, hill climbing, genetic.

Each only chooses candidates; budget, early stopping, rounds and the best are the base's
(:mod:`tuna.searchers.strategies.base`). All are deterministic given their seed and the Runs.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from tuna.searchers.pareto import front
from tuna.searchers.run import Run
from tuna.searchers.strategies.base import Plan, RoundSearcher


def _chunks(order: list[int], size: int) -> Plan:
    for start in range(0, len(order), size):
        yield order[start : start + size]


class Exhaustive(RoundSearcher):
    """Every candidate, in the space's order (the reference the others are judged against)."""

    name = "exhaustive"

    def _plan(self) -> Plan:
        yield from _chunks(list(range(len(self.space))), self.round_size)


class RandomSearch(RoundSearcher):
    """Candidates uniformly at random without repeats, seeded (a shuffle of the candidates).

    :class:`tuna.searchers.Random` is the same search over a parameter space; not merged,
    since it samples where this shuffles and merging would change the seeded picks tests pin.
    """

    name = "random"

    def _plan(self) -> Plan:
        order = list(range(len(self.space)))
        random.Random(self.seed).shuffle(order)
        yield from _chunks(order, self.round_size)


def _level(position: int, count: int) -> int:
    """How fine a grid must be to hold axis position ``position`` of ``count``: the two ends
    are level 0, the middle level 1, the quarters level 2, ... (binary subdivision)."""
    if count <= 1 or position in (0, count - 1):
        return 0
    lo, hi, level = 0, count - 1, 1
    while True:
        mid = (lo + hi) // 2
        if position == mid:
            return level
        lo, hi = (lo, mid) if position < mid else (mid, hi)
        level += 1


class Grid(RoundSearcher):
    """A coarse-to-fine grid: first the candidates whose every value is an end of its axis,
    then those on the axes' middles, then the quarters, ... (each level in the space's order).

    With a budget it measures the coarsest grid that fits, spread over the whole space,
    where random sampling clusters and exhaustive order sweeps one corner first.
    """

    name = "grid"

    def _plan(self) -> Plan:
        sizes = [len(self.space.values[n]) for n in self.space.names]

        def level(i: int) -> int:
            pos = self.space.positions(i)
            return max((_level(p, n) for p, n in zip(pos, sizes, strict=True)), default=0)

        order = sorted(range(len(self.space)), key=lambda i: (level(i), i))
        yield from _chunks(order, self.round_size)


class HillClimb(RoundSearcher):
    """Steepest-descent hill climbing with random restarts.

    It starts from the best of a random round. Each round measures the unmeasured
    neighbours of the current candidate (one step along one axis); it moves to the best
    neighbour when that is better, else the current candidate is a local optimum and it
    restarts from the best of a new random round.

    With several objectives it is a **Pareto local search**: it measures the unmeasured
    neighbours of every candidate on the front of those measured so far, each front point's
    once, until no point of the front has any left, then restarts from a new random round.
    """

    name = "hillclimb"

    def _reset(self) -> None:
        super()._reset()
        #: candidate index -> its stats, for the runs that count (several objectives).
        self.counted: dict[int, Mapping[str, Any]] = {}

    def _note(self, i: int, run: Run) -> None:
        super()._note(i, run)
        if self.objective.counts(run):
            self.counted[i] = run.stats

    def _front(self) -> list[int]:
        return front(sorted(self.counted), self.objective.targets, lambda i: self.counted[i])

    def _plan(self) -> Plan:
        if len(self.objective.targets) > 1:
            yield from self._pareto_plan()
            return
        rng = random.Random(self.seed)
        while True:
            left = self.unmeasured()
            if not left:
                return
            start = rng.sample(left, min(self.round_size, len(left)))
            yield start
            current = min(start, key=lambda i: (self.score(i), i))
            while True:
                around = [n for n in self.space.neighbours(current) if n not in self.measured]
                for start_at in range(0, len(around), self.round_size):
                    yield around[start_at : start_at + self.round_size]
                nbrs = self.space.neighbours(current)
                best = min(nbrs, key=lambda i: (self.score(i), i), default=None)
                if best is None or not self.score(best) < self.score(current):
                    break  # a local optimum: restart
                current = best

    def _pareto_plan(self) -> Plan:
        rng = random.Random(self.seed)
        climbed: set[int] = set()  # front points whose neighbours were all proposed
        while True:
            left = self.unmeasured()
            if not left:
                return
            yield rng.sample(left, min(self.round_size, len(left)))
            while todo := [i for i in self._front() if i not in climbed]:
                wanted: list[int] = []
                for i in todo:
                    climbed.add(i)
                    wanted += [n for n in self.space.neighbours(i) if n not in self.measured]
                for start in range(0, len(wanted), self.round_size):
                    yield wanted[start : start + self.round_size]


class Genetic(RoundSearcher):
    """A genetic search: each round is a generation of ``round_size`` children.

    The first generation is random. Parents are picked by tournaments of ``tournament``
    among the ``population`` best measured so far (elitism over the whole history); a child
    takes each parameter from one parent or the other (uniform crossover), then each
    parameter moves one step along its axis with probability ``mutation``. A child that is
    not a valid candidate becomes the nearest one; one already measured is mutated again,
    and after a few tries replaced by a random unmeasured candidate.
    """

    name = "genetic"

    def __init__(
        self,
        *args: object,
        population: int | None = None,
        tournament: int = 3,
        mutation: float | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.population = population or 2 * self.round_size
        self.tournament = tournament
        n = len(self.space.names)
        self.mutation = mutation if mutation is not None else max(1.0 / n, 0.2)

    def _plan(self) -> Plan:
        rng = random.Random(self.seed)
        left = self.unmeasured()
        yield rng.sample(left, min(self.round_size, len(left)))
        while len(self.measured) < len(self.space):
            ranked = sorted(
                (i for i, s in self.measured.items() if s is not None),
                key=lambda i: (self.score(i), i),
            )[: self.population]
            children: list[int] = []
            taken = set(self.measured)
            for _ in range(self.round_size):
                child = self._child(rng, ranked, taken) if ranked else None
                if child is None:
                    free = [i for i in range(len(self.space)) if i not in taken]
                    if not free:
                        break
                    child = rng.choice(free)
                children.append(child)
                taken.add(child)
            if not children:
                return
            yield children

    def _pick(self, rng: random.Random, ranked: list[int]) -> int:
        entrants = [rng.choice(ranked) for _ in range(self.tournament)]
        return min(entrants, key=lambda i: (self.score(i), i))

    def _child(self, rng: random.Random, ranked: list[int], taken: set[int]) -> int | None:
        sizes = [len(self.space.values[n]) for n in self.space.names]
        for _ in range(8):
            a, b = (
                self.space.positions(self._pick(rng, ranked)),
                self.space.positions(self._pick(rng, ranked)),
            )
            genes = [x if rng.random() < 0.5 else y for x, y in zip(a, b, strict=True)]
            for g, n in enumerate(sizes):
                if rng.random() < self.mutation:
                    genes[g] = min(n - 1, max(0, genes[g] + rng.choice((-1, 1))))
            child = self.space.at(genes)
            if child is None:
                child = self.space.nearest(genes, exclude=taken)
            if child is not None and child not in taken:
                return child
        return None
