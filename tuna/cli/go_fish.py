"""``go_fish``: run one phase of a session on workers until its queue is drained."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import (
    TunaCommand,
    console,
    database,
    err_console,
    verbose_option,
    workers_option,
)
from tuna.config import load_settings
from tuna.config import log_dir as default_log_dir
from tuna.fleet.local import FishReport, Progress, Task, run_local, worker_environment


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    m, s = divmod(int(seconds + 0.5), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def progress_table(p: Progress, task: Task) -> Table:
    table = Table(title=f"session {p.counts.session}: {task.value}", title_justify="left")
    for col in ("state", "jobs"):
        table.add_column(col, justify="right" if col == "jobs" else "left")
    for state, n in p.counts.by_state.items():
        table.add_row(state.value, str(n))
    table.caption = (
        f"{p.finished} done this run, {p.remaining} to go, "
        f"{p.rate:.1f} jobs/s, ETA {_duration(p.eta_s)}, "
        f"{p.workers_alive} worker(s) running, {_duration(p.elapsed_s)} elapsed"
    )
    return table


def print_summary(r: FishReport) -> None:
    c = r.final.counts
    verdict = (
        "interrupted" if r.interrupted else "drained" if r.drained else "stopped with work left"
    )
    console.print(
        f"go_fish {r.task.value}, session {r.session}: {verdict} in {_duration(r.final.elapsed_s)}"
        f" with {r.workers} local worker(s); {r.final.finished} job(s) left the phase, "
        f"{r.final.remaining} remain",
        markup=False,
        soft_wrap=True,
    )
    console.print(
        "  " + ", ".join(f"{st.value} {n}" for st, n in c.by_state.items() if n), markup=False
    )
    bad = [code for code in r.exit_codes if code not in (0, None)]
    if bad:
        err_console.print(
            f"  {len(bad)} worker(s) exited with an error; logs: {r.logs[0].parent}", markup=False
        )
    if c.reasons:
        table = Table(title="Top failure reasons", title_justify="left")
        for col in ("state", "reason", "jobs"):
            table.add_column(col)
        for state, reason, n in c.reasons[:10]:
            table.add_row(state.value, escape(reason), str(n))
        console.print(table)


@click.command("go_fish", cls=TunaCommand)
@click.option(
    "--session",
    "--session_id",
    "session_id",
    type=int,
    required=True,
    help="Session whose jobs to work.",
)
@click.option(
    "--compile",
    "task",
    flag_value=Task.COMPILE.value,
    help="Compile phase: build every candidate (no device needed).",
)
@click.option(
    "--run_perf",
    "task",
    flag_value=Task.RUN_PERF.value,
    help="Evaluate compiled perf jobs: tune, best parameters to the perf db.",
)
@click.option(
    "--run_find",
    "task",
    flag_value=Task.RUN_FIND.value,
    help="Evaluate compiled find jobs: times and workspaces to the find db.",
)
@click.option(
    "--bin_cache",
    "task",
    flag_value=Task.BIN_CACHE.value,
    help="Evaluate compiled kernel jobs: winners' binaries for the kernel db.",
)
@click.option(
    "--local",
    is_flag=True,
    help="Run workers on this machine (the default while no machine is registered).",
)
@workers_option
@click.option(
    "-f",
    "--find_enforce",
    type=click.Choice(["1", "3", "4"]),
    help="MIOPEN_FIND_ENFORCE for the workers (4 also sets MIOPEN_DISABLE_CACHE=1).",
)
@click.option(
    "--claim-batch",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Jobs each worker claims per transaction.",
)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where worker logs go (default: $TUNA_LOG_DIR or <data dir>/logs).",
)
@verbose_option
def go_fish_cmd(
    session_id: int,
    task: str | None,
    local: bool,
    workers: int | None,
    find_enforce: str | None,
    claim_batch: int,
    log_dir: Path | None,
) -> None:
    """Run one phase of a session on workers until its queue is drained.

    Starts worker processes, shows progress (jobs by state, rate, ETA), ends when the
    phase's queue is drained and prints a summary with the top failure reasons. Ctrl-C
    stops the workers: each finishes its current job and hands the rest back.

    \b
    Examples:
      go_fish --session 3 --compile
      go_fish --session 3 --run_perf -w 2
      go_fish --session 3 --run_find -f 3
    """
    if task is None:
        raise click.UsageError("say what to run: --compile, --run_perf, --run_find or --bin_cache")
    chosen = Task(task)
    settings = load_settings()
    logs = log_dir or default_log_dir()
    env = worker_environment(int(find_enforce) if find_enforce else None)
    db = database()
    try:
        with Live(console=err_console, transient=True, auto_refresh=False) as live:

            def show(p: Progress) -> None:
                live.update(progress_table(p, chosen), refresh=True)

            report = run_local(
                db,
                session_id,
                chosen,
                workers=workers or os.cpu_count() or 1,
                log_dir=logs,
                db_url=settings.db_url.render_as_string(hide_password=False),
                extra_env=env,
                worker_args=["--claim-batch", str(claim_batch)],
                on_progress=show,
            )
    finally:
        db.dispose()
    print_summary(report)
    if not report.drained and not report.interrupted:
        raise click.exceptions.Exit(1)


def go_fish_main() -> None:
    go_fish_cmd(prog_name="go_fish")
