"""``import_configs`` and ``query_db``: the problem catalogue."""

from __future__ import annotations

import dataclasses

import click
from rich.markup import escape
from rich.table import Table

from tuna.catalog.importer import COMMANDS, ImportReport, import_configs, read_lines
from tuna.catalog.query import ConfigReport, query_configs
from tuna.cli.base import (
    TunaCommand,
    console,
    database,
    emit,
    err_console,
    output_options,
    progress_bar,
    verbose_option,
)
from tuna.cli.files import read_text_file
from tuna.errors import TunaError
from tuna.problems.driver import line_kind

PROGRESS_MIN_LINES = 5000


def _batches(value: str | None) -> list[int] | None:
    if not value:
        return None
    try:
        out = [int(v) for v in value.split(",") if v.strip()]
    except ValueError as e:
        raise TunaError(f"-b/--batches: {value!r} is not a comma-separated list of integers") from e
    if not out or any(n <= 0 for n in out):
        raise TunaError(f"-b/--batches: {value!r} must list positive batch sizes, e.g. 32,64")
    return out


def _read_input(file: str | None, driver: str | None) -> tuple[str, list[tuple[int, str]]]:
    if (file is None) == (driver is None):
        raise TunaError("give exactly one of -f FILE or -d 'DRIVER LINE'")
    if driver is not None:
        return "-d", [(1, driver.strip())]
    assert file is not None
    return ("<stdin>" if file == "-" else file), read_lines(read_text_file(file))


def print_import_report(report: ImportReport, source: str, tag: str | None, where: str) -> None:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("lines read", str(report.lines))
    table.add_row("distinct configs", str(report.configs))
    table.add_row("inserted", str(report.inserted))
    table.add_row("already present", str(report.already_present))
    if report.not_in_catalogue:
        table.add_row("not in catalogue", str(report.not_in_catalogue))
    table.add_row(f"newly tagged {tag!r}" if tag else "tagged", str(report.tagged))
    for op, n in sorted(report.skipped.items()):
        table.add_row(f"{op} lines skipped", str(n))
    if report.bad:
        table.add_row("bad lines skipped", str(len(report.bad)))
    console.print(f"{source} -> {where}", markup=False, soft_wrap=True)
    console.print(table)
    if report.skipped:
        console.print(
            "(skipped lines are MIOpenDriver operations Tuna does not tune: only "
            "convolution and batch-norm lines enter the catalogue)"
        )
    for e in report.bad:
        err_console.print(f"skipped {e}", markup=False, soft_wrap=True)
    for w in report.warnings:
        err_console.print(f"Warning: {source}: {w}", markup=False, soft_wrap=True)


@click.command("import_configs", cls=TunaCommand)
@click.option("-t", "--tag", help="Tag every imported config with TAG (e.g. the network).")
@click.option(
    "-f",
    "--file_name",
    "--file",
    "file",
    metavar="FILE",
    help="File of MIOpenDriver lines, one per line ('-' reads stdin).",
)
@click.option("-d", "--driver", metavar="LINE", help="A single MIOpenDriver line.")
@click.option(
    "-T",
    "--tag_only",
    is_flag=True,
    help="Only tag configs already in the catalogue; insert nothing.",
)
@click.option(
    "-b",
    "--batches",
    metavar="N,N,...",
    help="Import every line once per batch size, e.g. 32,64 (overrides -n).",
)
@click.option(
    "-c",
    "--command",
    type=click.Choice(COMMANDS),
    help="Override every conv line's precision (conv, convfp16, ...).",
)
@click.option("--mark_recurrent", is_flag=True, help="Mark the tag as a recurrent config list.")
@click.option(
    "--skip-bad",
    "--skip_bad",
    "skip_bad",
    is_flag=True,
    help="Import the good lines and report the bad ones (default: import nothing).",
)
@verbose_option
def import_configs_cmd(
    tag: str | None,
    file: str | None,
    driver: str | None,
    tag_only: bool,
    batches: str | None,
    command: str | None,
    mark_recurrent: bool,
    skip_bad: bool,
) -> None:
    """Import MIOpenDriver command lines into the problem catalogue.

    Each line becomes one config per direction (-F 0 means F, B and W), deduplicated by
    its MIOpen find-db key; the original line is kept. A file with a bad line imports
    nothing and lists every bad line with its number and reason.

    \b
    Examples:
      import_configs -t resnet50 -f resnet50.txt
      import_configs -t resnet50 -f resnet50.txt -b 32,64 -c convfp16
      import_configs -t smoke -d 'MIOpenDriver conv -n 16 -c 64 -H 56 -W 56 -k 64 -F 1'
      import_configs -T -t recurrent -f resnet50.txt --mark_recurrent
    """
    source, lines = _read_input(file, driver)
    batch_sizes = _batches(batches)
    db = database()
    try:
        with progress_bar(len(lines) >= PROGRESS_MIN_LINES) as progress:
            report = import_configs(
                db,
                lines,
                tag=tag,
                source=source,
                tag_only=tag_only,
                batches=batch_sizes,
                command=command,
                recurrent=mark_recurrent,
                skip_bad=skip_bad,
                progress=progress,
            )
    finally:
        db.dispose()
    print_import_report(report, source, tag, db.url_masked)


def _fmt_jobs(r: ConfigReport) -> str:
    if not r.jobs:
        return "-"
    counts: dict[str, int] = {}
    for j in r.jobs:
        counts[j.state] = counts.get(j.state, 0) + 1
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def _id_cell(r: ConfigReport) -> str:
    if r.key_only:
        return "key only" if r.exists else "[red]absent[/] (key only)"
    return str(r.config_id) if r.exists else "[red]absent[/]"


def print_query(reports: list[ConfigReport]) -> None:
    table = Table(title="Catalogue", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("id", justify="right")
    # Keys are copied from here: never cut or fold them, let the other columns give way.
    table.add_column("find-db key", no_wrap=True, min_width=max(len(r.key) for r in reports))
    table.add_column("tags", overflow="fold")
    table.add_column("jobs")
    table.add_column("results", justify="right")
    for r in reports:
        table.add_row(
            str(r.line_no),
            _id_cell(r),
            escape(r.key),
            escape(", ".join(r.tags)) or "-",
            _fmt_jobs(r),
            str(len(r.perf) + len(r.find)) if r.exists else "-",
        )
    console.print(table)
    for r in reports:
        if r.perf_key:
            console.print(f"#{r.line_no} perf-db key {r.perf_key}", soft_wrap=True, markup=False)
        if r.key_only:
            console.print(
                f"#{r.line_no} key only: Tuna cannot make a problem of this key "
                f"({r.key_only_reason}); import_db keeps MIOpen's records of it as written, "
                "and export_db writes them back so",
                soft_wrap=True,
                markup=False,
            )
        else:
            driver = r.driver or "(none: no MIOpenDriver line gives this problem; it is a db key's)"
            console.print(f"#{r.line_no} driver {driver}", soft_wrap=True, markup=False)
        if r.jobs:
            jobs = Table(title=f"#{r.line_no} jobs", title_justify="left")
            for col in ("job", "session", "solver", "step", "state", "attempt", "result"):
                jobs.add_column(col)
            for j in r.jobs:
                jobs.add_row(
                    str(j.id),
                    str(j.session),
                    escape(j.solver),
                    j.step,
                    j.state,
                    str(j.attempt),
                    escape(j.note or "-"),
                )
            console.print(jobs)
        if r.find or r.perf:
            res = Table(title=f"#{r.line_no} results", title_justify="left")
            for col in ("session", "solver", "time ms", "workspace", "algorithm", "params"):
                res.add_column(col)
            params = {(p.session, p.solver): p.params for p in r.perf}
            for f in r.find:
                res.add_row(
                    str(f.session),
                    escape(f.solver),
                    f"{f.time_ms:.4g}",
                    str(f.workspace),
                    escape(f.algorithm),
                    escape(params.pop((f.session, f.solver), "-")),
                )
            for (session, solver), p in params.items():
                res.add_row(str(session), escape(solver), "-", "-", "-", escape(p))
            console.print(res)


@click.command("query_db", cls=TunaCommand)
@click.argument("queries", nargs=-1, metavar="[DRIVER_LINE | DB_KEY]...")
@click.option(
    "-f",
    "--file_name",
    "--file",
    "file",
    metavar="FILE",
    help="File of driver lines or db keys, one per line.",
)
@output_options(csv_too=False)
@verbose_option
def query_db_cmd(queries: tuple[str, ...], file: str | None, output: str | None) -> None:
    """Show what the catalogue holds for driver lines or MIOpen db keys.

    For each problem: whether its config exists, its tags, its jobs and results, and its
    find-db and perf-db keys. Accepts what import_configs accepts, plus find-db dash keys
    and perf-db x keys (a whole db line KEY=... works too).

    \b
    Examples:
      query_db './bin/MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1'
      query_db 1024-14-14-1x1-256-14-14-128-0x0-1x1-1x1-0-NCHW-FP32-F
      query_db -f resnet50.txt
      query_db -f resnet50.txt --json | jq '.[] | select(.config_id == null) | .driver'
    """
    items = [(i, q) for i, q in enumerate(queries, start=1)]
    skipped: dict[str, int] = {}
    if file is not None:
        for no, line in read_lines(read_text_file(file)):
            kind = _other_operation(line)
            if kind is None:
                items.append((len(queries) + no, line))
            else:  # a network's pool, activation, ... lines: skipped as import_configs does
                skipped[kind] = skipped.get(kind, 0) + 1
    if not items:
        raise TunaError("nothing to query: give driver lines or db keys, or -f FILE")
    db = database()
    try:
        reports = query_configs(db, items)
    finally:
        db.dispose()
    if emit([dataclasses.asdict(r) for r in reports], output):
        for kind, n in sorted(skipped.items()):
            err_console.print(f"{kind} lines skipped: {n}", markup=False)
        return
    print_query(reports)
    for kind, n in sorted(skipped.items()):
        console.print(
            f"{kind} lines skipped: {n} (only convolution and batch-norm problems are in the "
            "catalogue)",
            markup=False,
        )


def _other_operation(line: str) -> str | None:
    """The MIOpenDriver operation of ``line`` when it is neither conv nor batch norm."""
    try:
        kind = line_kind(line)
    except TunaError:
        return None  # a db key, or a bad line query_configs reports
    return None if kind in ("conv", "bnorm") else kind


def import_configs_main() -> None:
    import_configs_cmd(prog_name="import_configs")


def query_db_main() -> None:
    query_db_cmd(prog_name="query_db")
