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

The pages are listed in :data:`PAGES` (the navigation). The search pages live in
:mod:`tuna.dashboard.search_pages` (their routes join this app's); a search's page draws its
best so far as inline SVG (:mod:`tuna.dashboard.svg`), one line per search or strategy. What
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
from tuna.dashboard.search_pages import search_routes
from tuna.db import Database
from tuna.db.enums import JobState
from tuna.errors import NotFoundError, TunaError
from tuna.fleet import joblog
from tuna.jobs import activity, detail
from tuna.jobs.status import JobCounts, job_counts
from tuna.results import insight
from tuna.searches import importance
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
        *search_routes(db, cache, fits, templates, render, page),
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


def stat_cell(value: Any) -> str:
    """A stat in a validation table: a float to 4 significant digits (a model's prediction
    has more than it means), anything else as it is, nothing as a dash."""
    if value is None:
        return "—"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


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
