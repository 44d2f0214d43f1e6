"""Click plumbing shared by every command: errors, output, logging, the database.

The CLI is the only layer that prints or exits. A :class:`TunaError` becomes
``Error: <message>`` on stderr and exit status 1.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from rich.console import Console, ConsoleDimensions
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.rule import Rule
from rich.table import Table

from tuna.config import load_settings
from tuna.db import Database, open_database
from tuna.errors import TunaError
from tuna.jobs.states import DEFAULT_LEASE_SECONDS, DEFAULT_MAX_RETRIES
from tuna.worker.settings import WorkerSettings

F = TypeVar("F", bound=Callable[..., Any])

PIPE_WIDTH = 1_000_000
"""Width of output that is not a terminal: nothing a script reads is ever cut or folded."""
RULE_WIDTH = 80


class TunaConsole(Console):
    """Rich's console on a terminal; into a pipe or a file, full-width plain output.

    Piped, no line is wrapped at 80 columns (COLUMNS is ignored) and tables are printed
    without box drawing, columns separated by spaces: ``grep``/``awk`` see whole keys
    and names. Scripts that want fields should use a listing's ``--json`` or ``--csv``.
    """

    @property
    def size(self) -> ConsoleDimensions:
        dims = super().size
        return dims if self.is_terminal else ConsoleDimensions(PIPE_WIDTH, dims.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not self.is_terminal:
            for obj in objects:
                if isinstance(obj, Table):
                    obj.box = None
                    obj.pad_edge = False
                    obj.show_edge = False
        super().print(*objects, **kwargs)

    def rule(self, title: Any = "", **kwargs: Any) -> None:
        if self.is_terminal:
            super().rule(title, **kwargs)
        else:  # a rule as wide as the pipe would be a million characters
            self.print(Rule(title, **kwargs), width=RULE_WIDTH)


console = TunaConsole(highlight=False, soft_wrap=False)
err_console = TunaConsole(stderr=True, highlight=False)


class _TunaErrors:
    """Mixin: turn a TunaError raised by a command into click's ``Error: ...`` exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except TunaError as e:
            raise click.ClickException(str(e)) from e


class TunaGroup(_TunaErrors, click.Group):
    pass


class TunaCommand(_TunaErrors, click.Command):
    pass


def setup_logging(verbose: int) -> None:
    """Log to stderr at WARNING, or more with -v/-vv. Called for the group's option and
    again for a subcommand's (``tuna worker -v``): a later -v raises the level."""
    level = logging.WARNING - 10 * min(verbose, 2)
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    elif verbose:
        root.setLevel(min(root.level, level))


def database() -> Database:
    """The database from the settings, schema checked (SQLite upgraded on first use)."""
    return open_database(load_settings().db_url)


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Callable[[str, int, int], None] | None]:
    """A ``progress(stage, done, total)`` callback drawing a bar per stage on stderr, or
    None when ``enabled`` is false (short work needs no bar)."""
    if not enabled:
        yield None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=True) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done)

        yield progress


workers_option = click.option(
    "-w",
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: one per CPU core).",
)


verbose_option = click.option(
    "-v",
    "--verbose",
    count=True,
    help="Log more (-v info, -vv debug).",
    callback=lambda _ctx, _p, v: setup_logging(v),
    expose_value=False,
    is_eager=True,
)


def worker_settings_options(fn: F) -> F:
    """The options that set how workers work (:class:`WorkerSettings`), shared by ``tuna
    worker`` and ``go_fish``; the command receives them as one ``settings`` argument."""
    options = [
        click.option(
            "--claim-batch",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Jobs a worker claims per transaction (more is cheaper for short jobs).",
        ),
        click.option(
            "--lease-seconds",
            type=click.FloatRange(min=1),
            default=DEFAULT_LEASE_SECONDS,
            show_default=True,
            help="Lease length of a worker's jobs; its heartbeat renews them at a third.",
        ),
        click.option(
            "--max-retries",
            type=click.IntRange(min=0),
            default=DEFAULT_MAX_RETRIES,
            show_default=True,
            help="Failed tries of a phase retried before a job errors.",
        ),
        click.option(
            "--time-limit",
            type=click.FloatRange(min=0, min_open=True),
            help="Fail a job whose compile or evaluation runs longer than this (seconds).",
        ),
    ]

    @functools.wraps(fn)
    def wrapper(
        *args: Any,
        claim_batch: int,
        lease_seconds: float,
        max_retries: int,
        time_limit: float | None,
        **kwargs: Any,
    ) -> Any:
        settings = WorkerSettings(
            claim_batch=claim_batch,
            lease_seconds=lease_seconds,
            max_retries=max_retries,
            time_limit=time_limit,
        )
        return fn(*args, settings=settings, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]
