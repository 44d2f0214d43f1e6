"""``tuna solvers`` and ``tuna applicability``: what the session's library build says.

For the miopen backend both ask fin inside the session's environment (``FIN_PATH``);
other backends answer from their own code. The answers are stored, and ``load_jobs``
uses the stored applicability.
"""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import TunaGroup, console, database, emit, output_options, session_option
from tuna.sessions import get_session, list_solvers, update_solvers
from tuna.sessions.applicability import update_applicability

_SHOWN = 10  # names listed per line of a report

_SESSION_HELP = "Session whose library build is asked."


def _names(names: list[str]) -> str:
    more = len(names) - _SHOWN
    return ", ".join(names[:_SHOWN]) + (f" and {more} more" if more > 0 else "")


@click.group("solvers", cls=TunaGroup)
def solvers_group() -> None:
    """The solver table: which solvers a backend's library build has.

    \b
    Examples:
      tuna solvers update --session 3
      tuna solvers list --backend miopen
    """


@solvers_group.command("update")
@session_option(_SESSION_HELP)
def update_cmd(session_id: int) -> None:
    """Store the solvers the session's library build reports (miopen: fin get_solvers).

    New solvers are added, known ones take the reported tunable flag and id, and solvers
    no longer reported are marked invalid.

    \b
    Example:
      tuna solvers update --session 3
    """
    db = database()
    try:
        report = update_solvers(db, session_id)
    finally:
        db.dispose()
    source = "the library build" if report.source == "library" else "the backend"
    console.print(
        f"session {session_id}, backend {report.backend}: {report.reported} solvers "
        f"reported by {source}",
        markup=False,
    )
    for what, names in (
        ("added", report.added),
        ("updated", report.updated),
        ("retired (no longer reported)", report.retired),
    ):
        if names:
            console.print(f"{what} {len(names)}: {_names(names)}", markup=False)
    console.print(f"unchanged {report.unchanged}", markup=False)


_COLUMNS = ("id", "backend", "name", "library_id", "tunable", "algorithm", "valid")


@solvers_group.command("list")
@click.option("--backend", help="Only this backend's solvers.")
@session_option("Only the solvers of this session's backend.", required=False)
@output_options()
def list_cmd(backend: str | None, session_id: int | None, output: str | None) -> None:
    """List the solver table.

    \b
    Examples:
      tuna solvers list --backend miopen
      tuna solvers list --session 3 --csv
    """
    db = database()
    try:
        if session_id is not None:
            backend = get_session(db, session_id).backend
        rows = list_solvers(db, backend)
    finally:
        db.dispose()
    listed = [
        dict(
            zip(
                _COLUMNS,
                (r.id, r.backend, r.name, r.numeric_id, r.tunable, r.algorithm, r.valid),
                strict=True,
            )
        )  # fmt: skip
        for r in rows
    ]
    if emit(listed, output, fields=_COLUMNS):
        return
    table = Table(title="Solvers", title_justify="left")
    for col in ("id", "backend", "name", "library id", "tunable", "algorithm", "valid"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            str(r.id),
            escape(r.backend),
            escape(r.name),
            "-" if r.numeric_id is None else str(r.numeric_id),
            "yes" if r.tunable else "no",
            escape(r.algorithm or "-"),
            "yes" if r.valid else "no",
        )
    console.print(table)


@click.group("applicability", cls=TunaGroup)
def applicability_group() -> None:
    """Which solvers apply to which configs, as the session's library build says.

    \b
    Example:
      tuna applicability update --session 3 -t resnet50
    """


@applicability_group.command("update")
@session_option(_SESSION_HELP)
@click.option("-t", "--tag", help="Only the configs with this tag (default: every config).")
def applicability_update_cmd(session_id: int, tag: str | None) -> None:
    """Ask which solvers apply to each config and store the answers for load_jobs.

    The miopen backend runs fin's applicability step on the session's MIOpen build, in
    batches; a config fin gives no answer for keeps its earlier rows and is listed.

    \b
    Examples:
      tuna applicability update --session 3 -t resnet50
      tuna applicability update --session 3
    """
    db = database()
    try:
        report = update_applicability(db, session_id, tag=tag)
    finally:
        db.dispose()
    source = "asked the library build" if report.source == "library" else "asked the backend"
    console.print(
        f"session {session_id}, backend {report.backend} ({source}): {report.configs} "
        f"config(s), {report.answered} answered",
        markup=False,
    )
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("applicable (config, solver) pairs", str(report.applicable))
    table.add_row("not applicable (config, solver) pairs", str(report.not_applicable))
    table.add_row("configs without an answer", str(len(report.failed)))
    console.print(table)
    for cid, why in sorted(report.failed.items())[:_SHOWN]:
        console.print(f"no answer for config {cid}: {why}", markup=False)
    if report.unknown_solvers:
        console.print(
            f"solvers the library named that the solver table lacks (run `tuna solvers update "
            f"--session {session_id}`): {_names(sorted(report.unknown_solvers))}",
            markup=False,
        )
