"""``tuna search list`` and ``tuna search show``: what searches found, as tables or data."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import TunaCommand, console, database, emit, output_options, session_option
from tuna.searchers.prune import pruner_from_json
from tuna.searchers.timebudget import format_duration
from tuna.searches import query
from tuna.searches.query import RUN_STATUSES, RunRow, SearchSummary
from tuna.searches.validation import validations
from tuna.searches.winner import StoredResult, stored_result


def _compact(values: dict[str, Any] | None) -> str:
    if not values:
        return "-"
    return " ".join(f"{k}={_value(v)}" for k, v in values.items())


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, str | int | bool) or v is None:
        return str(v)
    return json.dumps(v)


def _total(s: SearchSummary) -> str:
    return str(s.budget) if s.budget is not None else "-"


def summary_row(s: SearchSummary) -> dict[str, Any]:
    """A search as ``--json``/``--csv`` print it."""
    return {
        "id": s.id,
        "session": s.session,
        "name": s.name,
        "state": s.state,  # not job.state: the search's
        "backend": s.backend,
        "searcher": s.searcher,
        "objective": s.objectives_text,
        "constraints": [c.text for c in s.objective.constraints],
        "budget": s.budget,
        "parallelism": s.parallelism,
        "runs": s.runs,
        "done": s.done,
        "in_flight": s.in_flight,
        "valid": s.valid,
        "pruned": s.pruned,
        "builds": s.builds,
        "builds_done": s.builds_done,
        "best": s.best,
        "created": s.created,
        "finished": s.finished,
        "reason": s.reason,
    }


SUMMARY_COLUMNS = ("id", "session", "name", "state", "backend", "searcher", "objective",
                   "constraints", "budget",
                   "parallelism", "runs", "done", "in_flight", "valid", "pruned", "builds",
                   "builds_done",
                   "best", "created", "finished", "reason")  # fmt: skip
"""The keys of :func:`summary_row`: a CSV listing of no searches is this header."""


def _pruned(s: SearchSummary) -> str:
    """``, 3 pruned`` for a search that can prune (a pruner) or pruned a run."""
    return f", {s.pruned} pruned" if s.pruner is not None or s.pruned else ""


def run_row(r: RunRow) -> dict[str, Any]:
    """A run as ``--json`` prints it (``--csv`` flattens params and stats into columns)."""
    return {
        "seq": r.seq,
        "status": r.status,
        "build": r.build,
        "build_params": r.build_params,
        "run_params": r.run_params,
        "stats": r.stats,
        "value": r.value,
        "reason": r.reason,
        "machine": r.machine,
        "created": r.created,
        "finished": r.finished,
    }


def flat_rows(rows: list[RunRow]) -> list[dict[str, Any]]:
    """One column per build param (``build.X``), run param (``run.X``) and stat (``stat.X``)."""
    keys: dict[str, list[str]] = {"build": [], "run": [], "stat": []}
    for r in rows:
        for prefix, values in (("build", r.build_params), ("run", r.run_params),
                               ("stat", r.stats or {})):  # fmt: skip
            keys[prefix] += [k for k in values if k not in keys[prefix]]
    out = []
    for r in rows:
        row: dict[str, Any] = {"seq": r.seq, "status": r.status, "build": r.build}
        row |= {f"build.{k}": r.build_params.get(k) for k in keys["build"]}
        row |= {f"run.{k}": r.run_params.get(k) for k in keys["run"]}
        row |= {f"stat.{k}": (r.stats or {}).get(k) for k in keys["stat"]}
        row |= {"value": r.value, "reason": r.reason, "machine": r.machine,
                "finished": r.finished}  # fmt: skip
        out.append(row)
    return out


def stored_row(r: StoredResult | None) -> dict[str, Any] | None:
    """A strategy search's stored result as ``--json`` prints it (None: none stored)."""
    if r is None:
        return None
    timings = r.spread.as_dict() if r.spread else {"timings": 0, "spread": None, "unstable": False}
    return {"time_ms": r.time_ms, "params": r.params, "job": r.job, "mine": r.mine, **timings}


def _stored(r: StoredResult, session: int) -> str:
    """The stored result's line: its time, whose it is and how steady its timings were."""
    whose = "this search's winner" if r.mine else f"another search's or job's of session {session}"
    line = f"time_ms = {r.time_ms:g} ({r.params or '-'}), {whose}"
    if r.spread is not None:
        line += f"; {r.spread.timings} timing(s), spread {r.spread.ratio:.2f}x"
        if r.spread.unstable:
            line += " - timings unstable (machine busy?): the time is its fastest run"
    return line


@click.command("list", cls=TunaCommand)
@session_option("Session whose searches to list.")
@output_options()
def list_cmd(session_id: int, output: str | None) -> None:
    """List a session's searches: state, progress, builds and the best value so far.

    RUNS counts the runs finished, in flight and the budget (- when none).

    \b
    Examples:
      tuna search list -s 3
      tuna search list -s 3 --json
    """
    db = database()
    try:
        found = query.list_searches(db, session_id)
    finally:
        db.dispose()
    if emit([summary_row(s) for s in found], output, fields=SUMMARY_COLUMNS):
        return
    if not found:
        console.print(f"Session {session_id} has no search yet (tuna search create adds one).",
                      markup=False)  # fmt: skip
        return
    table = Table(title=f"Searches of session {session_id}", title_justify="left")
    for col in ("id", "name", "state", "searcher", "objective", "done", "in flight", "budget",
                "builds", "best"):  # fmt: skip
        table.add_column(col, justify="right" if col in ("id", "done", "in flight") else "left")
    for s in found:
        table.add_row(
            str(s.id), escape(s.name), escape(s.state), escape(s.searcher or "default"),
            escape(_goals(s)), f"{s.done} ({s.valid} valid)", str(s.in_flight),
            _total(s), f"{s.builds_done}/{s.builds}", "-" if s.best is None else f"{s.best:g}",
        )  # fmt: skip
    console.print(table)


@click.command("show", cls=TunaCommand)
@click.argument("search")
@session_option("Session of a search named by name (an id needs none).", required=False)
@click.option("--status", type=click.Choice(RUN_STATUSES), help="Only runs in this state.")
@click.option("--build", type=click.IntRange(min=1), help="Only the runs of this build (id).")
@click.option("--best", is_flag=True, help="The best runs first (only those that count).")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=50,
    show_default=True,
    help="Runs shown at most (0: all).",
)
@output_options()
def show_cmd(
    search: str,
    session_id: int | None,
    status: str | None,
    build: int | None,
    best: bool,
    limit: int,
    output: str | None,
) -> None:
    """Show a search: its progress, its best run, its Pareto front and its runs table.

    A strategy search also shows the stored result of its problem and solver (the
    find/perf rows: the best any search or job of the session measured), whose it is, and
    how many valid timings it had and how far apart (slowest over fastest): above 1.25x
    it says the timings were unstable.

    SEARCH is the search's id, or its name with -s SESSION. Each run shows its
    build-time and run-time parameters, its stats, whether it is valid (or why not, or
    why it does not count: a constraint it fails), the machine it ran on and when it
    finished. A search of several objectives shows its Pareto front: the runs that count
    and that no other beats on every objective, best by the first objective first; a
    search whose front was validated (tuna search validate) says on which input sets and
    how many runs were kept there.
    --csv prints the runs with one column per parameter and stat; --json the search, its
    best run, its front ("pareto") and its runs.

    \b
    Examples:
      tuna search show 4
      tuna search show -s 3 rate-bisect --best --limit 5
      tuna search show 4 --status invalid
      tuna search show 4 --status pruned
      tuna search show 4 --csv --limit 0 > runs.csv
    """
    db = database()
    try:
        s = query.find_search(db, search, session_id)
        rows = query.runs(
            db, s, status=status, build=build, order="best" if best else "seq",  # type: ignore[arg-type]
            limit=limit or None,
        )  # fmt: skip
        top = query.best_run(db, s)
        front = query.pareto(db, s)
        baseline = query.baseline_run(db, s)
        stored = stored_result(db, s.id)
        validated = validations(db, s.id)
    finally:
        db.dispose()
    if output == "csv":
        emit(flat_rows(rows), output, fields=("seq", "status", "build", "value", "reason",
                                              "machine", "finished"))  # fmt: skip
        return
    document = {
        "search": summary_row(s),
        "best": run_row(top) if top else None,
        "baseline": run_row(baseline) if baseline else None,
        "pareto": [run_row(r) for r in front],
        "stored": stored_row(stored),
        "validations": [{"inputs": v.inputs, "runs": v.runs, "kept": v.kept} for v in validated],
        "runs": [run_row(r) for r in rows],
    }
    if emit([], output, document):
        return
    console.print(
        f"Search {s.id} {s.name!r} (session {s.session}): {s.state}, backend {s.backend}, "
        f"searcher {s.searcher or 'default'}; {_goals_text(s)}",
        markup=False,
    )
    for c in s.objective.constraints:
        console.print(f"  constraint: {c.text}", markup=False)
    if baseline is not None:
        console.print(f"  baseline: run {baseline.seq} ({_compact(baseline.point)}): "
                      f"{_compact(baseline.stats) if baseline.valid else baseline.reason}",
                      markup=False)  # fmt: skip
    if s.reason:
        console.print(f"  reason: {s.reason}", markup=False)
    console.print(
        f"  runs: {s.done} done ({s.valid} valid, {s.invalid} invalid{_pruned(s)}), "
        f"{s.in_flight} in flight, budget {_total(s)}, parallelism {s.parallelism}; "
        f"builds: {s.builds_done} of {s.builds} built",
        markup=False,
    )
    limits = _limits(s)
    if limits:
        console.print(f"  limits: {limits}", markup=False)
    if top is None:
        console.print("  best: no run counts yet", markup=False)
    else:
        console.print(
            f"  best: run {top.seq}, {s.stat} = {top.value:g} ({_compact(top.point)})",
            markup=False,
        )
    if s.objective.more:
        _print_front(s, front)
    for v in validated:
        console.print(
            f"  validated on '{v.inputs}': {v.runs} runs (the front and the baseline), "
            f"{v.kept} kept (tuna search validate)",
            markup=False,
        )
    if stored is not None:
        console.print(f"  stored: {_stored(stored, s.session)}", markup=False)
    if not rows:
        console.print("No run matches." if (status or build or best) else "No run yet.",
                      markup=False)  # fmt: skip
        return
    table = Table(title=f"Runs of search {s.id}", title_justify="left")
    for col in ("seq", "build params", "run params", "stats", "valid", "machine", "finished"):
        table.add_column(col, justify="right" if col == "seq" else "left")
    for r in rows:
        valid = {"pending": "in flight", "valid": "yes"}.get(r.status, f"no: {r.reason or ''}")
        why = s.not_counted(r)
        if why is not None:
            valid = f"yes; does not count ({why})"
        table.add_row(
            str(r.seq), escape(_compact(r.build_params)), escape(_compact(r.run_params)),
            escape(_compact(r.stats)), escape(valid), escape(r.machine or "-"),
            f"{r.finished:%Y-%m-%d %H:%M:%S}" if r.finished else "-",
        )  # fmt: skip
    console.print(table)
    shown = f"{len(rows)} runs shown" + (f" (--limit {limit})" if limit and len(rows) == limit
                                         else "")  # fmt: skip
    console.print(shown, markup=False)


def _goals(s: SearchSummary) -> str:
    """``time_ms (min)``, or every objective: ``time_ms (min), accuracy (max)``."""
    return ", ".join(f"{t.stat} ({t.goal})" for t in s.objective.targets)


def _goals_text(s: SearchSummary) -> str:
    words = [f"{t.goal}imise {t.stat}" for t in s.objective.targets]
    return ("objectives " if len(words) > 1 else "objective ") + ", ".join(words)


def _print_front(s: SearchSummary, front: list[RunRow]) -> None:
    """The Pareto front as a table: each run's parameters and objectives."""
    if not front:
        console.print("  pareto front: no run counts yet", markup=False)
        return
    targets = s.objective.targets
    console.print(f"  pareto front: {len(front)} runs, best {s.stat} first", markup=False)
    table = Table()
    table.add_column("seq", justify="right")
    table.add_column("params")
    for t in targets:
        table.add_column(f"{t.stat} ({t.goal})", justify="right")
    for r in front:
        stats = r.stats or {}
        table.add_row(str(r.seq), escape(_compact(r.point)),
                      *(_value(stats.get(t.stat)) for t in targets))  # fmt: skip
    console.print(table)


def _limits(s: SearchSummary) -> str:
    """A search's pruner and time budget, as `tuna search create` takes them ("" if none)."""
    parts = []
    pruner = pruner_from_json(s.pruner)
    if pruner is not None:
        parts.append(f"pruner {pruner.text}")
    if s.time_budget_s is not None:
        parts.append(f"time budget {format_duration(s.time_budget_s)}")
    return ", ".join(parts)
