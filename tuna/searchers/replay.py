"""Resuming a search: rebuild a searcher's state from the Runs already recorded.

A driver that crashed knows only what it recorded. Searchers are deterministic given the
Runs they are sent (a seeded one included), so feeding the recorded Runs to a fresh
searcher puts it exactly where the uninterrupted search was, without measuring anything
again:

* a **dynamic** searcher is replayed in proposal order: each recorded Run must match the
  point the searcher proposes at that step (else :class:`ReplayError`: the parameter file
  or the searcher changed since), and is sent to it;
* a **static** searcher's proposals that match a recorded Run (each Run once, in any order,
  since its points run in parallel) are passed over, now and for the rest of the search.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuna.searchers.builtin import SearcherInterface
from tuna.searchers.errors import ReplayError
from tuna.searchers.propose import Proposal, Proposer, Recorded
from tuna.searchers.run import Run
from tuna.searchers.space import ParameterSpace


@dataclass
class Replayed:
    """A proposer positioned after the recorded Runs, and the proposal to measure next."""

    proposer: Proposer
    next: Proposal | None
    replayed: int


def replay(
    space: ParameterSpace,
    runs: Sequence[Run],
    searcher: SearcherInterface | None = None,
    base: Mapping[str, Any] | None = None,
) -> Replayed:
    """The search of ``searcher`` (a fresh instance) over ``space`` resumed after ``runs``."""
    proposer = Proposer(space, searcher, base)
    if not proposer.dynamic:
        proposer.skip = Recorded(runs)
        first = proposer.start()
        return Replayed(proposer, first, len(runs))
    proposal = proposer.start()
    for i, run in enumerate(runs):
        if proposal is None:
            raise ReplayError(
                f"{space.source}: {len(runs)} runs are recorded but the searcher ends after "
                f"{i}; the parameter file or searcher changed since — start a new search"
            )
        if not run.matches(proposal.point):
            raise ReplayError(
                f"{space.source}: recorded run {i} ran {_point_in(run, proposal.point)} but the "
                f"searcher now proposes {proposal.point}; the parameter file or searcher changed "
                "since the runs were recorded — start a new search"
            )
        proposal = proposer.send(run)
    return Replayed(proposer, proposal, len(runs))


def _point_in(run: Run, point: Mapping[str, Any]) -> dict[str, Any]:
    return {k: run.config.get(k) for k in point}
