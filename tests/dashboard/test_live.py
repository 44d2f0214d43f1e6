"""Counts that are true: no stale count after a change, a rate and an ETA only while work is
in flight (the issue's pages, through Starlette's test client on SQLite)."""

from __future__ import annotations

import re
import time
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from tests.dashboard.test_app import cells
from tests.report.seed import seed, session, work
from tests.support.seed import open_test_db
from tuna.dashboard import create_app
from tuna.dashboard.readonly import open_readonly
from tuna.jobs import Phase, claim_jobs
from tuna.jobs.load import load_jobs


@pytest.fixture
def live(tmp_path):
    url = f"sqlite:///{tmp_path / 'tuna.db'}"
    writer = open_test_db(url)
    seed(writer)
    sid = session(writer, "live")
    load_jobs(writer, sid, step="find", tag="net")
    ro = open_readonly(url)
    yield writer, sid, TestClient(create_app(ro), base_url="http://localhost")
    ro.dispose()
    writer.dispose()


def by_state(html: str) -> dict[str, int]:
    return {c[0]: int(c[1]) for c in cells(html, "progress") if len(c) == 2}


def bold(html: str, name: str) -> str:
    found = re.search(rf'<b id="{name}">(.*?)</b>', html, re.S)
    assert found, name
    return found.group(1).strip()


def test_the_first_view_after_a_change_shows_it_and_a_rate_only_while_work_is_in_flight(live):
    writer, sid, client = live
    page = client.get(f"/sessions/{sid}").text
    assert by_state(page)["new"] == 36 and bold(page, "eta") == "stalled"
    work(writer, sid, None, ("compile",), max_jobs=10)
    time.sleep(1.2)  # past a cheap count's freshness (1 s): the first view must be true
    page = client.get(f"/sessions/{sid}").text
    assert by_state(page)["new"] == 26 and by_state(page)["compiled"] == 10
    # 10 compiles finished a moment ago, nothing runs now: no rate, no ETA (it was
    # "46,628 phases/min" and a growing ETA with nothing running).
    assert bold(page, "rate") == "—" and bold(page, "eta") == "stalled"
    row = next(c for c in cells(client.get("/").text, "sessions") if c[0] == str(sid))
    assert row[8] == "—" and row[9] == "stalled"
    claim_jobs(writer, sid, Phase.COMPILE, owner="w1", limit=2, lease_seconds=600)
    time.sleep(1.2)
    page = client.get(f"/sessions/{sid}").text
    assert by_state(page)["compile_start"] == 2 and by_state(page)["new"] == 24
    assert bold(page, "rate").endswith("phases/min") and bold(page, "rate") != "0.0 phases/min"
    assert re.fullmatch(r"\d+ (s|min)", bold(page, "eta")), bold(page, "eta")
    # The in-flight list and the state table are read on the same view: they agree.
    assert len(cells(page, "in-flight")) == 2
