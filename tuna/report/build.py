"""``tuna report``: one HTML page and the figures it shows, for one or several sessions.

The page is a list of sections; each section is a function of
:class:`~tuna.report.page.ReportData` in :data:`tuna.report.sections.SECTIONS` that draws
its figures and says what it found. A section with no data says so instead of drawing an
empty figure. Searches (benchmark-search Pareto fronts of two user stats, best so far per
search and strategy) are sections of their own (:mod:`tuna.report.searches`).
:func:`build_report` reads the data once, runs the sections and writes the page
(:mod:`tuna.report.page`).

The directory written is self-contained: ``index.html`` (inline CSS, no script, no
link outside the directory), ``figures/*.{png,svg,csv}``, ``pareto.json``,
``search-pareto.json`` (with ``--pareto-stats``) and ``report.json`` (which sessions
and figures: what ``tuna dashboard --reports`` links).
"""

from __future__ import annotations

import json

from tuna.db import Database
from tuna.errors import NotFoundError, TunaError
from tuna.jobs import activity
from tuna.report import figures
from tuna.report.page import Baseline, Report, ReportData, ReportOptions, render_html
from tuna.report.sections import SECTIONS
from tuna.results import insight
from tuna.searches import query
from tuna.sessions import get_session

__all__ = ["Baseline", "Report", "ReportOptions", "build_report"]


def build_report(db: Database, options: ReportOptions) -> Report:
    """Read the sessions' results and activity, draw every section, write the page."""
    if options.take_best < 0:
        raise TunaError("--take-best must be 0 or more")
    if options.problems < 0:
        raise TunaError("--problems must be 0 or more")
    figures.pyplot()  # a missing extra fails before anything is written
    arch_of = insight.check_sessions(db, options.sessions)
    points = list(insight.find_points(db, options.sessions))
    found = query.searches_of(db, options.sessions)
    if not points and not found:
        jobs = sum(p.total for p in activity.progress(
            db, [get_session(db, s) for s in options.sessions]))  # fmt: skip
        if jobs == 0:
            names = ", ".join(map(str, options.sessions))
            raise NotFoundError(
                f"session {names} has no jobs, no find results and no searches: nothing to "
                "report yet (load_jobs then go_fish, or tuna search create, fills it)"
            )
    options.out.mkdir(parents=True, exist_ok=True)
    data = ReportData(db, options, arch_of, points, found, insight.winner_spreads(db, points))
    sections = [build(data) for build in SECTIONS]
    index = options.out / "index.html"
    index.write_text(render_html(options, arch_of, sections))
    # What the dashboard reads to link a session to its reports (tuna dashboard --reports).
    report = Report(index, sections, options.out / "pareto.json")
    # Its "files" are all that the dashboard serves of it (tuna.dashboard.reports).
    written = ["index.html", "report.json", *sorted(set(report.files))]
    written += [n for n in ("pareto.json", "search-pareto.json") if (options.out / n).is_file()]
    meta = {"sessions": list(options.sessions), "figures": [f.name for s in sections
                                                            for f in s.figures],
            "files": written}  # fmt: skip
    (options.out / "report.json").write_text(json.dumps(meta, indent=1) + "\n")
    return report
