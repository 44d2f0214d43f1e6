"""``tuna report``: an HTML page of figures about sessions' results and their fleet."""

from __future__ import annotations

from pathlib import Path

import click

from tuna.cli.base import TunaCommand, console, database
from tuna.report import Baseline, ReportOptions, build_report, parse_stat_pair


@click.command("report", cls=TunaCommand)
@click.option(
    "-s",
    "--session",
    "sessions",
    type=int,
    multiple=True,
    required=True,
    help="Session to report on (repeatable: several sessions in one report).",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory to write (default: tuna-report-s<SESSION>).",
)
@click.option(
    "--take-best",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Also mark the N best points behind each Pareto front (near-optimal fall-backs).",
)
@click.option(
    "--problems",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    help="Pareto figures to draw (problems with the most solvers first); pareto.json has all.",
)
@click.option(
    "--vs",
    default="slowest",
    show_default=True,
    metavar="BASELINE",
    help="Speed-ups against: slowest, solver:NAME, session:N or golden:V.",
)
@click.option(
    "--pareto-stats",
    metavar="STAT:GOAL,STAT:GOAL",
    default=None,
    help="Two stats of a benchmark search to draw the runs' Pareto front of, each with "
    "min or max (e.g. throughput:max,p95_ms:min; default: a search's own first two "
    "objectives, when it has several).",
)
def report_cmd(
    sessions: tuple[int, ...],
    out: Path | None,
    take_best: int,
    problems: int,
    vs: str,
    pareto_stats: str | None,
) -> None:
    """Write a self-contained HTML report with PNG/SVG figures and a CSV beside each.

    Speed-ups per problem, which solver wins per problem family and arch, Pareto fronts
    of time vs workspace per problem (pareto.json holds every problem's set), for the
    sessions' searches the Pareto front of two stats (--pareto-stats; search-pareto.json
    holds every search's set) and the best so far vs measurements, jobs per machine over
    time, failure reasons and lost leases. Open OUT/index.html in a browser.

    \b
    Examples:
      tuna report -s 3 -o report-s3 --take-best 2
      tuna report -s 3 -s 4 --vs solver:CpuDirectNaive
      tuna report -s 5 --vs golden:2
      tuna report -s 7 --pareto-stats throughput:max,p95_ms:min --take-best 3
    """
    baseline = Baseline.parse(vs)
    stats = parse_stat_pair(pareto_stats) if pareto_stats is not None else None
    target = out or Path(f"tuna-report-s{'-'.join(map(str, sessions))}")
    db = database()
    try:
        rep = build_report(
            db,
            ReportOptions(
                tuple(dict.fromkeys(sessions)), target, take_best, problems, baseline, stats
            ),
        )
    finally:
        db.dispose()
    n_figs = sum(len(s.figures) for s in rep.sections)
    console.print(f"wrote {rep.index} ({n_figs} figures, PNG + SVG + CSV each)", markup=False)
    for s in rep.sections:
        for note in s.notes:
            console.print(f"  {s.title}: {note}", markup=False)
