"""Rounds of proposals: the batches a driver enqueues, each built once and measured together.

:class:`RoundProposer` gives any searcher's proposals round by round, checked like
:class:`~tuna.searchers.propose.Proposer`'s (points against the space, merged over the base,
``META_is_config_valid``):

* a searcher with ``rounds()`` (the strategies of :mod:`tuna.searchers.strategies`): each round
  is the searcher's own; it is sent the round's Runs together;
* a static searcher: one round of all its points (the driver may split it as it builds);
* any other dynamic searcher: rounds of one point.

``start()`` gives the first round; ``send(runs)`` takes the Runs of the latest round (any
order, one per proposal) and gives the next; an empty list means the search is over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tuna.searchers.builtin import SearcherInterface
from tuna.searchers.errors import SearcherError
from tuna.searchers.propose import Proposal, Proposer
from tuna.searchers.run import Run
from tuna.searchers.space import ParameterSpace, merge


class RoundProposer:
    """See the module docstring."""

    def __init__(
        self,
        space: ParameterSpace,
        searcher: SearcherInterface | None = None,
        base: Mapping[str, Any] | None = None,
    ) -> None:
        self._proposer = Proposer(space, searcher, base)
        self.space = space
        self.searcher = self._proposer.searcher
        self.base = self._proposer.base
        self._rounds = getattr(self.searcher, "rounds", None)
        self._gen: Any = None
        self._pending: list[Proposal] = []
        self._refused: list[Run] = []
        self.count = 0
        self.refused: list[Run] = []

    @property
    def batched(self) -> bool:
        """Whether the searcher proposes rounds of its own."""
        return callable(self._rounds)

    def start(self) -> list[Proposal]:
        if self._gen is not None or self._pending:
            raise SearcherError("the search has already started")
        if not self.batched:
            if not self._proposer.dynamic:
                self._pending = self._proposer.proposals()
                self.refused = self._proposer.refused
                self._gen = iter(())
                return list(self._pending)
            first = self._proposer.start()
            self._gen = iter(())
            self._pending = [first] if first is not None else []
            return list(self._pending)
        assert self._rounds is not None
        self._gen = self._rounds()
        return self._checked(self._next(None))

    def send(self, runs: Sequence[Run]) -> list[Proposal]:
        if self._gen is None:
            raise SearcherError("call start() before send()")
        if len(runs) != len(self._pending):
            raise SearcherError(
                f"the round had {len(self._pending)} proposal(s) but {len(runs)} Run(s) were "
                "sent; send one Run per proposal of the round"
            )
        if not self.batched:
            if not self._proposer.dynamic:
                self._pending = []
                return []
            nxt = self._proposer.send(runs[0] if runs else None)
            self.refused = self._proposer.refused
            self._pending = [nxt] if nxt is not None else []
            return list(self._pending)
        return self._checked(self._next([*self._refused, *runs]))

    def _next(self, runs: list[Run] | None) -> list[dict[str, Any]] | None:
        try:
            return self._gen.send(runs)
        except StopIteration:
            return None

    def _checked(self, points: list[dict[str, Any]] | None) -> list[Proposal]:
        """The round's valid proposals; refused points are answered by invalid Runs at once
        (they go back with the round's Runs); a round all refused asks for the next."""
        while points is not None:
            self._refused, self._pending = [], []
            name = type(self.searcher).__name__
            for point in points:
                point = self.space.check_point(point, searcher=name)
                config = merge(self.base, point)
                reason = self.space.refusal(config)
                if reason is not None:
                    refused = Run.invalid(config, reason)
                    self._refused.append(refused)
                    self.refused.append(refused)
                    continue
                self._pending.append(Proposal(self.count, point, config))
                self.count += 1
            if self._pending:
                return list(self._pending)
            points = self._next(list(self._refused))
        self._pending = []
        return []
