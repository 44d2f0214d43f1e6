"""``go_fish``'s commands on the machines themselves, not a phase: ``-e`` runs a command on
each (:func:`exec_on`), ``--status`` checks each (:func:`status_of`), ``--clean`` removes
what killed runs left (:func:`clean_on`)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import console, database, err_console
from tuna.fleet.inspect import clean_everywhere, fleet_status, run_everywhere
from tuna.fleet.machines import MachineRow, list_machines
from tuna.fleet.ssh import Connections


def fleet_machines(arch: str | None, num_cu: int | None, ids: tuple[int, ...]) -> list[MachineRow]:
    db = database()
    try:
        return list_machines(db, arch=arch, num_cu=num_cu, ids=ids, available_only=True)
    finally:
        db.dispose()


def _connections(known_hosts: Path | None) -> Connections:
    return Connections(known_hosts)


def exec_on(machines: list[MachineRow], command: str, known_hosts: Path | None) -> None:
    """``go_fish -e``: run a command on every machine, print each result, fail once at the end."""
    with _connections(known_hosts) as conns:
        outcomes = run_everywhere(conns, machines, command)
    failed = 0
    for o in outcomes:
        if o.value is not None:
            status = o.value.exit_status
            failed += status != 0
            console.rule(f"{escape(str(o.host))}: exit {status}", align="left")
            out = (o.value.stdout + o.value.stderr).rstrip()
            if out:
                console.print(out, markup=False, highlight=False, soft_wrap=True)
        else:
            failed += 1
            console.rule(f"{escape(str(o.host))}: unreachable", align="left")
            err_console.print(str(o.error), markup=False, soft_wrap=True)
    console.print(f"{len(outcomes) - failed} of {len(outcomes)} machine(s) succeeded")
    if failed:
        raise click.exceptions.Exit(1)


def status_of(machines: list[MachineRow], image: str | None, known_hosts: Path | None) -> None:
    """``go_fish --status``: a table of every machine's reachability, engine, image, GPUs."""
    with _connections(known_hosts) as conns:
        rows = fleet_status(conns, machines, image)
    table = Table(title=f"machines (image {image or 'not checked'})", title_justify="left")
    for col in (
        "id",
        "host",
        "arch",
        "reachable",
        "docker",
        "image",
        "GPUs (registered / seen)",
        "left over by killed runs",
    ):
        table.add_column(col)
    for st in rows:
        m = st.machine
        table.add_row(
            str(m.id),
            escape(m.hostname),
            m.arch or "",
            f"yes, {st.latency_ms:.0f} ms"
            if st.reachable
            else f"[red]no[/]: {escape(st.error or '')}",
            escape(st.docker or "") if st.docker_ok else f"[red]{escape(st.docker or '-')}[/]",
            escape(st.image or "-")
            if st.image_ok or not image
            else f"[red]{escape(st.image or '-')}[/]",
            f"{','.join(map(str, m.gpus)) or '-'} / {escape(st.devices or '-')}",
            "-"
            if st.leftovers is None or st.leftovers.empty
            else f"[yellow]{escape(st.leftovers.describe())}[/]",
        )
    console.print(table)
    if any(st.leftovers and not st.leftovers.empty for st in rows):
        console.print(
            "go_fish --clean stops and removes what killed go_fish runs left (containers, "
            "run folders with the database URL) and collects their workers' logs",
            markup=False,
            soft_wrap=True,
        )
    if not all(s.reachable and s.docker_ok and (s.image_ok or not image) for s in rows):
        raise click.exceptions.Exit(1)


def clean_on(machines: list[MachineRow], known_hosts: Path | None, log_dir: Path) -> None:
    """``go_fish --clean``: remove what killed go_fish runs left on every machine."""
    with _connections(known_hosts) as conns:
        outcomes = clean_everywhere(conns, machines, log_dir)
    failed = 0
    for m, o in zip(machines, outcomes, strict=True):
        if o.value is None:
            failed += 1
            err_console.print(f"{m.label}: {o.error}", markup=False, soft_wrap=True)
        elif o.value.empty:
            console.print(f"{m.label}: nothing left over", markup=False)
        else:
            console.print(
                f"{m.label}: removed {o.value.describe()}; logs under {log_dir}",
                markup=False,
                soft_wrap=True,
            )
    if failed:
        raise click.exceptions.Exit(1)
