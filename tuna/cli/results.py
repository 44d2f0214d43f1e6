"""``export_db``, ``import_db``, ``merge_db`` and ``update_golden``: results in and out."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import (
    COUNT_RANGE,
    INT_RANGE,
    VERSION_RANGE,
    TunaCommand,
    console,
    database,
    err_console,
    session_option,
    verbose_option,
)
from tuna.cli.files import check_db_file
from tuna.errors import TunaError
from tuna.results.export import ExportReport, ExportSpec, Kind, export_db
from tuna.results.golden import DEFAULT_THRESHOLD, GoldenReport, update_golden
from tuna.results.importdb import (
    DbFileRefusedError,
    ImportDbReport,
    import_db_files,
    import_db_new_session,
    read_db_file,
)
from tuna.results.merge import MergeReport, merge_db
from tuna.sessions import SessionSpec

# --- export_db -----------------------------------------------------------------------------------


def print_export(report: ExportReport) -> None:
    what = {"find": "find db", "perf": "perf db", "kern": "kernel db"}[report.kind]
    console.print(
        f"{what} of {report.source} ({report.arch}, {report.num_cu} CUs): "
        f"{report.rows} rows checked, {report.keys} keys",
        markup=False,
    )
    table = Table(box=None, pad_edge=False)
    table.add_column("file", overflow="fold")
    table.add_column("records", justify="right", no_wrap=True)
    table.add_column("entries", justify="right", no_wrap=True)
    table.add_column("bytes", justify="right", no_wrap=True)
    table.add_column("sha256", no_wrap=True)
    for f in report.files:
        table.add_row(escape(str(f.path)), str(f.records), str(f.entries), str(f.size), f.sha256)
    console.print(table)
    console.print(f"manifest {report.manifest}", markup=False, soft_wrap=True)
    if report.left_out:
        sessions = ", ".join(map(str, report.left_out))
        rows = report.counts.get("retired_rows_left_out", 0)
        err_console.print(
            f"left out {rows} golden row(s) of retired session(s) {sessions} "
            "(--include_retired exports them)",
            markup=False,
            soft_wrap=True,
        )


@click.command("export_db", cls=TunaCommand)
@session_option("Export this session.", required=False)
@click.option(
    "--golden_v", "--golden-v", "golden_v", type=INT_RANGE, help="Export this golden version."
)
@click.option("-a", "--arch", help="Check that the session or golden version tuned this arch.")
@click.option(
    "-n",
    "--num_cu",
    "--num-cu",
    "num_cu",
    type=COUNT_RANGE,
    help="Check that it tuned this many CUs.",
)
@click.option("-f", "--find_db", "find_db", is_flag=True, help="Write the find db (.HIP.fdb.txt).")
@click.option("-p", "--perf_db", "perf_db", is_flag=True, help="Write the perf db (.db, .db.txt).")
@click.option("-k", "--kern_db", "kern_db", is_flag=True, help="Write the kernel db (.kdb).")
@click.option("--config_tag", "--config-tag", "config_tag", help="Only configs with this tag.")
@click.option("--filename", help="Base name of the files (default: <arch><CUs>, e.g. gfx90a68).")
@click.option(
    "-c",
    "--opencl",
    is_flag=True,
    help="Name the find db for MIOpen's OpenCL backend (.OpenCL.fdb.txt); an OpenCL "
    "session (imported from .OpenCL. files) gets that name without it.",
)
@click.option(
    "-o",
    "--out-dir",
    "--out_dir",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Directory the files and their manifest go to.",
)
@click.option(
    "--include_retired",
    "--include-retired",
    "include_retired",
    is_flag=True,
    help="With --golden_v: also export the rows of sessions retired since the golden "
    "version was made (left out by default, and counted).",
)
@verbose_option
def export_db_cmd(
    session_id: int | None,
    golden_v: int | None,
    arch: str | None,
    num_cu: int | None,
    find_db: bool,
    perf_db: bool,
    kern_db: bool,
    config_tag: str | None,
    filename: str | None,
    opencl: bool,
    out_dir: Path,
    include_retired: bool,
) -> None:
    """Write a session's or golden version's results as MIOpen db files.

    Give one or more of -f, -p, -k: the kinds are written in that order, each checked
    before it is written.

    Every row is checked first (key parses back, solver known and still applicable,
    no negative time or workspace, kernel md5); one failing row refuses the export,
    lists every failure and writes nothing. A manifest (sessions, library build,
    image, environment, row counts, sha256 of each file) is written beside the files.
    A golden version's rows of a session retired since (`tuna session retire`) are
    left out, and how many is said; --include_retired exports them.
    File names follow MIOpen: gfx90a with 104 CUs gives gfx90a68.HIP.fdb.txt,
    gfx90a68.db and gfx90a68.db.txt, gfx90a68.kdb; an arch that is not a GPU's
    (e.g. x86_64-avx2, 16 cores) gives x86_64-avx2_16.fdb.txt.

    \b
    Examples:
      export_db --session 3 --find_db
      export_db --session 4 --find_db --opencl     # gfx906_60.OpenCL.fdb.txt
      export_db --session 3 --perf_db -o release/
      export_db --session 3 -f -p -k -o release/
      export_db --golden_v 2 --kern_db --config_tag resnet50
      export_db --golden_v 2 -f --include_retired
    """
    chosen: tuple[tuple[Kind, bool], ...] = (
        ("find", find_db),
        ("perf", perf_db),
        ("kern", kern_db),
    )
    kinds = [k for k, on in chosen if on]
    if not kinds:
        raise TunaError("give one or more of -f/--find_db, -p/--perf_db, -k/--kern_db")
    db = database()
    try:
        # Several kinds are written into a staging directory first and moved into place only
        # when every kind passed its checks: a refused kind leaves nothing behind.
        with _writable(out_dir), _staging(out_dir, len(kinds) > 1) as stage:
            reports = []
            for kind in kinds:
                spec = ExportSpec(
                    kind=kind,
                    session=session_id,
                    golden_v=golden_v,
                    arch=arch,
                    num_cu=num_cu,
                    config_tag=config_tag,
                    filename=filename,
                    out_dir=stage,
                    opencl=opencl,
                    include_retired=include_retired,
                )
                reports.append(export_db(db, spec))
    finally:
        db.dispose()
    for report in reports:
        print_export(_moved(report, stage, out_dir))


@contextmanager
def _writable(out_dir: Path) -> Iterator[None]:
    """An OS error writing under ``-o`` (``/proc/x``, a read-only place) as one line."""
    try:
        yield
    except OSError as e:
        raise TunaError(f"-o {out_dir}: cannot write the files there ({e.strerror or e})") from e


@contextmanager
def _staging(out_dir: Path, staged: bool) -> Iterator[Path]:
    if not staged:
        yield out_dir
        return
    existing = next(p for p in (out_dir.absolute(), *out_dir.absolute().parents) if p.is_dir())
    stage = Path(tempfile.mkdtemp(prefix=".export_db-", dir=existing))
    try:
        yield stage
        out_dir.mkdir(parents=True, exist_ok=True)
        for f in sorted(stage.iterdir()):
            os.replace(f, out_dir / f.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _moved(report: ExportReport, stage: Path, out_dir: Path) -> ExportReport:
    if stage == out_dir:
        return report
    return dataclasses.replace(
        report,
        files=[dataclasses.replace(f, path=out_dir / f.path.name) for f in report.files],
        manifest=out_dir / report.manifest.name,
    )


# --- import_db -----------------------------------------------------------------------------------


def print_import(report: ImportDbReport) -> None:
    table = Table(box=None, pad_edge=False)
    table.add_column("file", overflow="fold")
    table.add_column("format", no_wrap=True)
    table.add_column("records", justify="right", no_wrap=True)
    table.add_column("entries", justify="right", no_wrap=True)
    table.add_column("bad", justify="right", no_wrap=True)
    for f in report.files:
        table.add_row(
            escape(str(f.path)), f.format, str(f.records), str(f.entries), str(len(f.bad))
        )
    console.print(f"into session {report.session}:", markup=False)
    console.print(table)
    key_only = f", key-only records {report.key_only}" if report.key_only else ""
    console.print(
        f"configs {report.configs} ({report.configs_inserted} new), "
        f"find rows {report.find_rows}, perf rows {report.perf_rows}{key_only}",
        markup=False,
    )
    for w in report.warnings:
        err_console.print(f"warning: {w}", markup=False, soft_wrap=True)
    for b in report.skipped:
        err_console.print(f"skipped {b}", markup=False, soft_wrap=True)


@click.command("import_db", cls=TunaCommand)
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@session_option("Import into this session.", required=False)
@click.option("--arch", help="Create a session for this arch (with --num-cu, --backend).")
@click.option("--num-cu", "--num_cu", "num_cu", type=COUNT_RANGE, help="CUs of the new session.")
@click.option("--backend", help="Backend of the new session (a registered one, e.g. noop).")
@click.option(
    "--library-version",
    "--miopen_v",
    "library_version",
    help="Library version the files come from.",
)
@click.option("--library-commit", help="Library commit the files come from.")
@click.option("-l", "--label", help="Label of the new session.")
@click.option("-t", "--tag", help="Tag the imported configs.")
@click.option(
    "--skip-bad",
    "--skip_bad",
    "skip_bad",
    is_flag=True,
    help="Import the good records and list the bad ones (default: import nothing).",
)
@verbose_option
def import_db_cmd(
    files: tuple[Path, ...],
    session_id: int | None,
    arch: str | None,
    num_cu: int | None,
    backend: str | None,
    library_version: str | None,
    library_commit: str | None,
    label: str | None,
    tag: str | None,
    skip_bad: bool,
) -> None:
    """Import MIOpen perf and find db files into a session (e.g. to seed a baseline).

    Reads text find dbs (*.fdb.txt, *.ufdb.txt; v2.0 and legacy v1.0 entries), text
    perf dbs (*.db.txt, *.udb.txt with x keys, *.pdb.txt with dash keys) and sqlite
    perf dbs (*.db, *.udb). Keys enter the catalogue as configs (deduplicated); rows
    replace the session's rows for the same (config, solver). Solver names Tuna's
    catalogue lacks are recorded as solvers of the session's library build (backend
    miopen; another backend gets them with valid=0 and a warning). A file with a bad
    record imports nothing unless --skip-bad, and a failed import changes nothing.
    A *.OpenCL.fdb.txt file makes the session an OpenCL one (its export is named so).

    \b
    Examples:
      import_db gfx90a68.HIP.fdb.txt gfx90a68.db --arch gfx90a --num-cu 104 \\
          --backend miopen --library-version 3.3.0 -l "MIOpen 3.3.0 shipped dbs"
      import_db usr_gfx90a68.HIP.ufdb.txt --session 3 -t user
    """
    creating = any(v is not None for v in (arch, num_cu, backend))
    if (session_id is None) == (not creating):
        raise TunaError("give --session S, or --arch, --num-cu and --backend to create a session")
    for p in files:
        check_db_file(p)
    parsed = [read_db_file(p) for p in files]
    bad = [b for f in parsed for b in f.bad]
    if bad and not skip_bad:
        raise DbFileRefusedError(bad)

    def waiting(message: str) -> None:
        err_console.print(f"import_db: {message}", markup=False, soft_wrap=True)

    db = database()
    try:
        if session_id is None:
            if arch is None or num_cu is None or backend is None:
                raise TunaError("a new session needs --arch, --num-cu and --backend")
            spec = SessionSpec(
                arch=arch,
                num_cu=num_cu,
                backend=backend,
                library_version=library_version,
                library_commit=library_commit,
                label=label or f"import_db {' '.join(p.name for p in files)}"[:128],
            )
            report = import_db_new_session(
                db,
                spec,
                parsed,
                tag=tag,
                skip_bad=skip_bad,
                waiting=waiting,
            )
            console.print(f"created session {report.session}", markup=False)
        else:
            report = import_db_files(
                db, session_id, parsed, tag=tag, skip_bad=skip_bad, waiting=waiting
            )
    finally:
        db.dispose()
    print_import(report)


# --- merge_db ------------------------------------------------------------------------------------


def print_merge(report: MergeReport) -> None:
    console.print(
        f"{report.output}: {report.records} records, {report.entries} entries ({report.format})",
        markup=False,
        soft_wrap=True,
    )
    console.print(
        f"base {report.base_records} records, top {report.top_records}: "
        f"{report.replaced} in both, {report.added} added",
        markup=False,
    )


@click.command("merge_db", cls=TunaCommand)
@click.option(
    "-m",
    "--base",
    "--master_file",
    "base",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The file underneath (MIOpen's system db).",
)
@click.option(
    "-t",
    "--top",
    "--target_file",
    "top",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The file on top, whose records win (MIOpen's user db).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the result (default: the base's name in the current directory).",
)
@verbose_option
def merge_db_cmd(base: Path, top: Path, output: Path | None) -> None:
    """Layer one MIOpen db file over another, as MIOpen layers a user db on a system db.

    Find dbs: a key in the top file replaces the base's whole record for that key.
    Perf dbs (text or sqlite): per key, merged by solver, the top file's entry wins.
    Kernel dbs: per (kernel_name, kernel_args), the top file's kernel wins. Both
    files must be of the same kind; the inputs are not changed.

    \b
    Examples:
      merge_db -m gfx90a68.HIP.fdb.txt -t gfx90a68.HIP.3_3_0.ufdb.txt -o out/gfx90a68.HIP.fdb.txt
      merge_db --base gfx90a68.db --top gfx90a68_1.1.0.udb -o merged/gfx90a68.db
    """
    report = merge_db(base, top, output if output is not None else Path(base.name))
    print_merge(report)


# --- update_golden -------------------------------------------------------------------------------


def print_golden(report: GoldenReport) -> None:
    parent = f"parent {report.parent}" if report.parent is not None else "no parent"
    carried = f"{report.carried} carried from {report.parent}, " if report.parent else ""
    console.print(
        f"golden version {report.version} ({parent}): {report.arch} {report.num_cu} CUs, "
        f"{report.rows} rows ({carried}{report.from_session} from session {report.session}), "
        f"{report.keys} keys",
        markup=False,
    )
    if report.parent is None:
        return
    pct = f"{report.threshold * 100:g}%"
    if not report.slower:
        console.print(f"no key is slower than in golden version {report.parent} by more than {pct}")
        return
    table = Table(
        title=f"{len(report.slower)} key(s) slower than golden version {report.parent} "
        f"by more than {pct}",
        title_justify="left",
    )
    table.add_column("key", no_wrap=True, min_width=max(len(k.key) for k in report.slower))
    table.add_column("parent solver")
    table.add_column("parent ms", justify="right")
    table.add_column("solver")
    table.add_column("ms", justify="right")
    table.add_column("slower", justify="right")
    for k in report.slower:
        table.add_row(
            escape(k.key),
            escape(k.parent_solver),
            f"{k.parent_ms:g}",
            escape(k.solver),
            f"{k.time_ms:g}",
            f"{k.slowdown * 100:.1f}%",
        )
    console.print(table)


@click.command("update_golden", cls=TunaCommand)
@click.option(
    "--golden_v",
    "--golden-v",
    "golden_v",
    type=VERSION_RANGE,
    required=True,
    help="New version (1, 2, ...).",
)
@session_option("Session whose find results the version takes.")
@click.option(
    "--base_golden_v",
    "--base-golden-v",
    "base",
    type=VERSION_RANGE,
    help="Carry this version's rows forward (the new version's parent).",
)
@click.option(
    "--threshold",
    type=float,
    default=DEFAULT_THRESHOLD,
    show_default=True,
    help="Report keys slower than the parent by more than this fraction (0.1 = 10%).",
)
@click.option("--note", help="Why this version exists (free text).")
@verbose_option
def update_golden_cmd(
    golden_v: int, session_id: int, base: int | None, threshold: float, note: str | None
) -> None:
    """Create a golden version: an immutable snapshot of find results.

    The session's find rows are checked as for an export. With --base_golden_v the
    base's rows are carried forward and the session's rows replace them per (config,
    solver); keys whose fastest time got slower than in the base by more than
    --threshold are listed. A version is never rewritten: creating an existing one
    is an error.

    \b
    Examples:
      update_golden --golden_v 1 --session 3 --note "MIOpen 3.3.0 baseline"
      update_golden --golden_v 2 --session 5 --base_golden_v 1 --threshold 0.05
    """
    db = database()
    try:
        report = update_golden(db, golden_v, session_id, base=base, threshold=threshold, note=note)
    finally:
        db.dispose()
    print_golden(report)


def export_db_main() -> None:
    export_db_cmd(prog_name="export_db")


def import_db_main() -> None:
    import_db_cmd(prog_name="import_db")


def merge_db_main() -> None:
    merge_db_cmd(prog_name="merge_db")


def update_golden_main() -> None:
    update_golden_cmd(prog_name="update_golden")
