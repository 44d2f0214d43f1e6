"""The dashboard's web app: server-rendered pages over the read-only database.

Starlette with Jinja2 templates: each page is one function that reads through the
services' query functions (:mod:`tuna.jobs.activity`, :mod:`tuna.results.insight`) and
renders HTML. One small script (``static/live.js``, no build step, no CDN) refreshes a live
page's content in place every ``refresh_s`` seconds and leaves its filter forms alone (a
whole-page reload lost what a user was typing); without script a ``<noscript>`` meta refresh
reloads the page. Filters are plain GET forms, progress bars are CSS widths.

Every response carries ``Server-Timing: app;dur=<ms>`` (the time spent in the app, which
``bench/dashboard.py`` reads). A malformed query parameter is a 400 page naming it, a
missing session a 404, a database problem a 503 with the masked URL; never a traceback.

The pages are listed in :data:`PAGES` (the navigation). A search's page draws its best
so far as inline SVG (:mod:`tuna.dashboard.svg`), one line per search or strategy. What
no page waits for (a search's parameter importance, a model fit) is computed in the
background: the page carries a note marked ``data-fragment`` with the URL of the block
alone, which ``live.js`` fetches (it answers once the value is there) and puts in place.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tuna.dashboard import params, reports, svg
from tuna.dashboard.cache import WarmCache
from tuna.dashboard.guard import Guard, Login, known_names
from tuna.dashboard.params import BadRequest
from tuna.db import Database
from tuna.db.enums import JobState
from tuna.errors import NotFoundError, TunaError
from tuna.fleet import joblog
from tuna.jobs import activity, detail
from tuna.jobs.status import JobCounts, job_counts
from tuna.results import insight
from tuna.searches import curve as curves
from tuna.searches import importance, validation
from tuna.searches import query as searches
from tuna.searches.query import stat_unit
from tuna.searches.validation import ValidatedRun, Validation
from tuna.searches.winner import stored_result
from tuna.sessions import get_session, list_sessions

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
PAGES: list[tuple[str, str]] = [
    ("Sessions", "/"),
    ("Machines", "/machines"),
    ("Results", "/results"),
    ("Searches", "/searches"),
]
"""(title, path) of the pages in the navigation bar, in order."""

STATE_COLOURS = {
    JobState.NEW: "#b0bec5",
    JobState.COMPILE_START: "#90caf9",
    JobState.COMPILED: "#42a5f5",
    JobState.EVAL_START: "#ffb74d",
    JobState.EVALUATED: "#66bb6a",
    JobState.NOT_APPLICABLE: "#9e9e9e",
    JobState.ERRORED: "#e53935",
}


@dataclass(frozen=True)
class DashboardSettings:
    refresh_s: int = 5
    """Seconds between a live page's reloads (0: never)."""
    reports: Path | None = None
    """A directory of ``tuna report`` outputs to serve under /reports."""
    window_s: float = 300.0
    """The window over which a session's rate (and so its ETA) is measured."""
    host: str = "127.0.0.1"
    """The address it listens on: one of the names a request's Host may give."""
    allowed_hosts: tuple[str, ...] = ()
    """More names it may be reached by (``--allowed-host``); see :mod:`.guard`."""
    login: Login | None = None
    """Who may read it (``--login FILE``); None: anyone who can reach the port."""
    logs: Path | None = None
    """Where go_fish writes worker logs (``--logs``): a job's page shows its lines from
    them (:mod:`tuna.fleet.joblog`); None: it says where the log would be."""


class ServerTiming:
    """ASGI middleware: ``Server-Timing: app;dur=MS`` on every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                ms = (time.perf_counter() - start) * 1000.0
                headers = list(message.get("headers", []))
                headers.append((b"server-timing", f"app;dur={ms:.1f}".encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, timed)


def create_app(db: Database, settings: DashboardSettings | None = None) -> Starlette:
    """The dashboard over ``db`` (opened with :func:`tuna.dashboard.open_readonly`)."""
    cfg = settings or DashboardSettings()
    cache = WarmCache()
    fits = WarmCache(min_age_s=30.0)  # model fits: CPU, not the database; a thread of their own
    importance.load_model_library()  # seconds of import under the interpreter's lock: now

    def counts(sid: int) -> JobCounts:
        counted: JobCounts = cache.get(("counts", sid), lambda: job_counts(db, sid, top_reasons=0))
        return counted

    templates = Jinja2Templates(directory=str(TEMPLATES))
    templates.env.globals.update(
        pages=PAGES, colours={s.value: c for s, c in STATE_COLOURS.items()}, states=list(JobState)
    )
    templates.env.filters["ago"] = _ago
    templates.env.filters["duration"] = _duration
    templates.env.filters["brief"] = brief
    templates.env.filters["stat"] = stat_cell

    def render(
        request: Request, name: str, title: str, live: bool = True, status: int = 200,
        **context: Any,
    ) -> Response:  # fmt: skip
        ctx = {
            "title": title,
            "refresh_s": cfg.refresh_s if live else 0,
            "database": db.url_masked,
            "now": activity.database_time(db),
            **context,
        }
        return templates.TemplateResponse(request, name, ctx, status_code=status)

    def page(fn: Callable[[Request], Response]) -> Callable[[Request], Response]:
        """A page: bad parameters and missing things become an error page, not a traceback."""

        def wrapped(request: Request) -> Response:
            try:
                return fn(request)
            except BadRequest as e:
                return render(request, "error.html", "Bad request", False, 400, message=str(e))
            except NotFoundError as e:
                return render(request, "error.html", "Not found", False, 404, message=str(e))
            except TunaError as e:
                log.warning("dashboard: %s", e)
                return render(request, "error.html", "Database unavailable", True, 503,
                              message=str(e))  # fmt: skip

        return wrapped

    @page
    def sessions_page(request: Request) -> Response:
        q = request.query_params
        params.known(q, {"arch", "limit"})
        arch = params.text(q, "arch", max_len=64)
        limit = params.integer(q, "limit", 20, lo=1, hi=200)
        assert limit is not None
        rows = activity.progress(
            db,
            list_sessions(db, newest=limit, arch=arch),
            window_s=cfg.window_s,
            counts=counts,
        )
        return render(request, "sessions.html", "Sessions", rows=rows, arch=arch or "",
                      limit=limit, reports=reports.by_session(cfg.reports))  # fmt: skip

    @page
    def session_page(request: Request) -> Response:
        params.known(request.query_params, set())
        sid = params.path_id(request.path_params["sid"], "session")
        summary = get_session(db, sid)
        (prog,) = activity.progress(db, [summary], window_s=cfg.window_s, counts=counts)
        reasons = cache.get(("reasons", sid), lambda: activity.failure_reasons(db, [sid]))
        flying = activity.in_flight(db, session_id=sid, limit=50)
        recent = activity.recent_throughput(db, sid, window_s=THROUGHPUT_WINDOW_S)
        throughput = throughput_chart(recent)
        names = {m.id: m.hostname for m in activity.machines(db)}
        return render(request, "session.html", f"Session {sid}", p=prog, reasons=reasons,
                      flying=flying, machine_names=names, counted=cache.age(("counts", sid)),
                      throughput=throughput,
                      reports=reports.by_session(cfg.reports).get(sid, []))  # fmt: skip

    @page
    def machines_page(request: Request) -> Response:
        q = request.query_params
        params.known(q, {"machine"})
        machine = params.integer(q, "machine")
        rows = activity.machines(db)
        flying = activity.in_flight(db, machine_id=machine, limit=100)
        names = {m.id: m.hostname for m in rows}
        return render(request, "machines.html", "Machines", rows=rows, flying=flying,
                      machine=machine, machine_names=names)  # fmt: skip

    @page
    def results_page(request: Request) -> Response:
        q = request.query_params
        params.known(q, {"session", "solver", "key", "family", "max_ms", "after", "limit"})
        sid = params.integer(q, "session")
        if sid is None:
            newest = list_sessions(db, newest=1)
            if not newest:
                return render(request, "results.html", "Results", False, session=None,
                              rows=[], solvers=[], flt=None, limit=0, next_after=None)  # fmt: skip
            sid = newest[0].id
        summary = get_session(db, sid)
        flt = insight.ResultFilter(
            session=sid,
            solver=params.text(q, "solver", max_len=128),
            key=params.text(q, "key"),
            family=params.family(q, "family"),
            max_ms=params.number(q, "max_ms"),
        )
        limit = params.integer(q, "limit", 100, lo=1, hi=1000)
        after = params.pair(q, "after")
        assert limit is not None
        found = insight.filter_results(db, flt, after=after, limit=limit)
        rows = found.points
        return render(request, "results.html", f"Results of session {sid}", False,
                      session=summary, rows=rows, flt=flt, limit=limit,
                      solvers=insight.solvers_with_results(db, sid),
                      next_after=f"{found.next_after[0]}-{found.next_after[1]}"
                      if found.next_after else None)  # fmt: skip

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

    @page
    def job_page(request: Request) -> Response:
        params.known(request.query_params, set())
        job = detail.job_detail(db, params.path_id(request.path_params["job"], "job"))
        live = job.state in activity.RUNNING
        logged = None
        if cfg.logs is not None:
            logs = cfg.logs
            logged = cache.get(("log", job.id, job.attempt, job.state),
                               lambda: joblog.job_log(logs, job.id, job.created,
                                                      host=job.machine or socket.gethostname(),
                                                      session=job.session))  # fmt: skip
        return render(request, "job.html", f"Job {job.id}", live, j=job, log=logged,
                      logs=cfg.logs)  # fmt: skip

    @page
    def failures_page(request: Request) -> Response:
        q = request.query_params
        params.known(q, {"state", "reason", "after"})
        sid = params.path_id(request.path_params["sid"], "session")
        summary = get_session(db, sid)
        state = JobState(params.choice(q, "state", FAILED_STATES) or JobState.ERRORED.value)
        reason = q.get("reason")
        if reason is not None and len(reason) > 65536:
            raise BadRequest("reason is longer than 65536 characters")
        after = params.integer(q, "after", 0)
        assert after is not None
        rows = detail.failed_jobs(db, sid, state, reason, after=after, limit=FAILED_PAGE)
        return render(request, "failures.html", f"Failed jobs of session {sid}", False,
                      session=summary, rows=rows, state=state, reason=reason,
                      next_after=rows[-1].id if len(rows) == FAILED_PAGE else None)  # fmt: skip

    def report_file(request: Request) -> Response:
        found = None
        if cfg.reports is not None:
            found = reports.report_file(
                cfg.reports, request.path_params["name"], request.path_params["path"]
            )
        if found is None:
            raise HTTPException(404)
        return FileResponse(found)

    def live_js(_request: Request) -> Response:
        return FileResponse(STATIC / "live.js", media_type="text/javascript")

    def healthz(_request: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        message = "no such page" if status == 404 else str(getattr(exc, "detail", "error"))
        html = templates.get_template("error.html").render(
            request=request, title="Not found" if status == 404 else "Error", message=message,
            refresh_s=0, database=db.url_masked, now=None,
        )  # fmt: skip
        return HTMLResponse(html, status_code=status)

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("dashboard: %s %s failed", request.method, request.url.path)
        return PlainTextResponse("internal error; the dashboard's log says why\n", 500)

    routes: list[Any] = [
        Route("/", sessions_page),
        Route("/sessions/{sid:int}", session_page),
        Route("/sessions/{sid:int}/failures", failures_page),
        Route("/jobs/{job:int}", job_page),
        Route("/machines", machines_page),
        Route("/results", results_page),
        Route("/searches", searches_page),
        Route("/searches/{search:int}", search_page),
        Route("/searches/{search:int}/importance", importance_block),
        Route("/healthz", healthz),
        Route("/static/live.js", live_js),
    ]
    if cfg.reports is not None:
        routes.append(Route("/reports/{name}/{path:path}", report_file))
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: not_found, 500: server_error},
    )
    app.add_middleware(ServerTiming)
    app.add_middleware(Guard, names=known_names(cfg.host, cfg.allowed_hosts), login=cfg.login)

    def warm() -> None:
        """Count the newest sessions' jobs before anyone asks (the first page is then fast)."""
        try:
            activity.progress(db, list_sessions(db, newest=20), counts=counts)
        except TunaError as e:
            log.warning("dashboard: warming the counts failed: %s", e)

    app.state.warm = warm
    return app


FAILED_STATES = (JobState.ERRORED.value, JobState.NOT_APPLICABLE.value)
FAILED_PAGE = 100
PARALLEL_RUNS = 300
"""Runs a search page's parallel-coordinates chart draws at most (the best)."""
MAX_DOTS = 2000
"""Measurements drawn as dots at most (the latest); the step line always has every step."""


THROUGHPUT_WINDOW_S = 600.0
"""The span of a session page's throughput chart (its last slice ends now)."""


def throughput_chart(recent: activity.Bucketed) -> str:
    """Phases finished per machine and slice over the window, as an inline SVG chart."""
    minutes = recent.bucket_s / 60.0
    series = [
        svg.Series(
            name,
            [(i * minutes, float(n)) for i, n in enumerate(counts)],
            until=len(counts) * minutes,
        )  # fmt: skip
        for name, counts in sorted(recent.counts.items())
    ]
    window = THROUGHPUT_WINDOW_S / 60
    return svg.step_chart(
        series,
        title=f"Phases finished per machine, last {window:g} minutes",
        xlabel=f"minutes since {window:g} minutes ago (the right edge is now)",
        ylabel=f"phases finished per {recent.bucket_s:g} s (count)",
        chart_id="throughput",
        empty="no phase finished in this window",
    )


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


def stat_cell(value: Any) -> str:
    """A stat in a validation table: a float to 4 significant digits (a model's prediction
    has more than it means), anything else as it is, nothing as a dash."""
    if value is None:
        return "—"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


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


BRIEF_ITEMS = 4
BRIEF_CHARS = 60


def brief(value: Any) -> str:
    """A parameter's value as a runs table shows it: a list of more than a few values (a
    strategy round's candidates, repeated on every run of the round) as its length."""
    if isinstance(value, list | tuple) and len(value) > BRIEF_ITEMS:
        return f"[{len(value)} values]"
    text = json.dumps(value) if isinstance(value, list | tuple | dict) else str(value)
    return text if len(text) <= BRIEF_CHARS else text[: BRIEF_CHARS - 1] + "…"


def _ago(when: dt.datetime | None, now: dt.datetime) -> str:
    """How long before ``now`` (the database's clock, as the timestamps are)."""
    if when is None:
        return "never"
    return _duration((now - when).total_seconds()) + " ago"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    if s < 172800:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"
