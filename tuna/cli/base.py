"""Click plumbing shared by every command: errors, output, logging, the database.

The CLI is the only layer that prints or exits. A :class:`TunaError` becomes
``Error: <message>`` on stderr and exit status 1.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import enum
import functools
import io
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tuna.config import MAX_WORKERS, load_settings
from tuna.db import Database, open_database
from tuna.errors import TunaError
from tuna.jobs.values import DEFAULT_LEASE_SECONDS, DEFAULT_MAX_RETRIES
from tuna.worker.settings import WorkerSettings

if TYPE_CHECKING:  # what __getattr__ below hands out, for the type checker
    from tuna.cli.console import PIPE_WIDTH as PIPE_WIDTH
    from tuna.cli.console import RULE_WIDTH as RULE_WIDTH
    from tuna.cli.console import TunaConsole as TunaConsole
    from tuna.cli.console import console as console
    from tuna.cli.console import err_console as err_console

F = TypeVar("F", bound=Callable[..., Any])

# The rich consoles live in tuna.cli.console and are imported on first use (module
# __getattr__ below): ``from tuna.cli.base import console`` works as ever, and a worker, which
# prints one plain line at its end, starts without importing rich.
_CONSOLE_NAMES = frozenset({"PIPE_WIDTH", "RULE_WIDTH", "TunaConsole", "console", "err_console"})


def __getattr__(name: str) -> Any:
    if name in _CONSOLE_NAMES:
        from tuna.cli import console as consoles

        return getattr(consoles, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


HELP_OPTION_NAMES = ["-h", "--help"]
"""``-h`` works on every command, also when one is run under its own name (``load_jobs -h``)."""


class _TunaErrors:
    """Mixin: turn a TunaError raised by a command into click's ``Error: ...`` exit 1;
    ``-h`` is ``--help`` (MITuna's commands took both)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        settings = dict(kwargs.pop("context_settings", None) or {})
        settings.setdefault("help_option_names", HELP_OPTION_NAMES)
        super().__init__(*args, context_settings=settings, **kwargs)  # type: ignore[call-arg]

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """MITuna's flags that Tuna does not take name what to type instead
        (:mod:`tuna.cli.mituna`), rather than click's guess at a Tuna flag."""
        from tuna.cli.mituna import instead, subcommand_form

        name = ctx.command.name or ""

        if ctx.info_name == "go_fish" and (form := subcommand_form(args)):
            raise click.UsageError(
                f"MITuna's `go_fish.py miopen {form.split()[0]}` is a command of its own in "
                f"Tuna: type `{form}`",
                ctx,
            )
        try:
            return super().parse_args(ctx, args)  # type: ignore[misc]
        except click.NoSuchOption as e:
            if pointer := instead(name, e.option_name):
                raise click.UsageError(
                    f"{e.option_name} is MITuna's; in Tuna: {pointer}", ctx
                ) from None
            raise
        except click.BadOptionUsage as e:  # e.g. "-s requires an argument": MITuna's switch
            if pointer := instead(name, e.option_name, differs=True):
                raise click.UsageError(f"{e.message.rstrip('.')}: {pointer}", ctx) from None
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)  # type: ignore[misc]
        except TunaError as e:
            raise click.ClickException(str(e)) from e


class TunaCommand(_TunaErrors, click.Command):
    pass


class TunaGroup(_TunaErrors, click.Group):
    command_class = TunaCommand
    group_class = type


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
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    from tuna.cli.console import err_console

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
    type=click.IntRange(min=1, max=MAX_WORKERS),
    default=None,
    help=f"Worker processes, at most {MAX_WORKERS} (default: one per CPU core).",
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


# One range per column type (tuna/db/tables.py), checked before the database sees a value:
# SQLite stores any 64-bit integer where MariaDB refuses what is past the column, and both
# raised tracebacks past 64 bits. A value past its range is refused in one line by click.
INT_MAX = 2**31 - 1  # INTEGER columns: ids, CU counts, versions, retries
SMALLINT_MAX = 2**15 - 1  # SMALLINT: job priority
ID_RANGE = click.IntRange(1, INT_MAX)  # a row's id
COUNT_RANGE = click.IntRange(0, INT_MAX)  # a count stored in (or compared with) an INT column
INT_RANGE = click.IntRange(-INT_MAX - 1, INT_MAX)
VERSION_RANGE = click.IntRange(1, INT_MAX)  # a golden version: numbered from 1, an INT column
SMALLINT_RANGE = click.IntRange(-SMALLINT_MAX - 1, SMALLINT_MAX)


def worker_settings_options(fn: F) -> F:
    """The options that set how workers work (:class:`WorkerSettings`), shared by ``tuna
    worker`` and ``go_fish``; the command receives them as one ``settings`` argument."""
    options = [
        click.option(
            "--claim-batch",
            type=click.IntRange(1, INT_MAX),
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
            type=COUNT_RANGE,
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


# --- options shared by every command (one definition; go_fish and worker use them too) ---------


class SessionId(click.ParamType):
    """A session id; a value that is not one says what MITuna meant by the flag (``hint``)."""

    name = "integer"

    def __init__(self, hint: str | None = None) -> None:
        self.hint = hint

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            number = int(value)
        except ValueError:
            hint = f"; {self.hint}" if self.hint else ""
            self.fail(f"{value!r} is not a session id (a number){hint}", param, ctx)
        return ID_RANGE.convert(number, param, ctx)


def session_option(
    help: str = "Session to work on.",  # noqa: A002 (click's name)
    *,
    required: bool = True,
    hint: str | None = None,
) -> Callable[[F], F]:
    """``-s/--session/--session_id N``: how every command takes a session.

    ``-s`` is the session everywhere in Tuna (MITuna's ``load_job -s`` was ``--solvers``,
    which keeps its long name); ``--session_id`` is MITuna's spelling. Given twice, in any
    spelling and order, it is refused: click would keep the last, and MITuna's
    ``load_job -s SOLVER --session_id N`` would load every solver.
    """

    def once(ctx: click.Context, param: click.Parameter, values: tuple[int, ...]) -> int | None:
        if len(values) > 1:
            more = f" {hint}" if hint else ""
            raise click.BadParameter(
                f"the session is given twice ({', '.join(map(str, values))}); give it once." + more,
                ctx,
                param,
            )
        return values[0] if values else None

    return click.option(
        "-s",
        "--session",
        "--session_id",
        "session_id",
        type=SessionId(hint),
        multiple=True,
        required=required,
        callback=once,
        help=help,
    )


def output_options(*, csv_too: bool = True) -> Callable[[F], F]:
    """``--json`` (and ``--csv``) for a listing: machine-readable output on stdout."""

    def decorate(f: F) -> F:
        if csv_too:
            f = click.option(
                "--csv",
                "output",
                flag_value="csv",
                help="Print CSV (a header row, then one row per line) instead of a table.",
            )(f)
        f = click.option(
            "--json",
            "output",
            flag_value="json",
            help="Print JSON instead of a table.",
        )(f)
        return f

    return decorate


def emit(
    rows: list[dict[str, Any]],
    output: str | None,
    document: Any = None,
    *,
    fields: Sequence[str] = (),
) -> bool:
    """Print ``rows`` as JSON (``document`` instead, when given) or CSV; False for a table.

    Values are printed as they are: numbers stay numbers, None is JSON null / an empty CSV
    field, dates are ISO 8601. A CSV of no rows is its header alone, the columns ``fields``
    names (a listing's rows name their own).
    """
    if output == "json":
        click.echo(json_text(rows if document is None else document), nl=False)
        return True
    if output == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(
            out, fieldnames=list(rows[0]) if rows else list(fields), lineterminator="\n"
        )
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _csv_value(v) for k, v in r.items()})
        click.echo(out.getvalue(), nl=False)
        return True
    return False


def json_text(document: Any) -> str:
    """``document`` as the commands print JSON (``--json``, ``tuna best``): indented, one
    trailing newline, times and dates in ISO 8601 (``2026-11-28T03:26:53``), enums by
    value. The one place a command turns values into JSON, so two commands showing one
    row print it alike."""
    return json.dumps(document, indent=2, default=_jsonable) + "\n"


def columns(row_type: Any) -> list[str]:
    """The fields of a dataclass, in order: the CSV columns of a listing of its rows."""
    return [f.name for f in dataclasses.fields(row_type)]


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"cannot print {type(value).__name__} as JSON")


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, default=_jsonable)
    if isinstance(value, bool):
        return int(value)
    return _jsonable(value) if isinstance(value, dt.date | enum.Enum | Path) else value
