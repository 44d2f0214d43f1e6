"""Driving one searcher: checked proposals in, Runs back — the pure half of a search's driver.

A :class:`Proposer` wraps a searcher's generator and turns what it yields into
:class:`Proposal` values a driver can build and run: the point is checked against the
parameter space (an unknown parameter is an error, raised before anything runs), merged
over the base configuration, and passed through ``META_is_config_valid``. A refused config
is never built or run: a dynamic searcher is sent an invalid Run saying so, a static one
simply moves on; :attr:`Proposer.refused` keeps them. A config is refused by a constraint
of the file (``META_constraints``) or by ``META_is_config_valid``; the Run's reason says which.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from tuna.errors import TunaError
from tuna.searchers.builtin import CartesianProduct, PastRunsCallback, Proposals, SearcherInterface
from tuna.searchers.errors import HookError, SearcherError
from tuna.searchers.hooks import call_hook, search_callback_arity
from tuna.searchers.run import Config, Point, Run
from tuna.searchers.space import REFUSED as REFUSED  # where callers have long found it
from tuna.searchers.space import ParameterSpace, merge


@dataclass(frozen=True)
class Proposal:
    """The ``index``-th point a searcher proposed (0-based), and the full config it runs with."""

    index: int
    point: Point
    config: Config


def default_searcher(space: ParameterSpace) -> SearcherInterface:
    """The searcher when none is named: ``META_search_callback``'s, else the product.

    The exhaustive :class:`CartesianProduct` needs every parameter to list values; a parameter
    declared with an empty list is for a searcher to fill in.
    """
    callback = space.search_callback()
    if callback is not None:
        if search_callback_arity(callback) >= 1:
            return PastRunsCallback(_guarded(space.source, callback))
        searcher = call_hook(space.source, "META_search_callback", callback)
        if not _is_searcher(searcher):
            raise HookError(
                space.source,
                "META_search_callback",
                f"returned {searcher!r}; return a searcher (an object with generate() and "
                "is_dynamic, e.g. Composer([...]) from tuna.search)",
            )
        return cast(SearcherInterface, searcher)
    empty = [n for n, p in space.parameters.items() if p.finite and not p.count()]
    if empty:
        raise SearcherError(
            f"{space.source}: parameter(s) {', '.join(map(repr, empty))} list no values, so the "
            "exhaustive search has nothing to try; list values, or name a searcher that sets "
            "them (META_search_callback)"
        )
    return CartesianProduct(space)


class Proposer:
    """One searcher's proposals for ``space`` over ``base``; see the module docstring.

    ``start()`` gives the first proposal; ``send(run)`` reports the Run of the latest one and
    gives the next (a static searcher may be sent None). Both return None at the end.
    ``skip`` holds Runs already recorded (:meth:`Recorded.of`): a static searcher's
    proposals matching one of them are passed over, each recorded Run once; see
    :func:`tuna.searchers.replay.replay`.
    """

    def __init__(
        self,
        space: ParameterSpace,
        searcher: SearcherInterface | None = None,
        base: Mapping[str, Any] | None = None,
    ) -> None:
        self.space = space
        self.searcher = searcher if searcher is not None else default_searcher(space)
        if not _is_searcher(self.searcher):
            raise SearcherError(
                f"{self.searcher!r} is not a searcher; give an object with generate() and "
                "is_dynamic (a SearcherInterface)"
            )
        self.base: Config = dict(base or {})
        self.dynamic = bool(self.searcher.is_dynamic)
        self.refused: list[Run] = []
        self.skip = Recorded(())
        self.count = 0
        self._gen: Proposals | None = None
        self._done = False
        self._name = type(self.searcher).__name__

    def start(self) -> Proposal | None:
        if self._gen is not None:
            raise SearcherError(f"{self._name}: the search has already started")
        self._gen = self.searcher.generate()
        return self._advance(None)

    def send(self, run: Run | None) -> Proposal | None:
        if self._gen is None:
            raise SearcherError(f"{self._name}: call start() before send()")
        if run is None and self.dynamic:
            raise SearcherError(f"{self._name} is dynamic: send the Run of the latest proposal")
        return self._advance(run)

    def proposals(self) -> list[Proposal]:
        """Every proposal of a static searcher, in order (from the start)."""
        if self.dynamic:
            raise SearcherError(f"{self._name} is dynamic: its points depend on the Runs")
        out = []
        p = self.start()
        while p is not None:
            out.append(p)
            p = self.send(None)
        return out

    def _advance(self, run: Run | None) -> Proposal | None:
        assert self._gen is not None
        while not self._done:
            point = self._next(run)
            if point is None:
                self._done = True
                break
            point = self.space.check_point(point, searcher=self._name)
            config = merge(self.base, point)
            reason = self.space.refusal(config)
            if reason is not None:
                refused = Run.invalid(config, reason)
                self.refused.append(refused)
                run = refused if self.dynamic else None
                continue
            if not self.dynamic and self.skip.take(point) is not None:
                self.count += 1
                run = None
                continue
            proposal = Proposal(self.count, point, config)
            self.count += 1
            return proposal
        return None

    def _next(self, run: Run | None) -> Point | None:
        assert self._gen is not None
        try:
            return self._gen.send(run)
        except StopIteration:
            return None
        except TunaError:
            raise
        except Exception as e:  # the user's searcher or predicate
            raise SearcherError(
                f"{self.space.source}: searcher {self._name} raised {type(e).__name__}: {e}; "
                "fix the searcher or its predicate"
            ) from e


class Recorded:
    """Runs already recorded, found by a point's values; each is taken at most once.

    An index per set of parameter names (a static searcher's points usually share one), so
    resuming a large search costs one pass over its recorded Runs, not one per proposal.
    """

    def __init__(self, runs: Iterable[Run]) -> None:
        self._runs = list(runs)
        self._taken: set[int] = set()
        self._index: dict[tuple[str, ...], dict[tuple[Any, ...], list[int]]] = {}

    def __len__(self) -> int:
        return len(self._runs) - len(self._taken)

    def untaken(self) -> list[Run]:
        return [r for i, r in enumerate(self._runs) if i not in self._taken]

    def take(self, point: Mapping[str, Any]) -> Run | None:
        """A recorded Run that ran ``point`` (not taken before), now taken; else None."""
        if len(self) == 0:
            return None
        names = tuple(sorted(point))
        index = self._index.get(names)
        if index is None:
            index = {}
            for i, r in enumerate(self._runs):
                if all(n in r.config for n in names):
                    index.setdefault(_values(r.config, names), []).append(i)
            self._index[names] = index
        for i in index.get(_values(point, names), ()):
            if i not in self._taken and self._runs[i].matches(point):
                self._taken.add(i)
                return self._runs[i]
        return None


def _values(values: Mapping[str, Any], names: tuple[str, ...]) -> tuple[Any, ...]:
    # True == 1 and hash alike: keep the type of a bool apart, as Run.matches does.
    out: list[Any] = []
    for n in names:
        v = values[n]
        try:
            hash(v)
        except TypeError:
            v = repr(v)
        out.append((isinstance(v, bool), v))
    return tuple(out)


def _is_searcher(obj: object) -> bool:
    return callable(getattr(obj, "generate", None)) and hasattr(obj, "is_dynamic")


def _guarded(source: str, callback: Callable[..., Any]) -> Callable[..., Any]:
    def call(past: Any) -> Any:
        return call_hook(source, "META_search_callback", callback, past)

    return call
