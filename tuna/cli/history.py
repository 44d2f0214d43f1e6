"""The tuning library's commands: a session's history rules and retirement, ``tuna history``
(effort, prune) and ``tuna best``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import (
    COUNT_RANGE,
    VERSION_RANGE,
    TunaCommand,
    TunaGroup,
    console,
    database,
    emit,
    err_console,
    json_text,
    output_options,
    session_option,
    verbose_option,
)
from tuna.sessions.rules import (
    LIBRARY_MODES,
    exclusion_hint,
    parse_max_age,
    parse_platform_fields,
)

F = TypeVar("F", bound=Callable[..., Any])
_SHOWN = 20  # (problem, solver) groups prune lists before "... and N more"


def rules_options(fn: F) -> F:
    """The options that set history rules (``session rules``, ``best``); the command receives
    them as one ``rule_changes`` dict (only what was given)."""
    options = [
        click.option(
            "--library",
            type=click.Choice(LIBRARY_MODES),
            help="Whose library build counts: fingerprint (same fingerprint), same (same "
            "version and commit), version (same version), any.",
        ),
        click.option(
            "--library-min",
            metavar="VERSION",
            help="Only history of this library version or newer counts (3.2.0 < 3.10.0).",
        ),
        click.option(
            "--max-age",
            metavar="AGE",
            help="Rows older than this stop counting: 30d, 12h, 90m, 2w, or an ISO date; ages "
            "count in whole days (a row counts when taken on or after the date it reaches).",
        ),
        click.option(
            "--platform",
            "platform",
            multiple=True,
            metavar="FIELD=VALUE",
            help="A platform field the measurements must hold (repeatable), e.g. gpu.model=MI250X.",
        ),
    ]

    @functools.wraps(fn)
    def wrapper(
        *args: Any,
        library: str | None,
        library_min: str | None,
        max_age: str | None,
        platform: tuple[str, ...],
        **kwargs: Any,
    ) -> Any:
        changes: dict[str, Any] = {}
        if library is not None:
            changes["library"] = library
        if library_min is not None:
            changes["library_min"] = library_min
        if max_age is not None:
            changes["max_age"] = parse_max_age(max_age)
        if platform:
            changes["platform"] = parse_platform_fields(platform)
        return fn(*args, rule_changes=changes, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


# --- tuna session retire / unretire / rules -------------------------------------------------------


@click.command("retire", cls=TunaCommand)
@session_option("Session to retire.")
@click.option("--reason", help="Why (kept with the session, shown by `tuna session list`).")
def retire_cmd(session_id: int, reason: str | None) -> None:
    """Take a session's results out of every later decision; its rows stay.

    A retired session's results no longer count for load_jobs' skips, searches' resume and
    transfer, `tuna best`, and export_db / update_golden refuse it. `tuna session unretire`
    undoes it.

    \b
    Example:
      tuna session retire -s 3 --reason "wrong clocks on the fleet"
    """
    from tuna.sessions.history import retire

    db = database()
    try:
        row = retire(db, session_id, reason)
    finally:
        db.dispose()
    console.print(
        f"session {row.id}: retired at {row.retired:%Y-%m-%d %H:%M:%S}; its results no longer "
        f"count (`tuna session unretire -s {row.id}` undoes it)",
        markup=False,
    )


@click.command("unretire", cls=TunaCommand)
@session_option("Session to bring back.")
def unretire_cmd(session_id: int) -> None:
    """Let a retired session's results count again.

    \b
    Example:
      tuna session unretire -s 3
    """
    from tuna.sessions.history import unretire

    db = database()
    try:
        row = unretire(db, session_id)
    finally:
        db.dispose()
    console.print(f"session {row.id}: active again; its results count", markup=False)


@click.command("rules", cls=TunaCommand)
@session_option("Session whose rules to show or set.")
@rules_options
@click.option("--no-max-age", is_flag=True, help="Drop the age limit.")
@click.option("--no-library-min", is_flag=True, help="Drop the oldest-library limit.")
@click.option("--no-platform", is_flag=True, help="Drop the platform fields.")
@output_options(csv_too=False)
def rules_cmd(
    session_id: int,
    rule_changes: dict[str, Any],
    no_max_age: bool,
    no_library_min: bool,
    no_platform: bool,
    output: str | None,
) -> None:
    """Show or set which history counts for a session (its compatibility and expiry rules).

    With no option, shows the rules. Expiry never deletes a row: older rows stop counting.

    \b
    Examples:
      tuna session rules -s 3
      tuna session rules -s 3 --library version --max-age 30d --platform gpu.model=MI250X
      tuna session rules -s 3 --no-max-age --json
    """
    from dataclasses import replace

    from tuna.sessions import get_session
    from tuna.sessions.history import rules_of, set_rules

    db = database()
    try:
        info = get_session(db, session_id)
        rules = rules_of(info)
        changes = dict(rule_changes)
        if no_max_age:
            changes["max_age"] = None
        if no_library_min:
            changes["library_min"] = None
        if no_platform:
            changes["platform"] = {}
        if changes:
            rules = replace(rules, **changes)
            set_rules(db, session_id, rules)
    finally:
        db.dispose()
    if emit([], output, document={"session": session_id, "rules": rules.to_json()}):
        return
    console.print(f"session {session_id}: {rules.describe()}", markup=False)


# --- tuna history ---------------------------------------------------------------------------------


@click.group("history", cls=TunaGroup)
def history_group() -> None:
    """The measured history: effort per problem, retention.

    \b
    Examples:
      tuna history effort -s 3 -t resnet50
      tuna history prune --keep-best 5 --dry-run
    """


_EFFORT_COLUMNS = ("key", "solver", "platform", "platform_digest", "strategy", "measurements",
                   "valid", "budget", "best_ms", "first", "last")  # fmt: skip


@history_group.command("effort")
@session_option("Count the history that counts for this session (its rules).")
@click.option("-t", "--tag", help="Only configs with this tag.")
@output_options()
def effort_cmd(session_id: int, tag: str | None, output: str | None) -> None:
    """Measurements spent per (problem, solver, platform), by strategy, that count for a session.

    MEASURED counts every measurement spent (also those pruned since), BUDGET is the
    largest number of candidates the strategy said it was allowed (- when not said),
    BEST MS the fastest valid time among the rows kept.

    \b
    Examples:
      tuna history effort -s 3
      tuna history effort -s 3 -t resnet50 --csv
    """
    from tuna.library.effort import session_effort

    db = database()
    try:
        rows, history = session_effort(db, session_id, tag)
    finally:
        db.dispose()
    dicts = [{c: getattr(r, c) for c in _EFFORT_COLUMNS} for r in rows]
    if emit(dicts, output, fields=_EFFORT_COLUMNS):
        return
    console.print(f"session {session_id}: {history.rules.describe()}", markup=False)
    table = Table(title="Effort", title_justify="left")
    for col in ("key", "solver", "platform", "strategy", "measured", "valid", "budget", "best ms"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            escape(r.key),
            escape(r.solver),
            (r.platform_digest or "-")[:12],
            escape(r.strategy or "-"),
            str(r.measurements),
            str(r.valid),
            "-" if r.budget is None else str(r.budget),
            "-" if r.best_ms is None else f"{r.best_ms:g}",
        )
    console.print(table)
    _print_exclusions(history.explain())


@history_group.command("prune")
@click.option(
    "--keep-best",
    type=int,
    required=True,
    help="Keep the K fastest valid measurements per (problem, solver); delete the rest.",
)
@session_option("Only this session's measurements (default: every session).", required=False)
@click.option("--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
@output_options(csv_too=False)
@verbose_option
def prune_cmd(keep_best: int, session_id: int | None, dry_run: bool, output: str | None) -> None:
    """Keep only the best K measurements per (problem, solver); the default is to keep all.

    Measurements of a (session, problem, solver) that a golden version holds are never
    deleted. The effort spent stays counted (load_jobs --min-trials, tuna history effort):
    pruning keeps the best rows, it does not undo the tuning.

    \b
    Examples:
      tuna history prune --keep-best 5 --dry-run
      tuna history prune --keep-best 5 -s 3
    """
    from tuna.library.prune import prune

    db = database()
    try:
        report = prune(db, keep_best, session=session_id, dry_run=dry_run)
    finally:
        db.dispose()
    doc = {
        "keep_best": keep_best,
        "dry_run": dry_run,
        "groups": report.groups,
        "deleted": report.deleted,
        "kept": report.kept,
        "protected_by_golden": report.protected,
        "by_group": [
            {"key": key, "solver": solver, "measurements": n}
            for (key, solver), n in sorted(report.by_group.items())
        ],
    }
    if emit([], output, document=doc):
        return
    for (key, solver), n in sorted(report.by_group.items())[:_SHOWN]:
        console.print(f"{key} {solver}: {n}", markup=False)
    if len(report.by_group) > _SHOWN:
        console.print(f"... and {len(report.by_group) - _SHOWN} more (problem, solver) groups")
    verb = "would delete" if dry_run else "deleted"
    console.print(
        f"keep best {keep_best} per (problem, solver): {report.groups} group(s), {verb} "
        f"{report.deleted} measurement(s), kept {report.kept}; {report.protected} kept "
        "because a golden version holds their (session, problem, solver)",
        markup=False,
    )


# --- tuna best ------------------------------------------------------------------------------------


@click.command("best", cls=TunaCommand)
@session_option("Target this session: its arch, CUs, backend and rules.", required=False)
@click.option("-a", "--arch", help="Target arch (without -s).")
@click.option(
    "-n", "--num-cu", "--num_cu", "num_cu", type=COUNT_RANGE, help="Target CUs (without -s)."
)
@click.option("--backend", help="Target backend (without -s; default: the only one used).")
@click.option("-t", "--tag", help="Only configs with this tag.")
@rules_options
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the JSON here (default: stdout).",
)
@click.option(
    "--golden_v",
    "--golden-v",
    "golden_v",
    type=VERSION_RANGE,
    help="Instead of JSON, freeze the best rows into this new golden version, for "
    "export_db --golden_v to write MIOpen's files.",
)
@click.option("--note", help="Why the golden version exists (with --golden_v).")
@click.option(
    "--search",
    "search_ref",
    metavar="SEARCH",
    help="Instead: a search's answer, its best run and Pareto front (id, or name with -s).",
)
@verbose_option
def best_cmd(
    session_id: int | None,
    arch: str | None,
    num_cu: int | None,
    backend: str | None,
    tag: str | None,
    rule_changes: dict[str, Any],
    out: Path | None,
    golden_v: int | None,
    note: str | None,
    search_ref: str | None,
) -> None:
    """The best known configuration per problem for a target, across sessions, as JSON.

    History counts under the target session's rules (-s), changed by the rule options, or
    for -a/-n under the rule options alone (any library unless --library-min). Retired
    sessions never count. With --golden_v V the fastest row per (problem, solver) becomes
    golden version V, and export_db writes it in MIOpen's formats. With --search, a
    search's answer instead: its objectives and constraints, its best run and its Pareto
    front (the runs that count and no other beats on every objective), as `tuna search
    show` and the dashboard show it.

    Each problem's row says how many valid timings its winner had in its session and how
    far apart they were ("timings", "spread": slowest over fastest); "unstable" is true
    above 1.25x (the machine was disturbed while it timed: the time is its fastest run),
    and a line on stderr says how many are.

    \b
    Examples:
      tuna best -s 3 -o best.json
      tuna best --search 4
      tuna best -s 3 --search predtuner -o front.json
      tuna best -a gfx90a -n 104 -t resnet50 --max-age 30d --library-min 3.2.0
      tuna best -a gfx90a -n 104 --golden_v 7
      export_db --golden_v 7 -f -p -k
    """
    from tuna.library.best import best_report

    if search_ref is not None:
        if golden_v is not None or any(v is not None for v in (arch, num_cu, backend, tag)):
            raise click.UsageError("--search goes alone (with -s for a name, and -o)")
        _write_json(_search_answer(search_ref, session_id), out, f"search {search_ref}")
        return
    if golden_v is not None:
        if out is not None:
            raise click.UsageError("give -o (JSON) or --golden_v (a golden version), not both")
        _best_golden(session_id, arch, num_cu, backend, tag, rule_changes, golden_v, note)
        return
    db = database()
    try:
        report = best_report(
            db, session=session_id, arch=arch, num_cu=num_cu, backend=backend, tag=tag,
            rule_changes=rule_changes,
        )  # fmt: skip
    finally:
        db.dispose()
    text = json_text(report.document())
    unstable = report.unstable_note()
    if out is None:
        click.echo(text, nl=False)
        if unstable:  # beside the JSON, not in it: stdout stays the document
            err_console.print(unstable, markup=False)
    else:
        out.write_text(text)
        console.print(
            f"{out}: best of {len(report.best)} problem(s) for {report.target_label}"
            + (f"; {unstable}" if unstable else ""),
            markup=False,
        )


def _search_answer(ref: str, session_id: int | None) -> dict[str, Any]:
    """A search's answer as ``tuna best --search`` prints it."""
    from tuna.cli.search_view import run_row
    from tuna.searches import query

    db = database()
    try:
        s = query.find_search(db, ref, session_id)
        top = query.best_run(db, s)
        front = query.pareto(db, s)
        baseline = query.baseline_run(db, s)
    finally:
        db.dispose()
    return {
        "search": s.id,
        "session": s.session,
        "name": s.name,
        "state": s.state,  # not job.state: the search's
        "objectives": [{"stat": t.stat, "goal": t.goal} for t in s.objective.targets],
        "constraints": [c.text for c in s.objective.constraints],
        "baseline": run_row(baseline) if baseline is not None else None,
        "best": run_row(top) if top else None,
        "pareto": [run_row(r) for r in front],
    }


def _write_json(doc: dict[str, Any], out: Path | None, what: str) -> None:
    text = json_text(doc)
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text)
        console.print(f"{out}: {what}", markup=False)


def _print_exclusions(lines: list[str]) -> None:
    if lines:
        console.print("not counted:", markup=False)
        for line in lines:
            hint = exclusion_hint(line.split(":", 1)[0])
            console.print(f"  {line}" + (f" ({hint})" if hint else ""), markup=False)


def _best_golden(
    session_id: int | None,
    arch: str | None,
    num_cu: int | None,
    backend: str | None,
    tag: str | None,
    rule_changes: dict[str, Any],
    version: int,
    note: str | None,
) -> None:
    from tuna.results.golden import golden_from_best

    db = database()
    try:
        report = golden_from_best(
            db, version, session=session_id, arch=arch, num_cu=num_cu, backend=backend,
            tag=tag, rule_changes=rule_changes, note=note,
        )  # fmt: skip
    finally:
        db.dispose()
    console.print(
        f"golden version {report.version} ({report.arch}, {report.num_cu} CUs): {report.rows} "
        f"rows, {report.keys} keys, from session(s) {', '.join(map(str, report.sessions))}; "
        f"`export_db --golden_v {report.version} -f -p -k` writes MIOpen's files",
        markup=False,
    )
