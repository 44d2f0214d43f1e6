"""Searchers: what proposes the points a search measures.

The protocol (``reference/search.md`` §1) is the one the users' own searchers already follow:

* A searcher is a :class:`SearcherInterface`: a generator method :meth:`~SearcherInterface.generate`
  and a property :attr:`~SearcherInterface.is_dynamic`.
* ``generate()`` yields **points**: dicts of the parameters the searcher controls. The caller
  starts it with ``next(gen)`` (or ``gen.send(None)``) and then, after each point has run,
  sends the finished :class:`~tuna.searchers.run.Run` with ``gen.send(run)``, which returns the
  next point. ``StopIteration`` ends the search.
* A **static** searcher (``is_dynamic`` False) ignores what it is sent, so all its points can
  be listed (and measured) up front. A **dynamic** one needs each Run before it proposes the
  next point, so it has one point in flight at a time.
* A searcher may have a ``predicate`` (a function of a Run) and :meth:`~SearcherInterface.wants`
  it: :class:`Composer` asks ``wants(run)`` before advancing it, because advancing a generator
  is destructive.

Searchers are pure: no database, no I/O. A seeded searcher proposes the same points every
time it is given the same Runs, which is what lets a search resume by replay
(:mod:`tuna.searchers.replay`).
"""

from __future__ import annotations

import abc
import itertools
import math
import random
import sys
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import Any, cast

from tuna.searchers.errors import SearcherError
from tuna.searchers.params import Param
from tuna.searchers.run import Point, Primitive, Run
from tuna.searchers.space import MAX_REPEATS, ParameterSpace

#: What ``generate()`` returns: yields points, is sent Runs (None to start).
Proposals = Generator[Point, "Run | None", None]
Predicate = Callable[[Run], bool]


class SearcherInterface(abc.ABC):
    """A strategy that proposes points; see the module docstring for the protocol."""

    @property
    @abc.abstractmethod
    def is_dynamic(self) -> bool:
        """Whether ``generate()`` uses the Runs it is sent (False: all points known up front)."""

    @abc.abstractmethod
    def generate(self) -> Proposals:
        """Yield points; receive each point's Run through ``send``."""

    def wants(self, run: Run) -> bool:
        """Whether this searcher wants to advance after ``run`` (:class:`Composer` asks first)."""
        predicate = getattr(self, "predicate", None)
        return bool(predicate(run)) if callable(predicate) else True

    def get_best(self) -> Point:
        """The best point found so far, for searchers that know one."""
        raise NotImplementedError(f"{type(self).__name__} does not name a best point")

    @property
    def label(self) -> str:
        """The name a user knows this searcher by (a dry run prints it): its class's
        (``Random``, ``Bisect``); a strategy's is the name ``--strategy`` spells (``tpe``)."""
        return type(self).__name__


def label_of(searcher: Any) -> str:
    """``searcher.label``, or its class's name for one that does not subclass
    :class:`SearcherInterface` (a user's own needs only ``generate`` and ``is_dynamic``)."""
    return searcher.label if isinstance(searcher, SearcherInterface) else type(searcher).__name__


def send(gen: Proposals, run: Run | None = None) -> Point | None:
    """``gen.send(run)``, with the end of the generator as None (the tool's ``do_send``)."""
    try:
        return gen.send(run)
    except StopIteration:
        return None


def _need_run(searcher: str, run: Run | None) -> Run:
    if run is None:
        raise SearcherError(
            f"{searcher} is dynamic and was sent no Run; send each point's Run with gen.send(run)"
        )
    return run


def _grid_of(grid: Mapping[str, Sequence[Primitive]] | Any) -> dict[str, list[Primitive]]:
    # A ParameterSpace is accepted wherever a grid is (its parameters that list values).
    g = getattr(grid, "grid", grid)
    return {k: list(v) for k, v in g.items()}


def _space_of(grid: Mapping[str, Any] | ParameterSpace) -> ParameterSpace | None:
    """``grid`` as a space (a mapping that holds a range becomes one); None for a plain
    mapping of lists, which the searchers take as a grid as they always have."""
    space = grid
    if not isinstance(grid, ParameterSpace):
        if not any(isinstance(v, Param) for v in grid.values()):
            return None
        space = ParameterSpace(dict(grid), source="<grid>")
    assert isinstance(space, ParameterSpace)
    return space


class CartesianProduct(SearcherInterface):
    """Every combination of ``grid``'s values, once; the default searcher. Not dynamic.

    ``grid`` maps names to lists, or is a :class:`~tuna.searchers.space.ParameterSpace`:
    an int range (or a float range with a step) lists its values, a conditional parameter
    is in only the combinations where it exists, and a continuous float range is refused
    (it has no list of values). With ``no_rebuild_params``, those parameters vary fastest
    (innermost), so that runs of one build come back to back, as the tool did; the schedule
    (:func:`tuna.searchers.schedule.plan_schedule`) groups any order anyway.
    """

    def __init__(
        self,
        grid: Mapping[str, Sequence[Primitive]] | Any,
        no_rebuild_params: Sequence[str] | None = None,
    ) -> None:
        space = _space_of(grid)
        if space is not None:
            space.require_finite("the exhaustive search (CartesianProduct)")
        self.space = space if space is not None and space.conditional else None
        self.grid = _grid_of(space or grid) if self.space is None else {}
        self.no_rebuild_params = list(no_rebuild_params or ())

    @property
    def is_dynamic(self) -> bool:
        return False

    def generate(self) -> Proposals:
        keys = list(self.grid) if self.space is None else self.space.names
        if self.no_rebuild_params:
            keys.sort(key=lambda k: k in self.no_rebuild_params)  # stable: build-time first
        if self.space is not None:
            yield from self.space.product(keys)
            return
        for values in itertools.product(*(self.grid[k] for k in keys)):
            yield dict(zip(keys, values, strict=True))


class Random(SearcherInterface):
    """``count`` distinct points of ``grid`` drawn at random with ``seed``. Not dynamic.

    The same seed gives the same points in the same order (so a search resumes by replay).
    Over lists (and int ranges) each point of the product is equally likely, and a count at
    or above the product's size gives every point once, shuffled. A space with a continuous
    range or a conditional parameter is sampled one parameter at a time instead (a float
    uniformly in its range, or log-uniformly with ``log=True``; a conditional parameter only
    where it exists), and the search ends early when ``MAX_REPEATS`` draws in a row repeat
    points already drawn. (:class:`tuna.searchers.strategies.RandomSearch` is this search
    over a strategy's candidates, in rounds: kept apart because it shuffles where this
    samples, so merging them would change the seeded picks that tests and bench pin.)
    """

    def __init__(
        self, grid: Mapping[str, Sequence[Primitive]] | Any, count: int, seed: int = 0
    ) -> None:
        if count < 0:
            raise SearcherError(f"Random: count must be >= 0, not {count}")
        space = _space_of(grid)
        sampled = space is not None and (space.conditional or not space.finite)
        self.space = space if sampled else None
        # Axes of the product, each read by index: an Int range is never listed, so
        # Int(0, 10**9) costs nothing until a point is drawn.
        self.axes: dict[str, Sequence[Primitive] | Param] = {}
        if space is None:
            self.axes = dict(_grid_of(grid))
        elif not sampled:
            self.axes = {n: p for n, p in space.parameters.items() if p.count()}
        self.count = count
        self.seed = seed

    @property
    def is_dynamic(self) -> bool:
        return False

    def generate(self) -> Proposals:
        if self.space is not None:
            yield from self._sampled(self.space)
            return
        keys = list(self.axes)
        sizes = [_size(self.axes[k]) for k in keys]
        total = math.prod(sizes)
        rng = random.Random(self.seed)
        for index in _distinct_indices(rng, total, min(self.count, total)):
            point: Point = {}
            for k, n in zip(reversed(keys), reversed(sizes), strict=True):
                index, i = divmod(index, n)
                axis = self.axes[k]
                point[k] = axis.value_at(i) if isinstance(axis, Param) else axis[i]
            yield {k: point[k] for k in keys}

    def _sampled(self, space: ParameterSpace) -> Proposals:
        rng = random.Random(self.seed)
        seen: set[tuple[Any, ...]] = set()
        made = repeats = 0
        while made < self.count and repeats < MAX_REPEATS:
            point = space.sample(rng)
            key = tuple((k, isinstance(v, bool), v) for k, v in point.items())
            if key in seen:
                repeats += 1
                continue
            seen.add(key)
            made, repeats = made + 1, 0
            yield point


def _size(axis: Sequence[Primitive] | Param) -> int:
    return axis.count() if isinstance(axis, Param) else len(axis)


def _distinct_indices(rng: random.Random, total: int, count: int) -> Iterator[int]:
    if total <= sys.maxsize:
        yield from rng.sample(range(total), count)
        return
    seen: set[int] = set()  # a grid too large for range(): count is far smaller than total
    while len(seen) < count:
        i = rng.randrange(total)
        if i not in seen:
            seen.add(i)
            yield i


class Step(SearcherInterface):
    """``search_param`` = start, update(start), update(update(start)), ... until past ``end``.

    ``end`` itself is proposed when the sequence reaches it. Descending works the same way
    (``Step("batch", 256, 32, lambda b: b // 2)``). With a ``predicate`` the searcher is
    dynamic and stops at the first Run the predicate refuses. An ``update`` that does not
    move towards ``end`` is an error (it would never finish).
    """

    def __init__(
        self,
        search_param: str,
        start: int | float,
        end: int | float,
        update: Callable[[Any], Any],
        predicate: Predicate | None = None,
    ) -> None:
        self.search_param = search_param
        self.start = start
        self.end = end
        self.update = update
        self.predicate = predicate

    @property
    def is_dynamic(self) -> bool:
        return self.predicate is not None

    def _past(self, x: int | float) -> bool:
        return x > self.end if self.start <= self.end else x < self.end

    def generate(self) -> Proposals:
        x = self.start
        ascending = self.start <= self.end
        while not self._past(x):
            run = yield {self.search_param: x}
            if self.predicate is not None and not self.predicate(_need_run(repr(self), run)):
                return
            nxt = self.update(x)
            if (nxt <= x) if ascending else (nxt >= x):
                raise SearcherError(
                    f"{self!r}: update({x!r}) gave {nxt!r}, which does not move towards "
                    f"{self.end!r}; the search would never end"
                )
            x = nxt

    def __repr__(self) -> str:
        return f"Step({self.search_param!r}, {self.start!r}, {self.end!r})"


class Bisect(SearcherInterface):
    """Binary search for the largest grid value whose Run satisfies ``predicate``. Dynamic.

    The grid is ``lower_bound, lower_bound + step_size, ...`` up to ``upper_bound``, both
    bounds included (``reference/search.md``: a binary search on a grid of ``step_size``).
    No value is assumed good or bad without a Run: the lower bound is measured when the
    search comes down to it and the upper bound when it goes up to it. The first point is
    the middle of the grid; on a grid of n values it runs at most ceil(log2(n + 1)) points,
    and the answer (:meth:`get_best`) is exact when the predicate is monotone (good up to
    some value, bad above it). When no value is good there is no answer.
    """

    def __init__(
        self,
        search_param: str,
        lower_bound: int | float,
        upper_bound: int | float,
        step_size: int | float,
        predicate: Predicate,
    ) -> None:
        if step_size <= 0:
            raise SearcherError(f"Bisect({search_param!r}): step_size must be > 0")
        n = math.floor((upper_bound - lower_bound) / step_size + 1e-9) + 1
        if n < 2:
            raise SearcherError(
                f"Bisect({search_param!r}): the grid [{lower_bound}, {upper_bound}] in steps of "
                f"{step_size} has {max(n, 0)} value(s); it needs at least 2 to search"
            )
        self.search_param = search_param
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.step_size = step_size
        self.predicate = predicate
        self.grid_size = n  # values lower_bound + i * step_size, i < n; computed, not stored
        self.best: Point | None = None

    @property
    def is_dynamic(self) -> bool:
        return True

    def was_good(self, run: Run) -> bool:
        """Whether ``run`` satisfies the predicate (the value may go up from there)."""
        return bool(self.predicate(run))

    def value(self, i: int) -> int | float:
        """The grid's ``i``-th value (the upper bound exactly for the last)."""
        return (
            self.upper_bound if i == self.grid_size - 1 else self.lower_bound + i * self.step_size
        )

    def generate(self) -> Proposals:
        self.best = None
        lo, hi = -1, self.grid_size  # index lo known good (-1: none yet), hi and above bad
        while lo + 1 != hi:
            mid = (lo + hi) // 2
            term: Point = {self.search_param: self.value(mid)}
            run = _need_run(repr(self), (yield term))
            if self.was_good(run):
                lo = mid
                self.best = dict(term)
            else:
                hi = mid

    def get_best(self) -> Point:
        if self.best is None:
            raise SearcherError(
                f"{self!r}: no value of the grid measured so far satisfies the predicate"
            )
        return dict(self.best)

    def __repr__(self) -> str:
        return (
            f"Bisect({self.search_param!r}, {self.lower_bound!r}, {self.upper_bound!r}, "
            f"{self.step_size!r})"
        )


class Composer(SearcherInterface):
    """Several searchers as one; each advances when its predicate says so. Dynamic.

    ``searchers`` holds searchers or ``(searcher, predicate)`` pairs. The composer first takes
    every searcher's initial term and runs the merged point. After each Run it asks the
    searchers in order whether they want to advance (the pair's predicate, else the
    searcher's own :meth:`~SearcherInterface.wants`: its ``predicate`` if it has one, such as
    a Bisect's, else yes); the first that wants to and still has a term gives it, sent the
    Run. If none does, it forces them **in reverse order** to give a term (sent the Run),
    stopping at the first that does. If none can, the search is over. ``timeout`` bounds the
    number of runs.
    """

    def __init__(
        self,
        searchers: Sequence[SearcherInterface | tuple[SearcherInterface, Predicate]],
        timeout: int | None = None,
    ) -> None:
        self.searchers: list[SearcherInterface] = []
        self.predicates: list[Predicate] = []
        for item in searchers:
            if isinstance(item, tuple):
                if len(item) != 2 or not callable(item[1]):
                    raise SearcherError(
                        f"Composer: {item!r} is not a (searcher, predicate) pair; pass a "
                        "searcher, or a searcher and a function of a Run"
                    )
                self.searchers.append(item[0])
                self.predicates.append(item[1])
            else:
                if not callable(getattr(item, "generate", None)):
                    raise SearcherError(
                        f"Composer: {item!r} is not a searcher (it has no generate())"
                    )
                self.searchers.append(item)
                self.predicates.append(_wants_of(item))
        if not self.searchers:
            raise SearcherError("Composer: give it at least one searcher")
        self.timeout = timeout

    @property
    def is_dynamic(self) -> bool:
        return True

    def generate(self) -> Proposals:
        gens = [s.generate() for s in self.searchers]
        point: Point = {}
        for g in gens:
            point.update(send(g) or {})
        runs = 0
        while runs != self.timeout:
            run = _need_run("Composer", (yield dict(point)))
            runs += 1
            term: Point | None = None
            for g, wants in zip(gens, self.predicates, strict=True):
                if wants(run):
                    term = send(g, run)
                    if term:
                        break
            if not term:
                for g in reversed(gens):
                    term = send(g, run)
                    if term:
                        break
            if not term:
                return
            point.update(term)


def _wants_of(searcher: Any) -> Predicate:
    """A searcher's "want" predicate: its wants(), else its predicate, else always yes.

    A user's searcher need not subclass :class:`SearcherInterface` (generate() and
    is_dynamic are the whole protocol), so it may have neither.
    """
    wants = getattr(searcher, "wants", None)
    if callable(wants):
        return cast(Predicate, wants)
    predicate = getattr(searcher, "predicate", None)
    if callable(predicate):
        return cast(Predicate, predicate)
    return lambda run: True


class PastRunsCallback(SearcherInterface):
    """The older ``META_search_callback(past_runs)`` form as a searcher. Dynamic.

    The callback is called with the list of ``(config, stats)`` pairs of every Run so far and
    returns the next point, or None when the search is over; or, as in the tool's own
    example (``def META_search_callback(past_runs): return Bisect(...)``), it returns a
    searcher, which then makes the search.
    """

    def __init__(self, callback: Callable[[list[tuple[dict[str, Any], dict[str, Any]]]], Any]):
        self.callback = callback
        self.searcher: Any = None  # what the callback returned, when it returned a searcher

    @property
    def is_dynamic(self) -> bool:
        return True

    def generate(self) -> Proposals:
        past: list[tuple[dict[str, Any], dict[str, Any]]] = []
        while True:
            point = self.callback(list(past))
            if point is None:
                return
            if is_searcher(point):  # the tool's own form: the callback returns the searcher
                self.searcher = point
                yield from point.generate()
                return
            run = _need_run("META_search_callback", (yield point))
            past.append((dict(run.config), dict(run.stats)))

    def get_best(self) -> Point:
        if self.searcher is None:
            return super().get_best()
        return dict(self.searcher.get_best())


def is_searcher(value: Any) -> bool:
    """Whether ``value`` is a searcher: it has ``generate()`` and ``is_dynamic``."""
    return callable(getattr(value, "generate", None)) and hasattr(value, "is_dynamic")
