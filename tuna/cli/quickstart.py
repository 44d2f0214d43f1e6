"""``tuna quickstart``: the main job on the embedded default, with no set-up."""

from __future__ import annotations

from collections import Counter
from importlib import resources

import click
from rich.table import Table

from tuna.catalog.importer import import_configs
from tuna.catalog.parsing import ConvEntry, read_lines
from tuna.cli.base import TunaCommand, console, database, verbose_option
from tuna.cli.catalog import print_import_report

SAMPLE = "resnet50.txt"


@click.command("quickstart", cls=TunaCommand)
@click.option(
    "-b",
    "--batch",
    default=4,
    show_default=True,
    help="Batch size the sample layers are imported at.",
)
@verbose_option
def quickstart(batch: int) -> None:
    """Run the catalogue end to end on this machine, with no configuration.

    Uses the database from the environment, by default an embedded SQLite database in
    your data directory (created on first use). Imports resnet50's layers (a copy of
    MIOpenDriver lines shipped with Tuna) at a small batch size, tags them, and shows
    the catalogue with each problem's MIOpen find-db key.

    \b
    Example:
      tuna quickstart
    """
    text = resources.files("tuna.catalog.samples").joinpath(SAMPLE).read_text()
    lines = read_lines(text)
    db = database()
    try:
        report = import_configs(
            db, lines, tag="quickstart-resnet50", source=f"sample {SAMPLE}", batches=[batch]
        )
    finally:
        db.dispose()
    print_import_report(
        report, f"sample {SAMPLE} at batch {batch}", "quickstart-resnet50", db.url_masked
    )
    conv = [e for e in report.entries if isinstance(e, ConvEntry)]
    by_dir = Counter(e.problem.direction for e in conv)
    table = Table(
        title=f"resnet50 at batch {batch}: {len(conv)} problems "
        f"({by_dir['F']} F, {by_dir['B']} B, {by_dir['W']} W)",
        title_justify="left",
    )
    table.add_column("line", justify="right")
    table.add_column("dir")
    table.add_column("find-db key", overflow="fold")
    for e in conv:
        table.add_row(str(e.line_no), e.problem.direction, e.key)
    console.print(table)
    console.print("Next: query_db -f FILE, import_configs -t TAG -f FILE (see `tuna --help`).")
