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

STALE_BOUND_S = 3.2


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
    # Past any stale count's bound (3 x its freshness, 1 s for a count under 0.1 s; a cheap
    # one is redone after 1 s): the first view must be true, however busy the machine.
    time.sleep(STALE_BOUND_S)
    page = client.get(f"/sessions/{sid}").text
    assert by_state(page)["new"] == 26 and by_state(page)["compiled"] == 10
    # 10 compiles finished a moment ago, nothing runs now: no rate, no ETA (it was
    # "46,628 phases/min" and a growing ETA with nothing running).
    assert bold(page, "rate") == "—" and bold(page, "eta") == "stalled"
    row = next(c for c in cells(client.get("/").text, "sessions") if c[0] == str(sid))
    assert row[8] == "—" and row[9] == "stalled"
    claim_jobs(writer, sid, Phase.COMPILE, owner="w1", limit=2, lease_seconds=600)
    time.sleep(STALE_BOUND_S)
    page = client.get(f"/sessions/{sid}").text
    assert by_state(page)["compile_start"] == 2 and by_state(page)["new"] == 24
    assert bold(page, "rate").endswith("phases/min") and bold(page, "rate") != "0.0 phases/min"
    assert re.fullmatch(r"\d+ (s|min)", bold(page, "eta")), bold(page, "eta")
    # The in-flight list and the state table are read on the same view: they agree.
    assert len(cells(page, "in-flight")) == 2


def test_a_session_page_draws_its_recent_throughput_per_machine(live):
    import xml.etree.ElementTree as ET

    writer, sid, client = live
    work(writer, sid, None, ("compile",), max_jobs=10)
    page = client.get(f"/sessions/{sid}").text
    svg = ET.fromstring(re.search(r'<svg id="throughput".*?</svg>', page, re.S).group(0))
    ns = "{http://www.w3.org/2000/svg}"
    (line,) = svg.findall(f"{ns}path[@class='series']")
    assert line.get("data-label") == "local workers"
    texts = {t.get("class"): t.text for t in svg.iter(f"{ns}text") if t.get("class")}
    assert texts["title"] == "Phases finished per machine, last 10 minutes"
    assert texts["ylabel"] == "phases finished per 20 s (count)"
    from tuna.jobs import activity

    recent = activity.recent_throughput(writer, sid, window_s=600)
    assert {k: sum(v) for k, v in recent.counts.items()} == {"local workers": 10}
    assert (
        recent.counts["local workers"][-1] == 10 or sum(recent.counts["local workers"][-2:]) == 10
    )
    empty = client.get(f"/sessions/{session(writer, 'idle')}").text
    assert "no phase finished in this window" in empty
