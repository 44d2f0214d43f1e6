"""Driving a round searcher in a test: every round it proposes, each point measured at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tuna.searchers import Run
from tuna.searchers.run import Point


def drive_rounds(
    searcher: Any, measure: Callable[[Point], Run], *, reverse: bool = False
) -> list[list[Point]]:
    """The rounds ``searcher.rounds()`` proposes until it ends, each point's run made by
    ``measure``; with ``reverse`` a round's runs are told in the opposite order (a searcher
    must not rely on the order the runs come back in)."""
    gen = searcher.rounds()
    rounds: list[list[Point]] = []
    try:
        batch = next(gen)
        while True:
            assert len(rounds) < 10_000, "the strategy does not end"
            rounds.append(batch)
            batch = gen.send([measure(p) for p in (reversed(batch) if reverse else batch)])
    except StopIteration:
        pass
    return rounds
