"""``tuna search validate``: a search's front measured again on a second input set.

The stage itself is :mod:`tuna.searches.validation`; the figure :mod:`tuna.report.validation`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tuna.cli.base import TunaCommand, console, database, emit, output_options, session_option
from tuna.errors import TunaError
from tuna.report.validation import draw_validation, figure_path
from tuna.searchers.config import parse_assignments
from tuna.searchers.function import load_function
from tuna.searches import query
from tuna.searches.validation import (
    TEST_INPUTS,
    ValidatedRun,
    Validation,
    validate_commands,
    validate_search,
)


@click.command("validate", cls=TunaCommand)
@click.argument("search")
@session_option("Session of a search named by name (an id needs none).", required=False)
@click.option(
    "--objective-fn",
    "objective_fn",
    metavar="MODULE:FUNCTION",
    help="The search's objective, a function of (params, trial) that measures on "
    "trial.inputs (required).",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A command search's second input set: another value of a setting its commands "
    "read (repeatable), e.g. --set data=test.bin.",
)
@click.option(
    "--inputs",
    default=TEST_INPUTS,
    show_default=True,
    help="The second input set's name, as trial.inputs tells the objective ('tune' is the "
    "tuning set's).",
)
@click.option(
    "--stat",
    "stats",
    multiple=True,
    help="A stat to compare (repeatable; default: the objectives' and the constraints').",
)
@click.option(
    "--png",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Draw predicted against measured here (.png or .svg; needs tuna[report]).",
)
@output_options(csv_too=False)
def validate_cmd(
    search: str,
    session_id: int | None,
    objective_fn: str | None,
    settings: tuple[str, ...],
    inputs: str,
    stats: tuple[str, ...],
    png: Path | None,
    output: str | None,
) -> None:
    """Measure a search's Pareto front again on a second input set (PredTuner's test set).

    Each run of the stored front, and the baseline, is measured by the objective on the
    input set --inputs names: it is called as objective(params, trial) with trial.inputs
    set to that name ('tune' while tuning), so it can load its test inputs. The table
    sets, for each stat, what the predictive strategy's model predicted when it chose the
    run (- for a run chosen otherwise: seed runs, the baseline, other strategies), what
    was measured while tuning and what was measured now; 'kept' says whether the run still
    meets the constraints, judged against the baseline measured on the same inputs. The
    rows are stored (search_validation); validating again on the same inputs replaces
    them. SEARCH is the search's id, or its name with -s SESSION (a tuna.tune study's
    session is labelled tuna.tune: `tuna session list` shows it).

    A search whose runs are commands (tuna search create --run) reads its inputs from its
    settings, the KEY=VALUE given beside its parameter file (data=train.bin, as {data} in
    --run): --set data=test.bin is its second input set. Its front is then built and run
    again here, on this machine, by its own commands and sources, with the settings
    changed, and stored under --inputs' name. A strategy search (one problem) has none.

    \b
    Examples:
      tuna search validate -s 1 predtuner --objective-fn approx_net:objective --png val.png
      tuna search validate 7 --objective-fn fn:measure --inputs holdout --stat accuracy
      tuna search validate 7 --objective-fn fn:measure --json
      tuna search validate 9 --set data=test.bin --inputs test --png val.svg
    """
    if png is not None:
        figure_path(png)  # before anything is measured or stored
    db = database()
    try:
        s = query.find_search(db, search, session_id)
        if objective_fn is None:
            given = parse_assignments(settings)  # as the search's own settings were read
            v = validate_commands(db, s.id, given, inputs=inputs, stats=stats or None)
        else:
            if settings:
                raise TunaError(
                    f"--set goes with a search whose runs are commands; --objective-fn "
                    f"{objective_fn} is told the input set as trial.inputs (--inputs)"
                )
            objective = load_function(objective_fn, Path.cwd())
            v = validate_search(db, s.id, objective, inputs=inputs, stats=stats or None)
    finally:
        db.dispose()
    if png is not None:
        draw_validation(v, png)
    if emit([], output, _document(v)):
        return
    _print(v)
    if png is not None:
        console.print(f"figure: {png}", markup=False)


def _document(v: Validation) -> dict[str, Any]:
    def row(r: ValidatedRun) -> dict[str, Any]:
        return {
            "seq": r.seq, "config": r.config, "predicted": r.predicted, "tuned": r.tuned,
            "measured": r.measured, "reason": r.reason, "kept": r.kept,
        }  # fmt: skip

    return {
        "search": v.search, "name": v.name, "inputs": v.inputs, "stats": list(v.stats),
        "front": [row(r) for r in v.runs],
        "baseline": row(v.baseline) if v.baseline is not None else None, "notes": v.notes,
    }  # fmt: skip


def _cell(stats: dict[str, Any] | None, stat: str) -> str:
    value = (stats or {}).get(stat)
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def _print(v: Validation) -> None:
    console.print(
        f"search {v.search} {v.name!r}: front of {len(v.runs)} run(s) measured on the "
        f"'{v.inputs}' inputs; {len(v.kept)} kept",
        markup=False,
    )
    for note in v.notes:
        console.print(f"note: {note}", markup=False)
    heads = [f"{s} {w}" for s in v.stats for w in ("predicted", "tuned", v.inputs)]
    header = f"{'seq':>4}  {'params':<28} " + " ".join(f"{h:>18}" for h in heads) + "  kept"
    console.print(header, markup=False)
    runs = v.runs if v.baseline is None or v.baseline in v.runs else [v.baseline, *v.runs]
    for r in runs:
        params = ",".join(f"{k}={r.config[k]}" for k in r.config)
        cells = [
            _cell(d, s) for s in v.stats for d in (r.predicted, r.tuned, r.measured)
        ]  # fmt: skip
        kept = "yes" if r.kept else f"no ({r.reason})" if r.reason else "no"
        console.print(
            f"{r.seq:>4}  {params[:28]:<28} " + " ".join(f"{c:>18}" for c in cells) + f"  {kept}",
            markup=False,
        )
