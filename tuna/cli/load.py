"""``load_jobs``: queue one job per (config, applicable solver) of a session."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import TunaCommand, console, database, verbose_option
from tuna.jobs.load import load_jobs


@click.command("load_jobs", cls=TunaCommand)
@click.option("-t", "--tag", help="Load the configs with this tag.")
@click.option(
    "--all_configs",
    "--all-configs",
    "all_configs",
    is_flag=True,
    help="Load every config in the catalogue.",
)
@click.option(
    "--session",
    "--session_id",
    "session_id",
    type=int,
    required=True,
    help="Session the jobs belong to.",
)
@click.option(
    "--step",
    type=click.Choice(["perf", "find", "kernel"]),
    default="perf",
    show_default=True,
    help="What the jobs produce.",
)
@click.option("-s", "--solvers", help="Comma-separated solver names (default: all).")
@click.option(
    "--only_tunable", "--only-tunable", "only_tunable", is_flag=True, help="Only tunable solvers."
)
@click.option("-l", "--label", help="Label the jobs (e.g. a ticket or a reason).")
@click.option("--priority", type=int, default=0, show_default=True, help="Lower runs first.")
@click.option(
    "--force",
    is_flag=True,
    help="Queue work even if a session with the same fingerprint finished it.",
)
@verbose_option
def load_jobs_cmd(
    tag: str | None,
    all_configs: bool,
    session_id: int,
    step: str,
    solvers: str | None,
    only_tunable: bool,
    label: str | None,
    priority: int,
    force: bool,
) -> None:
    """Queue jobs: one per (config, applicable solver), never duplicated.

    \b
    Examples:
      load_jobs -t resnet50 --session 3 --step perf
      load_jobs --all_configs --session 3 --step find -s ConvDirectNaive,ConvGemm -l retune
    """
    names = [s.strip() for s in solvers.split(",") if s.strip()] if solvers else None
    db = database()
    try:
        report = load_jobs(
            db,
            session_id,
            step=step,
            tag=tag,
            all_configs=all_configs,
            solvers=names,
            only_tunable=only_tunable,
            label=label,
            priority=priority,
            force=force,
        )
    finally:
        db.dispose()
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("configs", str(report.configs))
    table.add_row("(config, solver) pairs", str(report.candidates))
    table.add_row("jobs queued", str(report.inserted))
    table.add_row("already queued", str(report.already_queued))
    for other, n in sorted(report.done_elsewhere.items()):
        table.add_row(f"done in session {other} (same fingerprint)", str(n))
    for reason, n in report.not_applicable.most_common():
        table.add_row(f"not applicable: {escape(reason)}", str(n))
    console.print(f"session {session_id}, step {step}:", markup=False)
    console.print(table)
    if report.by_solver:
        console.print(
            "queued per solver: "
            + ", ".join(f"{name} {n}" for name, n in sorted(report.by_solver.items())),
            markup=False,
        )
    if report.done_elsewhere:
        console.print("(pass --force to queue work already done with the same fingerprint)")


def load_jobs_main() -> None:
    load_jobs_cmd(prog_name="load_jobs")
