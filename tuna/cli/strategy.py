"""The strategy flags ``load_jobs`` and ``tuna search create`` share (issue #16).

``--strategy NAME`` searches a tunable solver's space round by round through the search
driver instead of timing a fixed sample inside one job; ``--budget`` (a count or a share of
the space), ``--patience``, ``--seed``, ``--round-size`` and ``--transfer`` (the model
learns from other problems' measurements too) shape it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from tuna.errors import TunaError
from tuna.search.strategies import STRATEGIES
from tuna.searches.strategy import check_strategy_options, parse_budget

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class StrategyFlags:
    strategy: str | None
    budget: int | float | None
    patience: int | None
    seed: int
    round_size: int
    transfer: bool

    def given(self) -> bool:
        return self.strategy is not None

    def options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`tuna.searches.strategy.load_strategy_searches`."""
        assert self.strategy is not None
        return {
            "strategy": self.strategy,
            "budget": self.budget,
            "patience": self.patience,
            "seed": self.seed,
            "round_size": self.round_size,
            "transfer": self.transfer,
        }


def strategy_options(budget_help: str) -> Callable[[F], F]:
    """The shared flags, as one decorator (``--budget``'s help says what it bounds)."""

    def decorate(f: F) -> F:
        for option in reversed(
            [
                click.option(
                    "--strategy",
                    metavar="NAME",
                    help="Search each tunable solver's space in rounds with this strategy: "
                    f"{', '.join(STRATEGIES)}.",
                ),
                click.option("--budget", "budget_text", metavar="N|SHARE", help=budget_help),
                click.option(
                    "--patience",
                    type=int,
                    help="With --strategy: stop after this many measurements in a row "
                    "without improvement.",
                ),
                click.option(
                    "--seed", type=int, default=0, show_default=True, help="With --strategy."
                ),
                click.option(
                    "--round-size",
                    type=int,
                    default=8,
                    show_default=True,
                    help="With --strategy: candidates per round (one build, one job).",
                ),
                click.option(
                    "--transfer",
                    is_flag=True,
                    help="With --strategy model: learn from every other problem measured on a "
                    "compatible platform too (the session's history rules decide).",
                ),
            ]
        ):
            f = option(f)
        return f

    return decorate


def strategy_flags(
    strategy: str | None,
    budget_text: str | None,
    patience: int | None,
    seed: int,
    round_size: int,
    transfer: bool,
) -> StrategyFlags:
    """The flags checked (one clear line for a bad value; nothing is written)."""
    budget = parse_budget(budget_text) if budget_text is not None else None
    if strategy is None:
        if transfer or patience is not None:
            raise TunaError("--transfer and --patience go with --strategy NAME")
        return StrategyFlags(None, budget, None, seed, round_size, False)
    if round_size < 1:
        raise TunaError(f"--round-size {round_size}: give at least 1")
    check_strategy_options(strategy, budget, patience, transfer)
    return StrategyFlags(strategy, budget, patience, seed, round_size, transfer)
