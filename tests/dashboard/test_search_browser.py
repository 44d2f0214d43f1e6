"""A search's page in a real headless Chromium: the best so far moves while runs land.

Runs land as a worker's result writes them (``tests/searches/seed.land``) into the
database a running ``tuna dashboard`` reads; the page reloads itself every second.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from tests.dashboard.conftest import Server, dashboard_server, wait_for
from tests.dashboard.test_browser import by_css, shot
from tests.report.seed import session
from tests.searches.seed import add_build, add_run, add_search, land, seed_searches
from tuna.db import Database

# (threads, p95_ms) of the runs that land while the page watches: the best (lowest p95)
# moves at the 1st, 2nd and 4th; the 3rd does not improve it.
LANDING = [(1, 30.0), (2, 21.0), (4, 25.0), (8, 12.5)]


@dataclass
class Site:
    server: Server
    db: Database
    session: int
    search: int
    seeded_session: int


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    def prepare(db: Database) -> tuple[Database, int, int, int]:
        sd = seed_searches(db)
        sid = session(db, "live")
        search = add_search(db, sid, "latency", {"stat": "p95_ms", "goal": "min"}, budget=4)
        build = add_build(db, search, {"opt": "O2"}, built=True)
        for seq, (threads, _) in enumerate(LANDING):
            add_run(db, search, seq, {"opt": "O2", "threads": threads}, build)
        return db, sid, search, sd.session

    with dashboard_server(tmp_path_factory.mktemp("search-browser"), prepare) as (server, ids):
        yield Site(server, *ids)


def read(what: str, check):
    """A value read off the page once it is as expected; the page reloads itself every
    second, so an element may go stale between finding and reading it (then: retry)."""
    return wait_for(what, check, 20)


def test_the_searches_page_is_in_the_navigation_and_links_each_search(chrome, site):
    from selenium.webdriver.support.ui import Select

    chrome.get(f"{site.server.base}/sessions/{site.seeded_session}")
    read(
        "the session page's searches link",
        lambda: by_css(chrome, "#searches-link")[0].click() or True,
    )
    read("the searches page", lambda: chrome.title.startswith("Searches of session"))
    cells = "#searches tr[data-search] td:nth-child(2)"
    read(
        "the three searches",
        lambda: [r.text for r in by_css(chrome, cells)] == ["serve", "rate-bisect", "empty"],
    )
    shot(chrome, "searches")
    read("a click on the first search", lambda: by_css(chrome, cells + " a")[0].click() or True)
    read("the search page", lambda: chrome.title.startswith("Search "))
    read("its best", lambda: by_css(chrome, "#best")[0].text == "250")
    read("its chart", lambda: by_css(chrome, "svg#best-so-far path.series"))
    # Its runs in parallel coordinates: one line per counting run, inside the chart's box.
    lines = read("its parallel coordinates", lambda: by_css(chrome, "svg#parallel polyline.run"))
    box = by_css(chrome, "svg#parallel")[0].rect
    assert len(lines) == 4 and all(
        box["x"] <= ln.rect["x"] and ln.rect["x"] + ln.rect["width"] <= box["x"] + box["width"]
        for ln in lines
    )
    shot(chrome, "search-parallel")

    def pick_pending() -> bool:
        Select(by_css(chrome, "select[name=status]")[0]).select_by_visible_text("pending")
        by_css(chrome, "#apply")[0].click()
        return True

    read("the status filter applied", pick_pending)
    read("the filtered runs", lambda: "status=pending" in chrome.current_url)
    rows = "#runs tr[data-seq]"
    read(
        "the pending runs only",
        lambda: [r.get_attribute("data-seq") for r in by_css(chrome, rows)] == ["6", "7"],
    )
    shot(chrome, "search-runs-filtered")
    read(
        "a click on Searches in the navigation",
        lambda: next(a for a in by_css(chrome, "header a") if a.text == "Searches").click() or True,
    )
    read(
        "the searches page from the navigation",
        lambda: chrome.title.startswith("Searches of session"),
    )


def test_the_best_so_far_moves_while_runs_land(chrome, site):
    chrome.get(f"{site.server.base}/searches/{site.search}")

    def shown() -> tuple[int, str, str | None] | None:
        n = by_css(chrome, "#measurements")
        best = by_css(chrome, "#best")
        line = by_css(chrome, "svg#best-so-far path.series")
        if not n or not best:
            return None
        return int(n[0].text), best[0].text, line[0].get_attribute("data-best") if line else None

    assert wait_for("the empty search page", shown, 20) == (0, "none yet", None)
    assert by_css(chrome, "svg#best-so-far text.empty")
    seen = []
    best = None
    t0 = dt.datetime(2026, 11, 24, 2, 0, 0)
    for seq, (_, p95) in enumerate(LANDING):
        land(site.db, site.search, seq, {"p95_ms": p95}, at=t0 + dt.timedelta(seconds=seq))
        best = p95 if best is None else min(best, p95)
        want = (seq + 1, f"{best:g}", repr(best))
        # No click: the page reloads itself and must show the run that just landed.
        seen.append(wait_for(f"the page to show {want}", lambda w=want: shown() == w and w, 30))
        shot(chrome, f"search-live-{seq + 1}")
    assert [s[1] for s in seen] == ["30", "21", "21", "12.5"]
    read("4 runs done", lambda: [c.text for c in by_css(chrome, "#done")] == ["4"])
    steps = read(
        "the steps", lambda: by_css(chrome, "svg#best-so-far path.series")[0].get_attribute("d")
    )
    assert steps.count("V") == 2  # three bests: two drops after the first


@contextmanager
def served(app) -> Iterator[str]:
    """``app`` served by uvicorn in a thread of this process (so a test can hold what it
    computes); its base URL."""
    import threading

    import uvicorn

    from tests.dashboard.conftest import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, lifespan="off"))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for("uvicorn to start", lambda: server.started, 30)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def test_a_search_page_shows_its_parameter_importance_once_fitted_without_a_reload(
    chrome, tmp_path, monkeypatch
):
    """The page comes while the fit is held, saying so; once the fit is let go, its table
    replaces the note in place: no reload (the page is not live), no click."""
    from tests.dashboard.test_search_pages import SlowFit, importance_search
    from tuna.dashboard import create_app
    from tuna.dashboard.app import DashboardSettings
    from tuna.dashboard.readonly import open_readonly

    url = f"sqlite:///{tmp_path / 'tuna.db'}"
    search = importance_search(url)
    fit = SlowFit(monkeypatch)
    ro = open_readonly(url)
    try:
        with served(create_app(ro, DashboardSettings(refresh_s=0))) as base:
            chrome.get(f"{base}/searches/{search}")
            read("the note that the fit runs", lambda: by_css(chrome, "#importance-pending"))
            assert not by_css(chrome, "table#importance")
            chrome.execute_script("document.body.dataset.marker = 'same page'")
            chrome.execute_script("document.getElementById('importance-block').scrollIntoView()")
            shot(chrome, "search-importance-pending")
            fit.gate.set()
            rows = read(
                "the importance table", lambda: by_css(chrome, "table#importance tr[data-name]")
            )
            assert [r.get_attribute("data-name") for r in rows] == ["batch", "threads"]
            assert not by_css(chrome, "#importance-pending")
            assert chrome.execute_script("return document.body.dataset.marker") == "same page"
            chrome.execute_script("document.getElementById('importance-block').scrollIntoView()")
            shot(chrome, "search-importance")
            assert fit.calls == 1
    finally:
        ro.dispose()
