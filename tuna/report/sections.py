"""The report's sections, in page order (:data:`SECTIONS`): each a function of
:class:`~tuna.report.page.ReportData` that draws its figures and says what it found, or
says there is nothing to draw. The search sections draw through
:mod:`tuna.report.searches`."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from typing import Any

from tuna.jobs import activity
from tuna.jobs.activity import Bucketed
from tuna.library.stability import UNSTABLE_SPREAD, unstable_note
from tuna.report import figures, searches
from tuna.report.page import ReportData, Section
from tuna.report.pareto import rank
from tuna.results import insight
from tuna.results.insight import FindPoint, Speedup
from tuna.searches import query

MAX_BARS = 60
"""Speed-up bars drawn at most (the CSV holds every problem)."""


def _speedups(data: ReportData) -> Section:
    sec = Section("speedups", "Speed-up per problem")
    vs = data.options.vs
    points = data.points
    if not points:
        sec.notes.append("No find results in these sessions yet.")
        return sec
    ups: list[Speedup]
    if vs.solver:
        ups = insight.speedups_vs_solver(points, vs.solver)
        if not ups:
            sec.notes.append(f"Solver {vs.solver} has no find result on any of these problems.")
            return sec
        baseline = vs.solver
        compares = f"each problem's fastest solver against {vs.solver} on it"
    elif vs.session is not None:
        baseline = f"session {vs.session}"
        same = insight.solver_times(data.db, vs.session)
        ups = insight.speedups_vs_same_solver(points, baseline, same)
        compares = (f"each problem's fastest solver against the same solver in {baseline}: "
                    "what tuning gained, each side timed in its own session")  # fmt: skip
        if not ups:
            sec.notes.append(f"{baseline} has results on none of these problems.")
            return sec
    elif vs.golden is not None:
        baseline, times = insight.baseline_times(data.db, golden=vs.golden)
        ups = insight.speedups_vs_times(points, baseline, times)
        compares = f"each problem's fastest solver against the fastest in {baseline}"
        if not ups:
            sec.notes.append(f"{baseline} has results on none of these problems.")
            return sec
    else:
        ups = insight.speedups_vs_slowest(points)
        baseline = "slowest solver"
        compares = "each problem's fastest solver against its slowest"
    ups.sort(key=lambda u: -u.speedup)
    shown = ups[:MAX_BARS]
    if len(ups) > len(shown):
        sec.notes.append(f"The {len(shown)} largest of {len(ups)} speed-ups are drawn; the CSV "
                         "holds all.")  # fmt: skip
    geo = insight.geomean(u.speedup for u in ups)
    geo = float("nan") if geo is None else geo  # every speed-up infinite: none to average
    sec.notes.append(f"{len(ups)} problems; geometric mean speed-up {geo:.2f}x vs {baseline} "
                     f"({compares}).")  # fmt: skip
    unstable = unstable_note(data.spreads.values())
    if unstable:  # next to the figure: a disturbed run moves it
        sec.notes.append(unstable[0].upper() + unstable[1:] + ".")
    several = len(data.options.sessions) > 1
    sec.figures.append(
        figures.speedup_chart(
            data.options.out,
            "speedups",
            f"Best solver's time vs {baseline}'s, per problem",
            [(f"s{u.session} " if several else "") + f"c{u.config} {u.family}" for u in shown],
            [u.speedup for u in shown],
            xlabel="problem (" + ("session, " if several else "") + "config id, family)",
            ylabel=f"speed-up (log scale; {baseline} time / best time)",
            csv_header=[
                "session",
                "config",
                "fdb_key",
                "family",
                "best_solver",
                "best_ms",
                "best_params",
                "baseline",
                "baseline_ms",
                "speedup",
            ],
            csv_rows=[
                (
                    u.session,
                    u.config,
                    u.fdb_key,
                    u.family,
                    u.best_solver,
                    u.best_ms,
                    u.best_params or "",
                    u.baseline,
                    u.baseline_ms,
                    round(u.speedup, 6),
                )
                for u in ups
            ],
        )  # fmt: skip
    )
    return sec


MAX_WINNER_ROWS = 100
"""Winners the page lists at most (``winners.csv`` holds every problem's)."""


def _winners(data: ReportData) -> Section:
    """Which solver won each problem, with which parameters: a tuner's first question."""
    sec = Section("winners", "Winners: the fastest solver of each problem and its parameters")
    best = sorted(insight.best_per_problem(data.points).values(),
                  key=lambda p: (p.session, p.family, p.config))  # fmt: skip
    if not best:
        sec.notes.append("No find results in these sessions yet.")
        return sec
    timed = [data.spreads.get((p.session, p.config)) for p in best]
    head = ["session", "config", "family", "fdb_key", "solver", "time_ms", "workspace", "params"]
    rows = [(p.session, p.config, p.family, p.fdb_key, p.solver, p.time_ms, p.workspace,
             p.params or "") for p in best]  # fmt: skip
    figures.write_csv(
        data.options.out / "winners.csv",
        [*head, "timings", "spread", "unstable"],
        [(*r, *((x.timings, round(x.ratio, 4), int(x.unstable)) if x else (0, "", 0)))
         for r, x in zip(rows, timed, strict=True)],
    )  # fmt: skip
    sec.data.append("winners.csv")
    shown = rows[:MAX_WINNER_ROWS]
    sec.notes.append(f"{len(rows)} problems; winners.csv holds every one"
                     + (f", the first {len(shown)} are listed here." if len(shown) < len(rows)
                        else ".") + " Timings: the winner's valid runs in its session and how "
                     "far apart they were (slowest over fastest; unstable above "
                     f"{UNSTABLE_SPREAD:g}x: the time is its fastest run).")  # fmt: skip
    unstable = unstable_note(x for x in timed if x is not None)
    if unstable:
        sec.notes.append(unstable[0].upper() + unstable[1:] + ".")
    sec.table = (
        [*head[:6], "timings", *head[6:]],
        [(*r[:5], f"{r[5]:.4g}", x.note() if x else "-", *r[6:])
         for r, x in zip(shown, timed, strict=False)],
    )  # fmt: skip
    return sec


def _solver_wins(data: ReportData) -> Section:
    sec = Section("wins", "Which solver wins, per family and arch")
    wins = insight.solver_wins(data.points, data.arch_of)
    if not wins:
        sec.notes.append("No find results in these sessions yet.")
        return sec
    groups = sorted(wins)
    solvers = sorted({s for per in wins.values() for s in per})
    sec.figures.append(
        figures.bar_chart(
            data.options.out,
            "solver_wins",
            "Fastest solver per problem, by arch and problem family",
            [f"{arch} · {family}" for arch, family in groups],
            {s: [wins[g].get(s, 0) for g in groups] for s in solvers},
            xlabel="problems won (count)",
            ylabel="arch · family (direction, filter size)",
            csv_header=["arch", "family", "solver", "problems_won"],
            csv_rows=[(a, f, s, n) for (a, f) in groups for s, n in sorted(wins[(a, f)].items())],
            horizontal=True,
            stacked=True,
        )
    )
    return sec


def pareto_sets(points: Sequence[FindPoint], take_best: int) -> list[dict[str, Any]]:
    """Per (session, problem): every solver's (time, workspace), its front and marks."""
    by_problem: dict[tuple[int, int], list[FindPoint]] = {}
    for p in points:
        by_problem.setdefault((p.session, p.config), []).append(p)
    out = []
    for (sid, config), pts in sorted(by_problem.items()):
        ranked = rank([(p.time_ms, float(p.workspace)) for p in pts], take_best)
        out.append(
            {
                "session": sid,
                "config": config,
                "fdb_key": pts[0].fdb_key,
                "family": pts[0].family,
                "points": [
                    {
                        "solver": p.solver,
                        "time_ms": p.time_ms,
                        "workspace": p.workspace,
                        "params": p.params,
                        "front": r.front,
                        "pareto_optimal": r.optimal,
                        "selected": r.near_optimal,
                    }
                    for p, r in zip(pts, ranked, strict=True)
                ],
            }
        )
    return out


def _pareto(data: ReportData) -> Section:
    sec = Section("pareto", "Pareto fronts: time vs workspace, per problem")
    sets = pareto_sets(data.points, data.options.take_best)
    path = data.options.out / "pareto.json"
    path.write_text(json.dumps({"take_best": data.options.take_best, "problems": sets},
                               indent=1) + "\n")  # fmt: skip
    if not sets:
        sec.notes.append("No find results in these sessions yet.")
        return sec
    # The problems with the most solvers measured are the interesting ones to draw.
    drawn = sorted(sets, key=lambda s: (-len(s["points"]), s["session"], s["config"]))
    drawn = drawn[: data.options.problems]
    sec.notes.append(
        f"{len(sets)} problems; {len(drawn)} drawn (--problems). Every problem's set is in "
        "pareto.json (front 0 is Pareto-optimal; selected = optimal or within --take-best)."
    )
    for s in drawn:
        pts = s["points"]
        sec.figures.append(
            figures.pareto_chart(
                data.options.out,
                f"pareto-s{s['session']}-c{s['config']}",
                f"{s['family']} {s['fdb_key']}"
                + (f" (session {s['session']})" if len(data.options.sessions) > 1 else ""),
                [
                    (
                        p["solver"],
                        p["time_ms"],
                        p["workspace"] / 2**20,
                        p["pareto_optimal"],
                        p["selected"],
                    )
                    for p in pts
                ],  # fmt: skip
                xlabel="time (ms)",
                ylabel="workspace (MiB)",
                csv_header=[
                    "solver",
                    "time_ms",
                    "workspace_bytes",
                    "front",
                    "pareto_optimal",
                    "selected",
                ],
                csv_rows=[
                    (
                        p["solver"],
                        p["time_ms"],
                        p["workspace"],
                        p["front"],
                        int(p["pareto_optimal"]),
                        int(p["selected"]),
                    )
                    for p in pts
                ],
            )  # fmt: skip
        )
    return sec


def _fleet(data: ReportData) -> Section:
    sec = Section("fleet", "Fleet: where jobs ran, why they failed, leases lost")
    sids = data.options.sessions
    over_time: Bucketed = activity.jobs_per_machine_over_time(data.db, sids)
    if over_time.counts:
        n_buckets = len(next(iter(over_time.counts.values())))
        b = over_time.bucket_s
        unit, per = ("minutes", 60.0) if b * n_buckets > 180 else ("seconds", 1.0)
        # Each point at its bucket's middle: the jobs that finished in that bucket.
        at = [(i + 0.5) * b / per for i in range(n_buckets)]
        first = dt.datetime.fromtimestamp(over_time.start, dt.timezone.utc)
        names = sorted(over_time.counts)
        bucket = f"{b / per:g} {unit[:-1] if b == per else unit}"
        sec.figures.append(
            figures.lines_chart(
                data.options.out,
                "jobs_per_machine",
                "Jobs finished per machine over time",
                at,
                {n: list(over_time.counts[n]) for n in names},
                xlabel=f"{unit} since the first job finished ({first:%Y-%m-%d %H:%M:%S} UTC)",
                ylabel=f"jobs finished per {bucket} (latest phase)",
                csv_header=["machine", "bucket_start_epoch_s", "bucket_s", "jobs"],
                csv_rows=[
                    (
                        n,
                        round(over_time.start + i * over_time.bucket_s, 3),
                        round(over_time.bucket_s, 3),
                        c,
                    )
                    for n in names
                    for i, c in enumerate(over_time.counts[n])
                ],
            )  # fmt: skip
        )
    else:
        sec.notes.append("No job has finished a phase in these sessions yet.")
    reasons = activity.failure_reasons(data.db, sids)
    if reasons:
        labels = [_short(r, 70) for _, r, _ in reasons]
        states = sorted({st.value for st, _, _ in reasons})
        sec.figures.append(
            figures.bar_chart(
                data.options.out,
                "failure_reasons",
                "Why jobs failed or do not apply (most frequent first)",
                labels,
                {st: [n if s.value == st else 0 for s, _, n in reasons] for st in states},
                xlabel="jobs (count)",
                ylabel="reason",
                csv_header=["state", "reason", "jobs"],
                csv_rows=[(st.value, r, n) for st, r, n in reasons],
                horizontal=True,
                stacked=True,
            )
        )
    else:
        sec.notes.append("No job has errored or been found not applicable.")
    losses = activity.lease_losses(data.db, sids)
    if losses:
        names = sorted(losses)
        sec.figures.append(
            figures.bar_chart(
                data.options.out,
                "lease_losses",
                "Leases lost per machine (reaped, or expired and not yet reaped)",
                names,
                {"jobs whose lease was lost": [losses[n] for n in names]},
                xlabel="machine",
                ylabel="jobs (count)",
                csv_header=["machine", "jobs"],
                csv_rows=[(n, losses[n]) for n in names],
            )
        )
    else:
        sec.notes.append("No lease was lost.")
    return sec


def _search_pareto(data: ReportData) -> Section:
    stats = data.options.pareto_stats
    names = f"{stats[0].stat} vs {stats[1].stat}" if stats else "two stats"
    sec = Section("search-pareto", f"Searches: Pareto fronts of {names}")
    drawn, sets = searches.draw_pareto(
        data.options.out,
        data.searches,
        lambda s: query.runs(data.db, s, status="valid", limit=None),
        stats,
        data.options.take_best,
        data.options.problems,
    )
    if stats is not None or sets:  # without --pareto-stats: each set names its own
        doc = {"stats": [str(st) for st in stats] if stats else None,
               "take_best": data.options.take_best, "searches": sets}  # fmt: skip
        path = data.options.out / "search-pareto.json"
        path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    sec.figures, sec.notes = drawn.figures, drawn.notes
    return sec


def _search_progress(data: ReportData) -> Section:
    sec = Section("search-progress", "Searches: best so far vs measurements")
    measured = [query.measured(data.db, s) for s in data.searches]
    drawn = searches.draw_progress(data.options.out, measured)
    sec.figures, sec.notes = drawn.figures, drawn.notes
    return sec


SectionBuilder = Callable[[ReportData], Section]
SECTIONS: list[SectionBuilder] = [
    _speedups,
    _winners,
    _solver_wins,
    _pareto,
    _search_pareto,
    _search_progress,
    _fleet,
]
"""The report's sections in page order."""


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
