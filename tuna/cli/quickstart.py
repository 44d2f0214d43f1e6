"""``tuna quickstart``: the main job on the embedded default, with no set-up."""

from __future__ import annotations

import os
import time

import click
from rich.live import Live
from rich.table import Table

from tuna.cli.base import (
    TunaCommand,
    console,
    database,
    err_console,
    verbose_option,
    workers_option,
)
from tuna.cli.fish_progress import progress_table
from tuna.config import load_settings, log_dir
from tuna.db.enums import JobState
from tuna.fleet.local import Progress, Task
from tuna.fleet.quickstart import QuickstartResult, run_quickstart


def _x(value: float | None) -> str:
    return f"{value:.1f}x" if value else "-"


def _turns(spread: tuple[float, float, int] | None) -> str:
    """The spread beside the figure: its problems' slowest and fastest turns."""
    if spread is None:
        return ""
    low, high, turns = spread
    return f", {low:.2f}x-{high:.2f}x over {turns} turns"


def _unstable(result: QuickstartResult) -> str:
    """Said next to the figure, not only in a log, when a winner's timings spread widely."""
    if not result.unstable:
        return ""
    return (
        f" (timings unstable: a winner's repeated runs spread {result.spread:.2f}x, "
        "a busy machine?; each counts by its fastest)"
    )


@click.command("quickstart", cls=TunaCommand)
@workers_option
@click.option(
    "--candidates",
    type=click.IntRange(min=1),
    default=24,
    show_default=True,
    help="Candidates compiled and timed per tunable solver and problem.",
)
@verbose_option
def quickstart(workers: int | None, candidates: int) -> None:
    """Tune a few real convolutions on this machine, with no configuration.

    Uses the database from the environment — by default an embedded SQLite database in
    your data directory, created on first use — and the built-in CPU backend (cpuconv:
    convolution kernels in C, compiled with the system C compiler and timed here).
    Imports four resnet50 layers at batch 1, creates a session for this CPU (and one for
    the untuned defaults), loads the jobs, compiles with -w local workers and evaluates
    with one of them (a timing owns the whole machine), and shows per layer the fastest
    solver, its time, and its speed-up over the naive solver and over its own untuned
    defaults.

    \b
    Example:
      tuna quickstart
    """
    settings = load_settings()
    started = time.monotonic()
    db = database()
    stage = {"name": ""}
    try:
        with Live(console=err_console, transient=True, auto_refresh=False) as live:

            def show(p: Progress) -> None:
                table = progress_table(p, Task.COMPILE)
                table.title = stage["name"]
                live.update(table, refresh=True)

            result = run_quickstart(
                db,
                settings.db_url.render_as_string(hide_password=False),
                workers=workers or os.cpu_count() or 1,
                log_dir=log_dir(),
                candidates=candidates,
                on_stage=lambda name: stage.update(name=name),
                on_progress=show,
            )
    finally:
        db.dispose()
    imported = result.imported
    console.print(
        f"{db.url_masked}: {imported.configs} problems tagged 'quickstart' "
        f"({imported.inserted} new); sessions {result.tuned_session} (tuned) and "
        f"{result.default_session} (default parameters)",
        markup=False,
        soft_wrap=True,
    )
    for run in result.runs:
        c = dict(run.final.counts.by_state)
        if run.task is Task.COMPILE:  # the evaluator may have taken some on already
            moved_on = c.pop(JobState.EVAL_START, 0) + c.pop(JobState.EVALUATED, 0)
            c[JobState.COMPILED] = c.get(JobState.COMPILED, 0) + moved_on
        # The workers move on as soon as a stage has nothing ready: a stage may be done
        # before go_fish starts watching it (the second compile, beside the first).
        early = any(e.startswith("nothing to do") for e in run.events)
        console.print(
            f"  session {run.session} {run.task.value}: "
            + ", ".join(f"{st.value} {n}" for st, n in c.items() if n)
            + (" (alongside the stage before)" if early else f" in {run.final.elapsed_s:.1f} s"),
            markup=False,
        )
    table = Table(title="Fastest solver per problem (cpuconv, this CPU)", title_justify="left")
    for col in (
        "problem (find-db key)",
        "fastest solver",
        "params",
        "time ms",
        "vs naive",
        "vs default params",
    ):
        table.add_column(
            col, justify="right" if col in ("time ms", "vs naive", "vs default params") else "left"
        )
    for r in result.rows:
        table.add_row(
            r.key, r.solver, r.params or "-", f"{r.time_ms:.3f}", _x(r.vs_naive), _x(r.vs_default)
        )
    console.print(table)
    geo = result.speed_up
    if geo:
        console.print(
            f"geometric mean speed-up of tuning over default parameters: {geo:.2f}x"
            f"{_turns(result.spread_of_turns)} (each problem's fastest solver against the same "
            f"solver with its defaults, timed in turns beside it){_unstable(result)}",
            markup=False,
        )
    console.print(
        f"done in {time.monotonic() - started:.0f} s. Next: query_db -f FILE, "
        "tuna jobs status --session N, SELECT ... FROM find_db (see docs/how-to/sql.md).",
        markup=False,
    )
