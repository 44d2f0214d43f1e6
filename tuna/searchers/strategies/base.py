"""What every strategy shares: the candidates of a space, a budget, rounds, early stopping.

A **strategy** searches a tunable solver's space: a finite list of valid candidates (points
over named parameters, e.g. cpuconv's ``MR, NV, VW, KC, NT``), enumerated up front by the
backend (:class:`CandidateSpace`). It proposes candidates in **rounds**: a round is a batch
whose points do not depend on each other's results, so a driver can build them as one build
(a ``.so`` with many candidates) and measure them in parallel; the next round is chosen
from the results of all rounds so far.

A strategy is a :class:`~tuna.searchers.builtin.SearcherInterface` (dynamic), usable in two
ways that propose the same points:

* :meth:`RoundSearcher.rounds` — the round protocol: a generator that yields a round (a list
  of points) and is sent that round's Runs (a list, any order); ``StopIteration`` ends it.
  :class:`tuna.searchers.rounds.RoundProposer` drives it (and any other searcher) for a driver.
* :meth:`RoundSearcher.generate` — the one-point protocol of every searcher: each point of a
  round in turn, each sent its Run; the strategy sees the Runs when its round is complete.
  This is the form :func:`tuna.searchers.replay.replay` resumes.

The base class owns what all strategies share, so each strategy only chooses candidates:

* never proposing a candidate twice, nor one outside the space;
* the **budget**: at most so many measurements (an int) or a share of the space (a float in
  (0, 1]); a round is cut to what is left of it;
* **early stopping**: ``patience`` = N ends the search once N measurements in a row brought
  no improvement (checked when a round completes);
* the **best** candidate: always a measured one (:meth:`RoundSearcher.get_best`), never a
  prediction; the trace of values in measurement order (:attr:`RoundSearcher.trace`).

Pure: no database, no I/O; seeded, so the same Runs give the same proposals (replay).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from typing import Any

from tuna.searchers.builtin import Proposals, SearcherInterface, _need_run
from tuna.searchers.errors import SearcherError, SearchError
from tuna.searchers.objective import Objective
from tuna.searchers.params import Categorical
from tuna.searchers.run import Point, Primitive, Run
from tuna.searchers.space import ParameterSpace

#: What :meth:`RoundSearcher.rounds` returns: yields rounds, is sent each round's Runs.
Rounds = Generator[list[Point], "list[Run]", None]
#: What a strategy's plan yields: candidate indices to measure next (one round).
Plan = Iterator[list[int]]

DEFAULT_OBJECTIVE = Objective("time_ms", "min")
#: Rounds in a row that a plan may yield without a new candidate before it counts as done.
_IDLE_ROUNDS = 64


#: The most points a declared space may have for a strategy to search it: a strategy
#: enumerates its candidates up front.
MAX_SPACE_POINTS = 200_000


class BudgetError(SearchError):
    """Raised when a budget is 0, negative, above the space, or not a number."""


class CandidateSpace:
    """The valid candidates of one space: distinct points over the same parameter names.

    This is the finite enumeration OF a space, not a second kind of space: a
    :class:`~tuna.searchers.space.ParameterSpace` (what files and ``tuna.tune`` declare)
    becomes one by :meth:`of`, its every point that its constraints accept, and
    :meth:`parameter_space` is the way back. A backend that enumerates its own candidates
    (cpuconv's valid strings) builds one directly, e.g.
    ``CandidateSpace.from_strings(("MR", "NV"), ["1,1", "2,1"])``.

    ``values[name]`` lists the values that parameter takes among the candidates, sorted
    (the axis a local search steps along).
    """

    def __init__(self, points: Iterable[Mapping[str, Primitive]], source: str = "<space>"):
        self.source = source
        self.points: list[Point] = [dict(p) for p in points]
        if not self.points:
            raise SearchError(f"{source}: the space has no candidates; nothing to search")
        self.names: tuple[str, ...] = tuple(self.points[0])
        self._index: dict[tuple[Any, ...], int] = {}
        for i, p in enumerate(self.points):
            if tuple(p) != self.names:
                raise SearchError(
                    f"{source}: candidate {i} has parameters {list(p)}, not {list(self.names)}; "
                    "every candidate of a space names the same parameters in the same order"
                )
            key = self.key(p)
            if key in self._index:
                raise SearchError(f"{source}: candidate {p} is listed twice")
            self._index[key] = i
        self.values: dict[str, list[Primitive]] = {
            n: sorted({p[n] for p in self.points}, key=_order) for n in self.names
        }
        self._position = {n: {v: j for j, v in enumerate(vs)} for n, vs in self.values.items()}

    @classmethod
    def of(cls, space: ParameterSpace, who: str = "a strategy") -> CandidateSpace:
        """The candidates of ``space``: every point of its product (declaration order) that
        its constraints accept. ``META_is_config_valid`` stays the proposer's (it reads the
        whole config, base settings included): a point it refuses is a failed candidate, and
        the strategy proposes another. A continuous range, a conditional parameter, one
        that lists no values or more than :data:`MAX_SPACE_POINTS` points is one
        :class:`SearchError` naming ``who`` (``strategy 'tpe'``)."""
        space.require_finite(who)
        if space.conditional:
            name = next(n for n, p in space.parameters.items() if p.when)
            raise SearchError(
                f"{space.source}: parameter {name!r} is conditional, and {who} searches "
                "candidates that all name the same parameters; drop the condition (a "
                "constraint can refuse the combinations instead), or use a sampler by name "
                "(tpe, cmaes, gp, nsga2) or Random(space, N, seed=1)"
            )
        empty = [n for n, p in space.parameters.items() if not p.count()]
        if empty:
            raise SearchError(
                f"{space.source}: {who} chooses among listed values, and "
                f"{', '.join(map(repr, empty))} lists none; give its values"
            )
        size = space.size()
        if size > MAX_SPACE_POINTS:
            raise SearchError(
                f"{space.source}: {who} enumerates the space's candidates up front, and its "
                f"{size:,} points are more than {MAX_SPACE_POINTS:,}; list fewer values"
            )
        points = space.product()
        if space.constraints:
            points = (p for p in points if all(c.refusal(p) is None for c in space.constraints))
        return cls(points, source=space.source)

    @classmethod
    def from_strings(
        cls, names: Sequence[str], candidates: Iterable[str], source: str = "<space>"
    ) -> CandidateSpace:
        """A space of integer parameters written comma-separated (``"4,2,16,1,2"``)."""
        points = []
        for text in candidates:
            fields = text.split(",")
            if len(fields) != len(names):
                raise SearchError(
                    f"{source}: candidate {text!r} has {len(fields)} values; the space's "
                    f"parameters are {','.join(names)}"
                )
            try:
                points.append(dict(zip(names, (int(f) for f in fields), strict=True)))
            except ValueError as e:
                raise SearchError(f"{source}: candidate {text!r} is not integers") from e
        return cls(points, source=source)

    def __len__(self) -> int:
        return len(self.points)

    def key(self, point: Mapping[str, Any]) -> tuple[Any, ...]:
        # True == 1 and hash alike: keep a bool apart from an int.
        return tuple((isinstance(point.get(n), bool), point.get(n)) for n in self.names)

    def index(self, point: Mapping[str, Any]) -> int | None:
        """The candidate's position in the space, or None when it is not a candidate."""
        return self._index.get(self.key(point))

    def text(self, i: int) -> str:
        """Candidate ``i`` written comma-separated, as cpuconv's perf configs are."""
        return ",".join(str(self.points[i][n]) for n in self.names)

    def positions(self, i: int) -> tuple[int, ...]:
        """Candidate ``i`` as the position of each of its values on its parameter's axis."""
        p = self.points[i]
        return tuple(self._position[n][p[n]] for n in self.names)

    def at(self, positions: Sequence[int]) -> int | None:
        """The candidate at these axis positions, or None (off an axis, or not valid)."""
        point: Point = {}
        for n, j in zip(self.names, positions, strict=True):
            if not 0 <= j < len(self.values[n]):
                return None
            point[n] = self.values[n][j]
        return self.index(point)

    def neighbours(self, i: int) -> list[int]:
        """Candidates one step away from ``i`` on one axis (the nearest valid value up and
        down each parameter's sorted values), in a fixed order."""
        pos = list(self.positions(i))
        out: list[int] = []
        for a, n in enumerate(self.names):
            for direction in (-1, 1):
                j = pos[a] + direction
                while 0 <= j < len(self.values[n]):
                    other = self.at([*pos[:a], j, *pos[a + 1 :]])
                    if other is not None:
                        out.append(other)
                        break
                    j += direction
        return out

    def nearest(self, positions: Sequence[int], exclude: set[int] | None = None) -> int | None:
        """The candidate closest to ``positions`` (axis steps, summed), ties to the first."""
        best, best_d = None, math.inf
        for i in range(len(self.points)):
            if exclude and i in exclude:
                continue
            d = sum(abs(a - b) for a, b in zip(self.positions(i), positions, strict=True))
            if d < best_d:
                best, best_d = i, d
        return best

    def parameter_space(self) -> ParameterSpace:
        """The space as a :class:`ParameterSpace` a Proposer checks points against: each
        parameter's values, and ``META_is_config_valid`` = "is one of the candidates"."""

        def is_candidate(config: Mapping[str, Any]) -> bool:
            return self.index(config) is not None

        return ParameterSpace(
            {n: Categorical(tuple(v)) for n, v in self.values.items()},
            no_rebuild=(),
            source=self.source,
            hooks={"META_is_config_valid": is_candidate},
        )


def _order(v: Primitive) -> tuple[int, Any]:
    return (0, v) if isinstance(v, int | float) else (1, str(v))


def resolve_budget(budget: int | float | None, size: int) -> int:
    """Measurements allowed: ``budget`` (an int, or a share of the ``size`` candidates as a
    float in (0, 1]); None means the whole space. Raises :class:`BudgetError` otherwise."""
    if budget is None:
        return size
    if isinstance(budget, bool) or not isinstance(budget, int | float):
        raise BudgetError(
            f"budget {budget!r} is not a number; give a count of measurements (e.g. 64) or a "
            "share of the space (e.g. 0.1)"
        )
    if isinstance(budget, float):
        if not 0 < budget <= 1:
            raise BudgetError(
                f"budget {budget:g} is not a share of the space; a share is a float in (0, 1], "
                f"a count of measurements an int from 1 to {size}"
            )
        return max(1, math.ceil(budget * size))
    count = int(budget)
    if count <= 0:
        raise BudgetError(
            f"a budget of {count} measurements measures nothing; give 1 to {size} (the space "
            "has that many candidates) or a share such as 0.1"
        )
    if count > size:
        raise BudgetError(
            f"a budget of {count} measurements is above the space's {size} candidates; give "
            f"at most {size}, or leave the budget out to allow the whole space"
        )
    return count


def points_of(rounds: Rounds, name: str) -> Proposals:
    """The one-point protocol of a searcher of rounds: each point of each round in turn,
    each sent its Run; the round's Runs go to ``rounds`` when the round is complete."""
    try:
        batch = next(rounds)
    except StopIteration:
        return
    while True:
        runs = []
        for point in batch:
            runs.append(_need_run(name, (yield point)))
        try:
            batch = rounds.send(runs)
        except StopIteration:
            return


class RoundSearcher(SearcherInterface):
    """The base of strategies; see the module docstring. Subclasses implement :meth:`_plan`.

    ``budget``: measurements allowed (int) or a share of the space (float in (0, 1]);
    ``patience``: stop after this many measurements in a row without improvement (None:
    never); ``round_size``: candidates per round; ``seed``: for seeded strategies;
    ``objective``: what is minimised or maximised (``time_ms``, smallest, by default).
    """

    #: The strategy's name, as ``--strategy`` spells it.
    name = "base"

    @property
    def label(self) -> str:
        return self.name

    def __init__(
        self,
        space: CandidateSpace,
        *,
        budget: int | float | None = None,
        patience: int | None = None,
        round_size: int = 8,
        seed: int = 0,
        objective: Objective | None = None,
    ) -> None:
        if round_size < 1:
            raise SearcherError(f"{self.name}: round_size must be >= 1, not {round_size}")
        if patience is not None and patience < 1:
            raise SearcherError(
                f"{self.name}: patience must be >= 1 measurements (or None: never stop early), "
                f"not {patience}"
            )
        self.space = space
        self.budget = resolve_budget(budget, len(space))
        self.patience = patience
        self.round_size = round_size
        self.seed = seed
        self.objective = objective or DEFAULT_OBJECTIVE
        self._reset()

    def _reset(self) -> None:
        #: candidate index -> its value to minimise (None: it did not count: failed, invalid).
        self.measured: dict[int, float | None] = {}
        #: (candidate index, value as the objective reports it or None), in measurement order.
        self.trace: list[tuple[int, float | None]] = []
        self.best_index: int | None = None
        self.best_score = math.inf
        self.since_best = 0
        self.stop_reason: str | None = None

    @property
    def is_dynamic(self) -> bool:
        return True

    # -- what a strategy implements -------------------------------------------------------------

    @abc.abstractmethod
    def _plan(self) -> Plan:
        """Yield rounds of candidate indices; read :attr:`measured` for what came of them.

        The base drops indices already measured or repeated, cuts a round to the budget left,
        and stops the plan when the budget is spent or patience runs out.
        """

    def _final_round(self) -> list[int]:
        """Candidates to measure before an early stop ends the search (none by default)."""
        return []

    # -- the protocols ------------------------------------------------------------------------

    def rounds(self) -> Rounds:
        """The round protocol: yield a round of points, receive its Runs (see module doc)."""
        self._reset()
        plan = self._plan()
        idle = 0
        for wanted in plan:
            batch = self._fit(wanted)
            if not batch:
                idle += 1
                if idle >= _IDLE_ROUNDS:
                    self.stop_reason = f"{self.name} proposed nothing new {idle} rounds in a row"
                    return
                continue
            idle = 0
            runs = yield [dict(self.space.points[i]) for i in batch]
            self._record(batch, runs)
            if len(self.measured) >= self.budget:
                self.stop_reason = f"budget of {self.budget} measurements spent"
                return
            if self.patience is not None and self.since_best >= self.patience:
                self.stop_reason = f"no improvement in {self.since_best} measurements"
                last = self._fit(self._final_round())
                if last:
                    runs = yield [dict(self.space.points[i]) for i in last]
                    self._record(last, runs)
                return
            if len(self.measured) >= len(self.space):
                break
        if self.stop_reason is None:
            done = len(self.measured) >= len(self.space)
            self.stop_reason = "space exhausted" if done else f"{self.name} proposed all it had"

    def generate(self) -> Proposals:
        """The one-point protocol: each point of each round, each sent its Run."""
        return points_of(self.rounds(), self.name)

    def get_best(self) -> Point:
        """The best candidate measured so far (never a predicted one)."""
        if self.best_index is None:
            raise SearcherError(f"{self.name}: no candidate measured so far counts")
        return dict(self.space.points[self.best_index])

    @property
    def best_value(self) -> float | None:
        """The objective's value of :meth:`get_best` (None: nothing counts yet)."""
        if self.best_index is None:
            return None
        return self.best_score if self.objective.goal == "min" else -self.best_score

    # -- helpers for strategies -----------------------------------------------------------------

    def unmeasured(self) -> list[int]:
        return [i for i in range(len(self.space)) if i not in self.measured]

    def score(self, i: int) -> float:
        """Candidate ``i``'s value to minimise; +inf when unmeasured or it did not count."""
        v = self.measured.get(i)
        return math.inf if v is None else v

    def _fit(self, wanted: Iterable[int]) -> list[int]:
        left = self.budget - len(self.measured)
        batch: list[int] = []
        seen: set[int] = set()
        for i in wanted:
            if len(batch) >= left:
                break
            if not 0 <= i < len(self.space):
                raise SearcherError(f"{self.name}: proposed candidate {i}, outside the space")
            if i in self.measured or i in seen:
                continue
            seen.add(i)
            batch.append(i)
        return batch

    def _record(self, batch: list[int], runs: Any) -> None:
        if runs is None or isinstance(runs, Run) or len(runs) != len(batch):
            got = "nothing" if runs is None else f"{1 if isinstance(runs, Run) else len(runs)}"
            raise SearcherError(
                f"{self.name}: a round of {len(batch)} candidates was sent {got} Run(s); send "
                "the round's Runs as one list, one per point"
            )
        pending = {self.space.key(self.space.points[i]): i for i in batch}
        by_index: dict[int, Run] = {}
        for run in runs:
            if not isinstance(run, Run):
                raise SearcherError(f"{self.name}: {run!r} is not a Run")
            key = self.space.key(run.config)
            i = pending.pop(key, None)
            if i is None:
                raise SearcherError(
                    f"{self.name}: a Run of {dict(run.config)} does not belong to this round "
                    f"(it proposed {[self.space.points[j] for j in batch]})"
                )
            by_index[i] = run
        for i in batch:  # in proposal order, whatever order the Runs came in
            self._note(i, by_index[i])

    def _note(self, i: int, run: Run) -> None:
        value = run.stats[self.objective.stat] if self.objective.counts(run) else None
        score = None if value is None else (value if self.objective.goal == "min" else -value)
        self.measured[i] = score
        self.trace.append((i, value))
        if score is not None and score < self.best_score:
            self.best_index, self.best_score, self.since_best = i, score, 0
        else:
            self.since_best += 1

    def take(self, runs: Iterable[Run]) -> None:
        """Runs of candidates measured outside this searcher's rounds (a stored search's,
        to look at what it learnt), each recorded as a round records it."""
        for run in runs:
            i = self.space.index(run.config)
            if i is None:
                raise SearcherError(
                    f"{self.name}: a Run of {dict(run.config)} is not a candidate of "
                    f"{self.space.source}"
                )
            self._note(i, run)
