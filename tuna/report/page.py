"""A report's values and its HTML: what ``tuna report`` was asked for
(:class:`ReportOptions`, :class:`Baseline`), what its sections draw from
(:class:`ReportData`) and give back (:class:`Section`), and the page they make
(:func:`render_html`: inline CSS, no script, every figure with its PNG, SVG and CSV)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuna.db import Database
from tuna.errors import TunaError
from tuna.library.stability import Spread
from tuna.report.figures import Figure
from tuna.results.insight import FindPoint
from tuna.searchers.pareto import Target
from tuna.searches.query import SearchSummary


@dataclass(frozen=True)
class Baseline:
    """What speed-ups are measured against: a solver of the same session, the slowest
    solver of each problem, a base session or a golden version."""

    solver: str | None = None
    session: int | None = None
    golden: int | None = None

    @classmethod
    def parse(cls, text: str) -> Baseline:
        """``slowest``, ``solver:NAME``, ``session:N`` or ``golden:V``."""
        kind, _, value = text.partition(":")
        try:
            if kind == "slowest" and not value:
                return cls()
            if kind == "solver" and value:
                return cls(solver=value)
            if kind == "session":
                return cls(session=int(value))
            if kind == "golden":
                return cls(golden=int(value))
        except ValueError:
            pass
        raise TunaError(
            f"--vs {text!r}: expected slowest, solver:NAME, session:N or golden:V "
            "(e.g. --vs solver:CpuDirectNaive)"
        )


@dataclass(frozen=True)
class ReportOptions:
    sessions: tuple[int, ...]
    out: Path
    take_best: int = 0
    problems: int = 8
    vs: Baseline = field(default_factory=Baseline)
    pareto_stats: tuple[Target, Target] | None = None
    """The two stats of a benchmark search's Pareto fronts (``--pareto-stats``)."""


@dataclass
class ReportData:
    """What the sections draw from, read once."""

    db: Database
    options: ReportOptions
    arch_of: dict[int, str]
    points: list[FindPoint]
    searches: list[SearchSummary] = field(default_factory=list)
    spreads: dict[tuple[int, int], Spread] = field(default_factory=dict)
    """(session, config) -> its winner's repeated timings (:func:`insight.winner_spreads`)."""


@dataclass
class Section:
    id: str
    title: str
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    table: tuple[list[str], list[tuple[Any, ...]]] | None = None
    """A table the page shows (header, rows), after the notes."""
    data: list[str] = field(default_factory=list)
    """Data files it wrote besides its figures' (paths relative to the report)."""


@dataclass(frozen=True)
class Report:
    index: Path
    sections: list[Section]
    pareto_json: Path

    @property
    def files(self) -> list[str]:
        drawn = [f for s in self.sections for fig in s.figures for f in fig.files.values()]
        return drawn + [f for s in self.sections for f in s.data]


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: .9em; color: #555; } .note { color: #444; }
nav a { margin-right: 1em; }
.wide { overflow-x: auto; } table { border-collapse: collapse; font-size: .85em; }
th, td { padding: .2em .6em; border-bottom: 1px solid #e0e0e0; text-align: left;
         vertical-align: top; max-width: 40em; overflow-wrap: anywhere; }
"""


def render_html(options: ReportOptions, arch_of: dict[int, str], sections: list[Section]) -> str:
    esc = html.escape
    sessions = ", ".join(f"{s} ({esc(arch_of[s])})" for s in options.sessions)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Tuna report: session {esc(', '.join(map(str, options.sessions)))}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Tuna report: session {sessions}</h1>",  # each arch escaped once, above
        "<nav>" + "".join(f'<a href="#{s.id}">{esc(s.title)}</a>' for s in sections) + "</nav>",
        '<p class="note">Data: <a href="pareto.json">pareto.json</a> '
        "(every problem's time/workspace set)"
        + (
            '; <a href="search-pareto.json">search-pareto.json</a> (every search\'s '
            f"{esc(options.pareto_stats[0].stat)}/{esc(options.pareto_stats[1].stat)} set)"
            if options.pareto_stats
            else ""
        )
        + "; each figure links its CSV.</p>",
    ]
    for s in sections:
        parts.append(f'<section id="{s.id}"><h2>{esc(s.title)}</h2>')
        parts += [f'<p class="note">{esc(n)}</p>' for n in s.notes]
        if s.table is not None:
            head, rows = s.table
            parts.append(f'<div class="wide"><table id="table-{s.id}"><tr>'
                         + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>")  # fmt: skip
            parts += ["<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>"
                      for row in rows]  # fmt: skip
            parts.append("</table></div>")
        for fig in s.figures:
            parts.append(
                f'<figure id="fig-{esc(fig.name)}"><img src="{esc(fig.files["svg"])}" '
                f'alt="{esc(fig.title)}"><figcaption>{esc(fig.title)} · '
                f'<a href="{esc(fig.files["png"])}">PNG</a> · '
                f'<a href="{esc(fig.files["svg"])}">SVG</a> · '
                f'<a href="{esc(fig.files["csv"])}">CSV</a></figcaption></figure>'
            )
        parts.append("</section>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
