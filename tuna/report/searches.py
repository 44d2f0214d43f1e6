"""The report's search sections: Pareto fronts of two stats, and best so far per search.

* **Pareto front** of the two stats the user names (``--pareto-stats throughput:max,p95:min``)
  over a benchmark search's valid runs: Pareto-optimal runs highlighted, ``--take-best N``
  near-optimal ones marked, every set in ``search-pareto.json``.
* **Progress**: the best objective value found after each finished measurement, one line per
  search (and so per strategy, whose name a search's label carries), one figure per
  objective stat.

Values come from :mod:`tuna.searches.query`; everything else here is drawing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuna.report import figures
from tuna.report.figures import Curve, Figure
from tuna.report.pareto import rank_goals
from tuna.searchers.pareto import Target
from tuna.searches.query import Measured, RunRow, SearchSummary, stat_unit

BETTER = {"min": "lower is better", "max": "higher is better"}


@dataclass
class Drawn:
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def pareto_set(
    search: SearchSummary,
    runs: Sequence[RunRow],
    stats: tuple[Target, Target],
    take_best: int,
) -> dict[str, Any]:
    """The search's runs that count (valid, and valid by its validity stat if it names one)
    and printed both stats, each with its front and marks."""
    x, y = stats
    pts = []
    for r in runs:
        if search.counts(r.valid, r.value, r.stats) and r.stats:
            vx, vy = _number(r.stats.get(x.stat)), _number(r.stats.get(y.stat))
            if vx is not None and vy is not None:
                pts.append((r, vx, vy))
    ranked = rank_goals([(vx, vy) for _, vx, vy in pts], (x.goal, y.goal), take_best)
    return {
        "session": search.session,
        "search": search.id,
        "name": search.name,
        "stats": [str(x), str(y)],
        "runs": len(runs),
        "points": [
            {
                "seq": r.seq,
                "point": r.point,
                "stats": {x.stat: vx, y.stat: vy},
                "front": k.front,
                "pareto_optimal": k.optimal,
                "selected": k.near_optimal,
            }
            for (r, vx, vy), k in zip(pts, ranked, strict=True)
        ],
    }


def own_stats(search: SearchSummary) -> tuple[Target, Target] | None:
    """A search's first two objectives (None: it has one)."""
    t = search.objective.targets
    return (t[0], t[1]) if len(t) > 1 else None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "stat"


def axis_label(stat: Target | str, goal: str | None = None, prefix: str = "") -> str:
    name, g = (stat.stat, stat.goal) if isinstance(stat, Target) else (stat, goal or "min")
    return f"{prefix}{name} ({stat_unit(name)}, {BETTER[g]})"


def draw_pareto(
    out: Path,
    searches: Sequence[SearchSummary],
    runs_of: Callable[[SearchSummary], Sequence[RunRow]],
    stats: tuple[Target, Target] | None,
    take_best: int,
    most: int,
) -> tuple[Drawn, list[dict[str, Any]]]:
    """One Pareto figure per search (the ``most`` with the most points), and every set.
    Without ``stats``, a search of several objectives is drawn on its first two (the front
    ``tuna search show`` lists, when it has two)."""
    drawn = Drawn()
    if not searches:
        drawn.notes.append("No search in these sessions.")
        return drawn, []
    axes = {s.id: stats or own_stats(s) for s in searches}
    if not any(axes.values()):
        drawn.notes.append(
            "Name two stats to draw each search's Pareto front, e.g. "
            "--pareto-stats throughput:max,p95_ms:min."
        )
        return drawn, []
    sets = [
        pareto_set(s, runs_of(s), pair, take_best)
        for s in searches
        if (pair := axes[s.id]) is not None
    ]
    with_points = [s for s in sets if s["points"]]
    for s in sets:
        if not s["points"]:
            pair = axes[s["search"]]
            assert pair is not None  # a set is made only for a search with two stats
            x, y = pair
            drawn.notes.append(
                f"Search {s['name']} (session {s['session']}): no run counts with both "
                f"{x.stat} and {y.stat} in its stats ({s['runs']} valid runs)."
            )
    chosen = sorted(with_points, key=lambda s: (-len(s["points"]), s["session"], s["search"]))
    chosen = chosen[:most]
    if with_points:
        drawn.notes.append(
            f"{len(with_points)} searches with runs to rank; {len(chosen)} drawn (--problems). "
            "search-pareto.json holds every set (front 0 is Pareto-optimal; selected = optimal "
            "or within --take-best)."
        )
    for s in chosen:
        pts = s["points"]
        pair = axes[s["search"]]
        assert pair is not None  # a set is made only for a search with two stats
        x, y = pair
        drawn.figures.append(
            figures.pareto_chart(
                out,
                f"search-pareto-{s['search']}",
                f"Search {s['name']} (session {s['session']}): {x.stat} vs {y.stat}",
                [
                    (
                        f"#{p['seq']}",
                        p["stats"][x.stat],
                        p["stats"][y.stat],
                        p["pareto_optimal"],
                        p["selected"],
                    )
                    for p in pts
                ],  # fmt: skip
                xlabel=axis_label(x),
                ylabel=axis_label(y),
                csv_header=[
                    "seq",
                    "point",
                    x.stat,
                    y.stat,
                    "front",
                    "pareto_optimal",
                    "selected",
                ],  # fmt: skip
                csv_rows=[
                    (
                        p["seq"],
                        p["point"],
                        p["stats"][x.stat],
                        p["stats"][y.stat],
                        p["front"],
                        int(p["pareto_optimal"]),
                        int(p["selected"]),
                    )
                    for p in pts
                ],  # fmt: skip
                where="post" if x.goal == "min" else "pre",
            )
        )
    return drawn, sets


def curves(measured: Sequence[Measured], several_sessions: bool) -> dict[tuple[str, str], list[
        tuple[Measured, Curve]]]:  # fmt: skip
    """The searches' best-so-far curves, grouped by objective (stat, goal)."""
    groups: dict[tuple[str, str], list[tuple[Measured, Curve]]] = {}
    for m in measured:
        s = m.search
        label = s.label + (f" · session {s.session}" if several_sessions else "")
        groups.setdefault((s.stat, s.goal), []).append((m, Curve(label, m.values, m.best)))
    return groups


def draw_progress(out: Path, measured: Sequence[Measured]) -> Drawn:
    """Best so far vs measurements: one figure per objective stat, a line per search."""
    drawn = Drawn()
    if not measured:
        drawn.notes.append("No search in these sessions.")
        return drawn
    started = [m for m in measured if m.values]
    for m in measured:
        if not m.values:
            drawn.notes.append(f"Search {m.search.name} (session {m.search.session}) has no "
                               "finished run yet.")  # fmt: skip
    several = len({m.search.session for m in measured}) > 1
    for (stat, goal), group in sorted(curves(started, several).items()):
        drawn.figures.append(
            figures.best_so_far_chart(
                out,
                f"search-progress-{_slug(stat)}-{goal}",
                f"Best {stat} so far vs measurements ({goal}imise)",
                [c for _, c in group],
                xlabel="measurements finished, in the order they landed (count)",
                ylabel=axis_label(stat, goal, "best "),
                csv_header=[
                    "session",
                    "search",
                    "name",
                    "searcher",
                    "measurement",
                    "seq",
                    "value",
                    "best_so_far",
                ],  # fmt: skip
                csv_rows=[
                    (
                        m.search.session,
                        m.search.id,
                        m.search.name,
                        m.search.searcher or "",
                        n,
                        seq,
                        value,
                        best,
                    )
                    for m, _ in group
                    for n, (seq, value, best) in enumerate(
                        zip(m.seqs, m.values, m.best, strict=True), start=1
                    )
                ],  # fmt: skip
            )
        )
        for m, _ in group:
            best = m.best[-1]
            found = "nothing that counts yet" if best is None else f"best {stat} {best:g}"
            drawn.notes.append(f"Search {m.search.name} (session {m.search.session}): "
                               f"{len(m.values)} measurements, {found}.")  # fmt: skip
    return drawn
