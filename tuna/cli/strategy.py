"""The strategy flags ``load_jobs``, ``tuna search create`` and ``tuna session create``
share (issue #16).

``--strategy NAME`` searches a tunable solver's space round by round through the search
driver instead of timing a fixed sample inside one job; ``--budget`` (a count or a share of
the space), ``--patience``, ``--seed``, ``--round-size``, ``--transfer`` (the model
learns from other problems' measurements too) and ``--remeasure`` (time again what a
session whose history counts measured already) shape it. On ``tuna session create`` they
are the session's default: a ``load_jobs`` without ``--strategy`` searches with them
(``--strategy NAME`` overrides them for one load, ``--strategy none`` queues perf jobs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from tuna.cli.base import database
from tuna.errors import TunaError
from tuna.searchers.objective import parse_target
from tuna.searchers.strategies import (
    DEFAULT_ROUND_SIZE,
    DEFAULT_SEED,
    STRATEGIES,
    StrategyOptions,
)
from tuna.searchers.timebudget import parse_duration
from tuna.searches.strategy import StrategyAims, strategy_objective

F = TypeVar("F", bound=Callable[..., Any])


#: ``load_jobs --strategy none``: the perf jobs, whatever the session's default strategy.
NONE = "none"


def parse_budget(text: str) -> int | float:
    """``--budget``: a count (``64``) or a share of the space (``0.1``, ``10%``)."""
    raw = text.strip()
    try:
        if raw.endswith("%"):
            return float(raw[:-1]) / 100
        return float(raw) if "." in raw else int(raw)
    except ValueError as e:
        raise TunaError(
            f"budget {text!r}: give a count of measurements (64), or a share of the space "
            "(0.1 or 10%)"
        ) from e


@dataclass(frozen=True)
class StrategyFlags:
    """The seven strategy flags as typed (None: not given), handed to a command as one value
    by :func:`strategy_options`; :meth:`resolve` makes the :class:`StrategyOptions`."""

    strategy: str | None = None
    budget_text: str | None = None
    patience: int | None = None
    seed: int | None = None
    round_size: int | None = None
    transfer: bool = False
    remeasure: bool = False

    def budget(self) -> int | float | None:
        return parse_budget(self.budget_text) if self.budget_text is not None else None

    def resolve(self, default: Mapping[str, Any] | None = None) -> StrategyOptions | None:
        """The strategy to search with, or None for none (one clear line for a bad value;
        nothing is written).

        ``default`` is the session's default strategy (``load_jobs``): without --strategy it
        is the search, each flag given overriding its value; ``--strategy none`` is no
        search. Without a strategy, only ``--budget`` may be given (a search's count of runs).
        """
        budget = self.budget()
        patience, seed, round_size = self.patience, self.seed, self.round_size
        strategy, transfer, remeasure = self.strategy, self.transfer, self.remeasure
        if default is not None and strategy == NONE:
            if (
                transfer
                or remeasure
                or any(v is not None for v in (budget, patience, seed, round_size))
            ):
                raise TunaError(
                    "--strategy none queues perf jobs: leave out --budget, --patience, --seed, "
                    "--round-size, --transfer and --remeasure"
                )
            return None
        if default and strategy is None:
            strategy = str(default["strategy"])
            budget = budget if budget is not None else default.get("budget")
            patience = patience if patience is not None else default.get("patience")
            seed = seed if seed is not None else default.get("seed")
            round_size = round_size if round_size is not None else default.get("round_size")
            transfer = transfer or bool(default.get("transfer"))
            remeasure = remeasure or bool(default.get("remeasure"))
        if strategy is None:
            if transfer or remeasure or patience is not None:
                raise TunaError("--transfer, --remeasure and --patience go with --strategy NAME")
            return None
        return StrategyOptions(
            strategy,
            budget,
            patience,
            DEFAULT_SEED if seed is None else seed,
            DEFAULT_ROUND_SIZE if round_size is None else round_size,
            transfer,
            remeasure,
        )


def strategy_aims(
    objectives: Sequence[str], constraints: Sequence[str], time_budget: str | None
) -> StrategyAims:
    """``--objective STAT:min|max`` (repeated), ``--constraint`` and ``--time-budget`` of a
    strategy search, checked (one line each; :func:`tuna.searches.strategy.check_objective`
    checks the stats against the solver's when the space is known)."""
    targets = [parse_target(o) for o in objectives]
    seconds = parse_duration(time_budget) if time_budget is not None else None
    return StrategyAims(strategy_objective(targets, constraints), seconds)


def session_strategy(session_id: int) -> dict[str, Any]:
    """The session's default strategy ({} for none); a missing session is an error."""
    from tuna.sessions import get_session

    db = database()
    try:
        return dict(get_session(db, session_id).default_strategy)
    finally:
        db.dispose()


def describe_strategy(options: Mapping[str, Any] | None) -> str:
    """A stored default strategy in a line (``-`` for none): ``model budget 10% ...``."""
    if not options:
        return "-"
    words = [str(options["strategy"])]
    budget = options.get("budget")
    if isinstance(budget, float):
        words.append(f"budget {budget * 100:g}%")
    elif budget is not None:
        words.append(f"budget {budget}")
    if options.get("patience") is not None:
        words.append(f"patience {options['patience']}")
    if options.get("seed", DEFAULT_SEED) != DEFAULT_SEED:
        words.append(f"seed {options['seed']}")
    if options.get("round_size", DEFAULT_ROUND_SIZE) != DEFAULT_ROUND_SIZE:
        words.append(f"round size {options['round_size']}")
    if options.get("transfer"):
        words.append("transfer")
    if options.get("remeasure"):
        words.append("remeasure")
    return " ".join(words)


def strategy_options(budget_help: str, strategy_help: str = "") -> Callable[[F], F]:
    """The seven flags, as one decorator (``--budget``'s help says what it bounds): the
    command receives them as one :class:`StrategyFlags`, ``flags``."""

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def command(
            *args: Any,
            strategy: str | None,
            budget_text: str | None,
            patience: int | None,
            seed: int | None,
            round_size: int | None,
            transfer: bool,
            remeasure: bool,
            **kwargs: Any,
        ) -> Any:
            flags = StrategyFlags(
                strategy, budget_text, patience, seed, round_size, transfer, remeasure
            )
            return f(*args, flags=flags, **kwargs)

        wrapped: Any = command
        for option in reversed(
            [
                click.option(
                    "--strategy",
                    metavar="NAME",
                    help="Search each tunable solver's space in rounds with this strategy: "
                    f"{', '.join(STRATEGIES)}. tpe, cmaes, gp and nsga2 are Optuna's samplers "
                    "(pip install 'tuna[optuna]'; gp also needs PyTorch: 'tuna[gp]')."
                    f"{strategy_help}",
                ),
                click.option("--budget", "budget_text", metavar="N|SHARE", help=budget_help),
                click.option(
                    "--patience",
                    type=int,
                    help="With --strategy: stop after this many measurements in a row "
                    "without improvement.",
                ),
                click.option("--seed", type=int, help=f"With --strategy (default {DEFAULT_SEED})."),
                click.option(
                    "--round-size",
                    type=int,
                    help="With --strategy: candidates per round (one build, one job; "
                    f"default {DEFAULT_ROUND_SIZE}).",
                ),
                click.option(
                    "--transfer",
                    is_flag=True,
                    help="With --strategy model or sliced: learn from every other problem "
                    "measured on a "
                    "compatible platform too (the session's history rules decide).",
                ),
                click.option(
                    "--remeasure",
                    is_flag=True,
                    help="With --strategy: time a candidate again though a session whose "
                    "history counts (the session's rules: `tuna session rules`) measured it "
                    "already; by default its stored time is used and no job times it.",
                ),
            ]
        ):
            wrapped = option(wrapped)
        return wrapped

    return decorate
