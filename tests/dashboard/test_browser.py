"""The dashboard as a person uses it: a headless Chromium against a running server.

One server and one browser for the module, on a seeded SQLite database (see
``tests/report/seed.py``) plus a session that go_fish drains while the browser watches.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from tests.dashboard.conftest import Server, artifacts_dir, dashboard_server, tuna, wait_for
from tests.report.seed import Seeded, seed, session
from tuna.db import Database
from tuna.fleet.machines import add_machine
from tuna.jobs.load import load_jobs

LONG_NAME = "a-label-that-is-one-word-" + "and-goes-on-" * 8
"""A session label and a machine name with no space to break at (they overflowed tables)."""


@dataclass
class Site:
    server: Server
    seeded: Seeded
    drain: int
    url: str
    tmp: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("browser")

    def prepare(db: Database) -> tuple[Seeded, int]:
        sd = seed(db)
        drain = session(db, "drain", {"NOOP_SLEEP_S": "0.25"})
        load_jobs(db, drain, step="find", tag="net")
        session(db, LONG_NAME)
        add_machine(db, LONG_NAME[:120], arch="gfx90a", num_cu=104)
        return sd, drain

    # go_fish's workers log under tmp/logs (test_progress...): the job pages read them
    with dashboard_server(tmp, prepare, "--logs", str(tmp / "logs")) as (server, (sd, drain)):
        yield Site(server, sd, drain, f"sqlite:///{tmp / 'tuna.db'}", tmp)


def shot(driver: Any, name: str) -> Path:
    path = artifacts_dir() / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def by_css(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, css))


def updated(driver: Any) -> str:
    """When the live refresh last swapped the page's content in ('' before the first)."""
    return str(driver.execute_script("return document.body.dataset.updated || ''"))


def wait_for_refresh(driver: Any) -> str:
    before = updated(driver)
    return str(wait_for("a live refresh", lambda: updated(driver) not in ("", before) and
                        updated(driver), timeout=20))  # fmt: skip


def click_link(driver: Any, name: str) -> bool:
    next(a for a in by_css(driver, "header a") if a.text == name).click()
    return True


def texts(driver: Any, css: str) -> list[str] | None:
    """The texts of what ``css`` finds, read in one go (None when nothing is found)."""
    return [e.text for e in by_css(driver, css)] or None


def click_first(driver: Any, css: str) -> bool:
    by_css(driver, css)[0].click()
    return True


def test_every_page_loads_from_the_navigation(chrome, site):
    chrome.get(site.server.base + "/")
    assert chrome.title == "Sessions · Tuna"
    rows = by_css(chrome, "#sessions tr[data-session]")
    assert len(rows) == 6
    assert shot(chrome, "sessions").stat().st_size > 0
    for name, title in (("Machines", "Machines"), ("Results", "Results of session"),
                        ("Sessions", "Sessions")):  # fmt: skip
        # Found and clicked in one attempt, repeated while the link goes stale under it (a
        # page still settling: it failed so at load 31); a stale link was never clicked.
        wait_for(f"a click on {name}", lambda n=name: click_link(chrome, n), timeout=20)
        wait_for(f"the {name} page", lambda t=title: chrome.title.startswith(t), timeout=20)
        assert by_css(chrome, "h1")[0].text.startswith(title)
        shot(chrome, name.lower())
    chrome.get(f"{site.server.base}/sessions/{site.seeded.failing}")
    # Each read is one attempt, repeated while the live refresh (live.js, on every page) swaps
    # the content under it: a cell read mid-swap went stale (CI at load 20).
    cells = wait_for("the failures table", lambda: texts(chrome, "#failures td"), timeout=20)
    assert cells == ["errored", "boom (gave up after 4 tries)", "36"]
    shot(chrome, "session-failures")
    wait_for("a click on the reason", lambda: click_first(chrome, "#failures a"), timeout=20)
    wait_for("the failed jobs", lambda: chrome.title.startswith("Failed jobs"), timeout=20)
    solvers = wait_for("the failed jobs", lambda: texts(chrome, "#failed-jobs td.solver"))
    assert len(solvers) == 36
    shot(chrome, "session-failed-jobs")
    job = wait_for("a job link", lambda: texts(chrome, "#failed-jobs a"), timeout=20)[0]
    wait_for("a click on the job", lambda: click_first(chrome, "#failed-jobs a"), timeout=20)
    wait_for("the job page", lambda: chrome.title.startswith(f"Job {job}"), timeout=20)
    assert by_css(chrome, "#state")[0].text == "errored" and by_css(chrome, "#solver")[0].text
    assert "boom" in by_css(chrome, "#reason")[0].text
    shot(chrome, "job")
    chrome.get(f"{site.server.base}/results?session=oops")
    assert by_css(chrome, "#message")[0].text == "session='oops' is not an integer"


def test_a_filter_narrows_the_results(chrome, site):
    from selenium.webdriver.support.ui import Select

    chrome.get(f"{site.server.base}/results?session={site.seeded.tuned}")
    before = [r.text for r in by_css(chrome, "#results td.solver")]
    assert len(before) == 36 and len(set(before)) > 1
    params = [c.text for c in by_css(chrome, "#results td.params")]  # the winners' parameters
    assert len(params) == 36 and any(p not in ("", "—") for p in params), params
    Select(by_css(chrome, "select[name=solver]")[0]).select_by_visible_text("NoopDirect")
    by_css(chrome, "#apply")[0].click()
    wait_for("the filtered page", lambda: "solver=NoopDirect" in chrome.current_url, timeout=20)
    after = [r.text for r in by_css(chrome, "#results td.solver")]
    assert 0 < len(after) < len(before) and set(after) == {"NoopDirect"}
    assert after == [s for s in before if s == "NoopDirect"]
    shot(chrome, "results-filtered")


def test_progress_moves_while_go_fish_drains_a_session(chrome, site):
    chrome.get(f"{site.server.base}/sessions/{site.drain}")

    def compiled() -> int | None:
        cells = by_css(chrome, '#progress tr[data-state="compiled"] td.num')
        return int(cells[0].text) if cells else None

    assert compiled() == 0
    log = (site.tmp / "go_fish.log").open("w")
    fish = subprocess.Popen(
        tuna("go_fish", "--session", str(site.drain), "--compile", "--local", "-w", "2",
             "--log-dir", str(site.tmp / "logs")),
        env={**__import__("os").environ, "TUNA_DB_URL": site.url}, stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    seen: list[int] = []
    try:
        # The page reloads itself every second: the numbers must move without a click.
        def drained() -> bool:
            n = compiled()
            if n is not None and (not seen or seen[-1] != n):
                seen.append(n)
                if 0 < n < 36 and len(seen) == 2:
                    shot(chrome, "session-draining")
            return n == 36

        wait_for("go_fish to drain the session on the page", drained, timeout=180, every=0.2)
        assert fish.wait(timeout=60) == 0, (site.tmp / "go_fish.log").read_text()
    finally:
        if fish.poll() is None:
            fish.terminate()
            fish.wait(timeout=30)
        log.close()
    assert seen == sorted(seen) and any(0 < n < 36 for n in seen), seen
    # Each read is one attempt, repeated while the page's refresh swaps the element under it
    # (StaleElementReferenceException in CI at load 5).
    done = wait_for("the done count", lambda: texts(chrome, "#done"), timeout=20)
    assert done == ["0 / 36"]  # compiled, not yet evaluated
    # Nothing in flight any more: no rate and no ETA, however many compiles just finished.
    wait_for("the page to say stalled", lambda: texts(chrome, "#eta") == ["stalled"], timeout=20)
    assert wait_for("the rate", lambda: texts(chrome, "#rate"), timeout=20) == ["—"]
    # The throughput chart drew the local workers' compiles.
    labels = wait_for(
        "the throughput chart",
        lambda: [p.get_attribute("data-label") for p in by_css(chrome, "#throughput path.series")],
        timeout=20,
    )
    assert labels == ["local workers"]
    shot(chrome, "session-drained")
    # A job's page shows what go_fish's worker logged about it, from the worker's log file.
    from tuna.db import open_database
    from tuna.db.models import Job

    db = open_database(site.url)
    try:
        with db.session() as s:
            job = s.scalar(select(func.min(Job.id)).where(Job.session == site.drain))
    finally:
        db.dispose()
    chrome.get(f"{site.server.base}/jobs/{job}")
    text = wait_for("the job's log lines", lambda: by_css(chrome, "#log")[0].text, timeout=20)
    assert f"job {job}: compile" in text and "attempt 1 ok" in text, text
    assert str(site.tmp / "logs" / "compile") in by_css(chrome, "#log-files")[0].text
    shot(chrome, "job-log")


def test_a_typed_filter_survives_the_live_refresh(chrome, site):
    """The pages refreshed with a meta refresh, which lost what a user was typing."""
    chrome.get(site.server.base + "/")
    chrome.execute_script("window.notReloaded = true")
    box = by_css(chrome, "input[name=arch]")[0]
    box.click()
    box.send_keys("gfx9")
    wait_for_refresh(chrome)
    wait_for_refresh(chrome)
    assert chrome.execute_script("return window.notReloaded") is True
    assert chrome.execute_script("return document.activeElement.name") == "arch"
    assert (
        chrome.execute_script("return document.querySelector('input[name=arch]').value") == "gfx9"
    )
    assert len(by_css(chrome, "#sessions tr[data-session]")) == 6  # the table is still there
    shot(chrome, "sessions-typed-filter")


def test_a_login_protected_dashboard_in_the_browser(chrome, site):
    users = site.tmp / "users"
    users.write_text("ana:correct horse\n")
    server = Server(site.url, site.tmp / "dashboard-login.log", "--refresh", "1",
                    "--login", str(users))  # fmt: skip
    try:
        chrome.get(server.base + "/")
        assert not by_css(chrome, "#sessions")  # the browser asks for a login instead
        host = server.base.removeprefix("http://")
        chrome.get(f"http://ana:correct%20horse@{host}/")
        assert chrome.title == "Sessions · Tuna"
        # The live refresh's own requests carry the login too (a 401 would say so below).
        wait_for_refresh(chrome)
        assert "refresh failed" not in by_css(chrome, "footer")[0].text
        shot(chrome, "sessions-logged-in")
    finally:
        server.stop()


def test_long_names_stay_inside_the_window(chrome, site):
    for page in ("/", "/machines", f"/results?session={site.seeded.tuned}"):
        chrome.get(site.server.base + page)
        widths = chrome.execute_script(
            "const main = document.querySelector('main');"
            "return [main.clientWidth, document.documentElement.scrollWidth, window.innerWidth,"
            " ...Array.from(main.querySelectorAll('table'), t => t.scrollWidth)]"
        )
        main, page_width, window_width, *tables = widths
        assert tables and max(tables) <= main and page_width <= window_width, (page, widths)
    chrome.get(site.server.base + "/")
    assert LONG_NAME in by_css(chrome, "#sessions")[0].text.replace("\n", "")
    shot(chrome, "sessions-long-label")
