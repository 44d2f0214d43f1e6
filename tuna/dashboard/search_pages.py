"""The dashboard's search pages: a session's searches, a search's page (its best so far,
the best runs' parameters, its Pareto front, its validations, its runs) and the block of its
parameter importance that the page fetches (:mod:`tuna.dashboard.app` serves them beside
the job pages; what they read comes from :mod:`tuna.searches`).

A search's counts, curve, front and validations are kept warm in the app's cache like a
session's job counts; a fit of trees (parameter importance) runs in a cache of its own and
is never waited for by the page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from tuna.dashboard import params, svg
from tuna.dashboard.cache import WarmCache
from tuna.db import Database
from tuna.searches import curve as curves
from tuna.searches import importance, validation
from tuna.searches import query as searches
from tuna.searches.query import stat_unit
from tuna.searches.validation import ValidatedRun, Validation
from tuna.searches.winner import stored_result
from tuna.sessions import get_session, list_sessions

Page = Callable[[Request], Response]

PARALLEL_RUNS = 300
"""Runs a search page's parallel-coordinates chart draws at most (the best)."""
MAX_DOTS = 2000
"""Measurements drawn as dots at most (the latest); the step line always has every step."""


@dataclass(frozen=True)
class ShownValidation:
    """A validation on a search's page: the stored one, its rows in the order shown and a
    chart per stat compared."""

    stored: Validation
    runs: list[ValidatedRun]
    charts: list[str]


def validation_points(runs: list[ValidatedRun], stat: str) -> tuple[list[svg.Validated], int]:
    """The runs holding ``stat`` as a validation chart's points (across: what was predicted,
    else the tuning value, as the report's figure draws them), and how many had no
    prediction."""
    points: list[svg.Validated] = []
    unpredicted = 0
    for r in runs:
        tuned = _number(r.tuned.get(stat))
        if tuned is None:
            continue
        guess = _number((r.predicted or {}).get(stat))
        unpredicted += guess is None
        x = tuned if guess is None else guess
        measured = _number((r.measured or {}).get(stat))
        points.append(svg.Validated(x, tuned, measured, r.kept, f"run {r.seq}"))
    return points, unpredicted


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None


def best_so_far_series(label: str, curve: curves.Curve) -> svg.Series:
    """A search's best-so-far curve as the chart draws it."""
    return svg.Series(
        label,
        [(float(x), y) for x, y in curve.steps],
        until=float(curve.measurements),
        dots=[(float(x), y) for x, y in curve.recent],
    )


def search_routes(
    db: Database,
    cache: WarmCache,
    fits: WarmCache,
    templates: Jinja2Templates,
    render: Callable[..., Response],
    page: Callable[[Page], Page],
) -> list[Route]:
    """The search pages' routes over ``db``: ``render`` draws a template in the dashboard's
    frame and ``page`` turns bad parameters and missing things into an error page (both
    the app's, as every page uses them); ``cache`` keeps what a page reads warm, ``fits``
    the model fits."""

    @page
    def searches_page(request: Request) -> Response:
        q = request.query_params
        params.known(q, {"session"})
        sid = params.integer(q, "session")
        if sid is None:
            newest = list_sessions(db, newest=1)
            if not newest:
                return render(request, "searches.html", "Searches", session=None, rows=[])
            sid = newest[0].id
        summary = get_session(db, sid)
        rows = cache.get(("searches", sid), lambda: searches.list_searches(db, sid))
        return render(request, "searches.html", f"Searches of session {sid}", session=summary,
                      rows=rows)  # fmt: skip

    @page
    def search_page(request: Request) -> Response:
        q = request.query_params
        params.known(q, {"status", "build", "order", "after", "limit"})
        status = params.choice(q, "status", searches.RUN_STATUSES)
        order = params.choice(q, "order", ("seq", "best")) or "seq"
        build = params.integer(q, "build", lo=1)
        after = params.integer(q, "after", searches.BEFORE_ALL, lo=searches.BEFORE_ALL)
        limit = params.integer(q, "limit", 100, lo=1, hi=1000)
        assert after is not None and limit is not None
        # A search's counts and its best-so-far curve read every run of it (from an index):
        # kept warm like a session's job counts, recomputed in the background when stale.
        search_id = params.path_id(request.path_params["search"], "search")
        s = cache.get(("search", search_id), lambda: searches.find_search(db, search_id))
        curve = cache.get(("curve", search_id), lambda: curves.curve(db, s, MAX_DOTS))
        best = searches.best_run(db, s)
        stored = stored_result(db, search_id)
        rows = searches.runs(db, s, status=status, build=build, order=order,  # type: ignore[arg-type]
                             after=after, limit=limit)  # fmt: skip
        chart = svg.step_chart(
            [best_so_far_series(s.label, curve)],
            title=f"Best {s.stat} so far, search {s.name}",
            xlabel="measurements finished (count)",
            ylabel=f"best {s.stat} ({stat_unit(s.stat)}, {s.goal} is better)",
            chart_id="best-so-far",
        )
        finished = best_runs(s)
        parallel = svg.parallel_coordinates(
            [(r.point, r.value) for r in finished if r.value is not None],
            value=s.stat, goal=s.goal,
            title=f"The {len(finished)} best runs' parameters and {s.stat}"
                  f" (darker: better; {s.goal}imise)",
        )  # fmt: skip
        # A fit of trees (70-300 ms on a loaded machine): never waited for here. Until it is
        # done the page says so, and live.js fetches the block from /searches/N/importance.
        weights = fits.peek(("importance", search_id), lambda: importance_of(s))
        front, front_svg, baseline = pareto_of(s)
        validated = cache.get(("validations", search_id), lambda: validations_of(s))
        next_after = rows[-1].seq if order == "seq" and len(rows) == limit else None
        return render(request, "search.html", f"Search {s.id}: {s.name}", s=s, best=best,
                      front=front, front_chart=front_svg, baseline=baseline,
                      curve=curve, chart=chart, stored=stored, parallel=parallel,
                      importance=weights, rows=rows, validated=validated,
                      run_status=status, build=build, order=order, limit=limit,
                      next_after=next_after,
                      statuses=searches.RUN_STATUSES)  # fmt: skip

    def pareto_of(
        s: searches.SearchSummary,
    ) -> tuple[list[searches.RunRow], str, searches.RunRow | None]:
        """A search of several objectives' front, its chart (the first two objectives: the
        front over the best runs' dots) and its baseline run; nothing for one objective."""
        baseline = searches.baseline_run(db, s)
        if not s.objective.more:
            return [], "", baseline
        front: list[searches.RunRow] = cache.get(("pareto", s.id), lambda: searches.pareto(db, s))
        a, b = s.objective.targets[:2]

        def xy(stats: dict[str, Any] | None) -> tuple[float, float] | None:
            x, y = (stats or {}).get(a.stat), (stats or {}).get(b.stat)
            ok = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y))
            return (float(x), float(y)) if ok else None  # type: ignore[arg-type]

        dots = [p for r in best_runs(s) if s.counts(r.valid, r.value, r.stats)
                if (p := xy(r.stats)) is not None]  # fmt: skip
        on_front = [(*p, f"run {r.seq}: " + " ".join(f"{k}={v}" for k, v in r.point.items()))
                    for r in front if (p := xy(r.stats)) is not None]  # fmt: skip
        chart = svg.front_chart(
            dots, on_front, baseline=xy(baseline.stats) if baseline else None,
            title=f"Pareto front of search {s.name}: {len(front)} runs",
            xlabel=f"{a.stat} ({stat_unit(a.stat)}, {a.goal} is better)",
            ylabel=f"{b.stat} ({stat_unit(b.stat)}, {b.goal} is better)",
        )  # fmt: skip
        return front, chart, baseline

    def validations_of(s: searches.SearchSummary) -> list[ShownValidation]:
        """Each input set the search's front was validated on (``tuna search validate``):
        its runs (the baseline first when it is not on the front) and a chart per stat
        compared, predicted against measured."""
        out: list[ShownValidation] = []
        for summary in validation.validations(db, s.id):
            v = validation.stored_validation(db, s.id, summary.inputs)
            if v is None:
                continue
            runs = v.runs if v.baseline is None or v.baseline in v.runs else [v.baseline, *v.runs]
            charts = []
            for i, stat in enumerate(v.stats):
                points, unpredicted = validation_points(runs, stat)
                note = f"; {unpredicted} not predicted (at tuning value)" if unpredicted else ""
                charts.append(svg.validation_chart(
                    points, title=f"{stat}: {len(points)} runs{note}",
                    xlabel=f"{stat}, predicted when chosen", ylabel=f"{stat}, measured",
                    inputs=v.inputs, chart_id=f"validation-{len(out)}-{i}",
                ))  # fmt: skip
            out.append(ShownValidation(v, runs, charts))
        return out

    def best_runs(s: searches.SearchSummary) -> list[searches.RunRow]:
        found: list[searches.RunRow] = cache.get(("parallel", s.id), lambda: searches.runs(
            db, s, status="valid", order="best", limit=PARALLEL_RUNS))  # fmt: skip
        return found

    def importance_of(s: searches.SearchSummary) -> importance.Importance | str:
        finished = best_runs(s)
        return importance.parameter_importance(
            db, s, [(r.point, r.value) for r in finished if r.value is not None]
        )

    @page
    def importance_block(request: Request) -> Response:
        """A search's parameter importance alone (the block its page fetches)."""
        params.known(request.query_params, set())
        search_id = params.path_id(request.path_params["search"], "search")
        s = cache.get(("search", search_id), lambda: searches.find_search(db, search_id))
        weights = fits.wait(("importance", search_id), lambda: importance_of(s))
        return templates.TemplateResponse(
            request, "importance.html", {"s": s, "importance": weights}
        )

    return [
        Route("/searches", searches_page),
        Route("/searches/{search:int}", search_page),
        Route("/searches/{search:int}/importance", importance_block),
    ]
