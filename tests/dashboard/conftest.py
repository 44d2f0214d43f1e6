"""A real dashboard server and a real headless Chromium, one of each per test module.

The browser is Debian's ``chromium`` driven through ``chromium-driver`` with Selenium
(``bin/test`` installs both when missing). Without them the browser tests skip locally
and fail where they must run (``TUNA_REQUIRE_BROWSER=1``, which bin/test exports, or CI).
Screenshots go to ``$TUNA_TEST_ARTIFACTS/dashboard`` (default ``.tuna-test/artifacts``).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.support.wait import wait_until
from tuna.db import Database, open_database

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = ("chromium", "chromium-browser")
CHROMEDRIVER = "chromedriver"
LIVE_JS = '<script src="/static/live.js" defer>'
"""The one script a live page loads (no inline script: the CSP allows none)."""


def scripts(html: str) -> list[str]:
    return re.findall(r"<script\b[^>]*>", html)


def artifacts_dir() -> Path:
    root = Path(os.environ.get("TUNA_TEST_ARTIFACTS") or REPO / ".tuna-test" / "artifacts")
    path = root / "dashboard"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _browser_required() -> bool:
    return os.environ.get("TUNA_REQUIRE_BROWSER", "") == "1" or bool(os.environ.get("CI"))


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, every: float = 0.1) -> Any:
    """:func:`tests.support.wait.wait_until`, where an exception (a page mid-reload, an
    element gone stale) counts as "not yet"."""

    def guarded() -> Any:
        try:
            return check()
        except Exception:  # noqa: BLE001
            return None

    return wait_until(guarded, what, timeout=timeout, interval=every)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tuna(*args: str) -> list[str]:
    return [sys.executable, "-m", "tuna.cli", *args]


class Server:
    """``tuna dashboard`` in a child process on a free loopback port."""

    def __init__(self, db_url: str, log: Path, *extra: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        env = {**os.environ, "TUNA_DB_URL": db_url}
        self._out = log.open("w")
        self.proc = subprocess.Popen(
            tuna("dashboard", "--port", str(self.port), *extra),
            env=env, stdout=self._out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_for("the dashboard to answer /healthz", self._up, timeout=60)

    def _up(self) -> bool:
        if self.proc.poll() is not None:
            pytest.fail(f"tuna dashboard exited {self.proc.returncode}: {self.log.read_text()}")
        try:
            with urllib.request.urlopen(f"{self.base}/healthz", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()


@contextmanager
def dashboard_client(db: Database, settings: Any = None) -> Iterator[tuple[Any, Database]]:
    """Starlette's test client of the dashboard on ``db``, opened read-only as ``tuna
    dashboard`` opens it; the client and that read-only database."""
    import warnings

    from tuna.dashboard import create_app
    from tuna.dashboard.app import DashboardSettings
    from tuna.dashboard.readonly import open_readonly

    with warnings.catch_warnings():  # Starlette 1.x would rather use httpx2; httpx works
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    ro = open_readonly(db.url.render_as_string(hide_password=False))
    try:
        app = create_app(ro, settings or DashboardSettings())
        yield TestClient(app, base_url="http://localhost"), ro
    finally:
        ro.dispose()


@contextmanager
def dashboard_server(
    tmp: Path, prepare: Callable[[Database], T], *extra: str
) -> Iterator[tuple[Server, T]]:
    """A running ``tuna dashboard --refresh 1 EXTRA...`` on a SQLite database in ``tmp``
    that ``prepare`` filled (its database stays open for the test); the server and what
    ``prepare`` returned."""
    url = f"sqlite:///{tmp / 'tuna.db'}"
    db = open_database(url)
    try:
        prepared = prepare(db)
        server = Server(url, tmp / "dashboard.log", "--refresh", "1", *extra)
        try:
            yield server, prepared
        finally:
            server.stop()
    finally:
        db.dispose()


@pytest.fixture(scope="module")
def chrome() -> Iterator[Any]:
    binary = next((p for p in map(shutil.which, CHROMIUM) if p), None)
    driver_path = shutil.which(CHROMEDRIVER) or (
        "/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else None
    )
    if binary is None or driver_path is None:
        message = "browser tests need chromium and chromium-driver (bin/test installs them)"
        if _browser_required():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,860", "--hide-scrollbars"):  # fmt: skip
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
