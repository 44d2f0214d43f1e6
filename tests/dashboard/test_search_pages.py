"""The dashboard's search pages through Starlette's test client, on SQLite and on MariaDB."""

from __future__ import annotations

import html
import re
import threading
import warnings
import xml.etree.ElementTree as ET

import pytest

with warnings.catch_warnings():  # Starlette 1.x would rather use httpx2; httpx works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from tests.dashboard.conftest import LIVE_JS, dashboard_client, scripts
from tests.dashboard.test_app import cells
from tests.report.seed import seeded_database, session
from tests.searches.seed import add_build, add_run, add_search, seed_searches
from tests.support.seed import open_test_db
from tuna.dashboard import create_app
from tuna.dashboard.app import PAGES, DashboardSettings
from tuna.dashboard.readonly import open_readonly

NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module", params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def site(request, tmp_path_factory):
    with seeded_database(request, tmp_path_factory.mktemp("search-pages")) as db:
        sd = seed_searches(db)
        with dashboard_client(db, DashboardSettings(refresh_s=3)) as (client, _ro):
            yield client, sd


def chart(page: str) -> ET.Element:
    svg = re.search(r'<svg id="best-so-far".*?</svg>', page, re.S)
    assert svg, "no best-so-far chart"
    return ET.fromstring(svg.group(0))


def test_searches_are_in_the_navigation_and_listed_per_session(site):
    client, sd = site
    assert ("Searches", "/searches") in PAGES
    r = client.get(f"/searches?session={sd.session}")
    assert (
        r.status_code == 200
        and '<noscript><meta http-equiv="refresh" content="3"></noscript>' in r.text
    )
    assert scripts(r.text) == [LIVE_JS]  # no inline script: the CSP allows none
    rows = {c[1]: c for c in cells(r.text, "searches")}
    assert list(rows) == ["serve", "rate-bisect", "empty"]
    assert rows["serve"] == [str(sd.serve), "serve", "active", "default", "max throughput", "",
                             "6 (5 valid)", "2", "10", "3 / 4", "250"]  # fmt: skip
    assert rows["rate-bisect"][-1] == "7" and rows["empty"][-1] == "—"
    assert f'href="/searches/{sd.serve}"' in r.text
    # The session page links its searches; no session given means the newest session's.
    assert f'href="/searches?session={sd.session}"' in client.get(f"/sessions/{sd.session}").text
    newest = client.get("/searches")
    assert newest.status_code == 200 and "Searches of session" in newest.text
    other = client.get(f"/searches?session={sd.other_session}")
    assert [c[1] for c in cells(other.text, "searches")] == ["serve"]


def test_a_search_page_shows_progress_best_run_chart_and_runs(site):
    client, sd = site
    r = client.get(f"/searches/{sd.serve}")
    assert r.status_code == 200, r.text
    assert '<noscript><meta http-equiv="refresh" content="3"></noscript>' in r.text and scripts(
        r.text
    ) == [LIVE_JS]
    assert re.search(r'id="best">250<', r.text) and re.search(r'id="measurements">6<', r.text)
    assert cells(r.text, "progress") == [["6", "5", "1", "0", "2", "10", "4", "3 / 4"]]
    svg = chart(r.text)
    texts = {t.get("class"): t.text for t in svg.iter(f"{NS}text") if t.get("class")}
    assert texts["title"] == "Best throughput so far, search serve"
    assert texts["xlabel"] == "measurements finished (count)"
    assert "throughput" in texts["ylabel"] and "(" in texts["ylabel"]
    (line,) = svg.iter(f"{NS}path")
    assert (line.get("data-best"), line.get("data-until")) == ("250.0", "6")
    assert line.get("data-label") == "serve (default searcher)"
    # Two steps (180 at the 1st measurement, 250 at the 6th): M, H+V, then H to the end.
    assert len(re.findall(r"V", line.get("d"))) == 1
    assert len(list(svg.iter(f"{NS}circle"))) == 4  # the measurements that count
    runs = cells(r.text, "runs")
    assert [int(c[0]) for c in runs] == list(range(8))
    assert runs[1][2:6] == ["batch=1", "threads=2", "throughput=180.0 p95_ms=9.0 "
                            "result_validity=VALID", "180"]  # fmt: skip
    assert runs[3][6] == "yes; does not count (result_validity says invalid)"
    assert runs[4][6] == "no: exit status 1: segfault" and runs[6][6] == "in flight"


def test_run_filters_narrow_the_table_and_page_on(site):
    client, sd = site
    base = f"/searches/{sd.serve}"

    def seqs(query: str) -> list[int]:
        r = client.get(base + query)
        assert r.status_code == 200, r.text
        return [int(c[0]) for c in cells(r.text, "runs")] if 'id="runs"' in r.text else []

    assert seqs("?status=pending") == [6, 7]
    assert seqs("?status=invalid") == [4]
    assert seqs(f"?build={sd.builds[2]}") == [2, 3]
    assert seqs("?order=best") == [5, 1, 2, 0]
    assert seqs("?limit=3") == [0, 1, 2]
    r = client.get(base + "?limit=3&status=valid")
    assert 'id="next"' in r.text and "after=2" in r.text
    assert seqs("?limit=3&after=2") == [3, 4, 5]
    assert seqs("?status=valid&build=999") == []


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/searches/{serve}?status=done", 400, "status='done': expected one of valid, invalid"),
        ("/searches/{serve}?order=worst", 400, "order='worst': expected one of seq, best"),
        ("/searches/{serve}?limit=0", 400, "limit=0 is out of range (1 to 1000)"),
        ("/searches/{serve}?build=x", 400, "build='x' is not an integer"),
        ("/searches/{serve}?after=-5", 400, "after=-5 is out of range"),
        ("/searches/{serve}?sort=seq", 400, "unknown query parameter sort"),
        ("/searches?session=abc", 400, "session='abc' is not an integer"),
        ("/searches?session=999999", 404, "session 999999 does not exist"),
        ("/searches/999999", 404, "search 999999 does not exist"),
    ],
)  # fmt: skip
def test_bad_query_parameters_are_a_400_that_names_them(site, path, status, message):
    client, sd = site
    r = client.get(path.format(serve=sd.serve))
    assert r.status_code == status
    assert message in html.unescape(r.text) and "Traceback" not in r.text


def test_a_strategy_rounds_candidates_are_shown_once_not_on_every_run_row(tmp_path):
    """A strategy search's run rows each repeated the round's whole candidate list."""
    url = f"sqlite:///{tmp_path / 'tuna.db'}"
    db = open_test_db(url)
    sid = session(db, "strategy")
    search = add_search(db, sid, "anneal", {"stat": "time_ms", "goal": "min"})
    candidates = [f"{t},{u},1,1,1,1,1" for t in (1, 2, 4, 8, 16) for u in (1, 2, 4)]
    build = add_build(db, search, {"round": 0, "candidates": candidates}, built=True)
    for seq, c in enumerate(candidates[:6]):
        add_run(db, search, seq, {"round": 0, "candidates": candidates, "candidate": c}, build)
    db.dispose()
    ro = open_readonly(url)
    client = TestClient(create_app(ro), base_url="http://localhost")
    html = client.get(f"/searches/{search}").text
    rows = cells(html, "runs")
    assert len(rows) == 6
    assert all(r[2] == "round=0 candidates=[15 values]" for r in rows), rows[0]
    assert html.count(candidates[-1]) == 0
    by_build = client.get(f"/searches/{search}?build={build}").text
    assert by_build.count(candidates[-1]) == 1  # the full list once, above the runs
    assert f'href="/searches/{search}?build={build}"' in html
    ro.dispose()


def test_a_search_page_draws_its_runs_in_parallel_coordinates(site):
    client, sd = site
    html_text = client.get(f"/searches/{sd.serve}").text
    svg = ET.fromstring(re.search(r'<svg id="parallel".*?</svg>', html_text, re.S).group(0))
    axes = [g.get("data-name") for g in svg.iter(f"{NS}g") if g.get("data-name")]
    assert axes == ["batch", "threads", "throughput"]
    lines = svg.findall(f"{NS}polyline[@class='run']")
    valid = [r for r in cells(html_text, "runs") if r[6] == "yes"]  # valid and counting
    assert len(lines) == len(valid) > 1
    values = [float(p.get("data-value")) for p in lines]
    assert values == sorted(values)  # maximised: the best drawn last, on top
    assert all(len(p.get("points").split()) == 3 for p in lines)
    # The importance block comes by its own request (live.js fetches it), not with the page.
    block = client.get(f"/searches/{sd.serve}/importance").text
    assert "needs 8 finished runs over parameters that vary" in block  # 4 are too few


def test_parallel_coordinates_of_categories_and_no_runs():
    from tuna.dashboard.svg import parallel_coordinates

    svg = ET.fromstring(parallel_coordinates(
        [({"algo": "gemm", "tile": 4, "fixed": 1}, 2.0),
         ({"algo": "direct", "tile": 8, "fixed": 1}, 1.0)],
        value="time_ms", goal="min", title="t",
    ))  # fmt: skip
    axes = [g.get("data-name") for g in svg.iter(f"{NS}g") if g.get("data-name")]
    assert axes == ["algo", "tile", "time_ms"]  # "fixed" never varies: no axis
    best = svg.findall(f"{NS}polyline")[-1]
    assert best.get("data-value") == "1.0"
    empty = parallel_coordinates([], value="v", goal="max", title="t")
    assert "no finished run with a value yet" in empty


def test_parameter_importance_names_the_parameter_that_decides_the_stat(tmp_path):
    url = f"sqlite:///{tmp_path / 'tuna.db'}"
    search = importance_search(url)
    ro = open_readonly(url)
    client = TestClient(create_app(ro), base_url="http://localhost")
    block = client.get(f"/searches/{search}/importance")  # waits for the fit
    assert block.status_code == 200
    rows = cells(block.text, "importance")
    assert [r[0] for r in rows] == ["batch", "threads"]
    assert rows[0][1] == "100 %" and rows[1][1] == "0 %"
    assert "fitted to the best 16 runs' time_ms" in html.unescape(block.text)
    assert cells(client.get(f"/searches/{search}").text, "importance") == rows  # kept
    ro.dispose()


def importance_search(url: str) -> int:
    """A search of 16 runs whose time_ms only batch decides, in a database at ``url``."""
    from tests.searches.seed import land

    db = open_test_db(url)
    sid = session(db, "importance")
    search = add_search(db, sid, "grid", {"stat": "time_ms", "goal": "min"}, budget=100)
    seq = 0
    for batch in (1, 2, 4, 8):
        for threads in (1, 2, 4, 8):
            add_run(db, search, seq, {"batch": batch, "threads": threads})
            land(db, search, seq, {"time_ms": 3.0 * batch})  # threads do nothing
            seq += 1
    db.dispose()
    return search


class SlowFit:
    """``tuna.searches.importance.parameter_importance`` held until :attr:`gate` opens."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from tuna.searches import importance

        self.gate = threading.Event()
        self.calls = 0
        real = importance.parameter_importance

        def slow(*args, **kwargs):
            self.calls += 1
            assert self.gate.wait(60), "the test never let the fit finish"
            return real(*args, **kwargs)

        monkeypatch.setattr(importance, "parameter_importance", slow)


def test_a_search_page_never_waits_for_its_parameter_importance(tmp_path, monkeypatch):
    """The fit runs in the background: the page says so and names the block to fetch, the
    block answers once the fit is done, and one fit serves every request meanwhile."""
    url = f"sqlite:///{tmp_path / 'tuna.db'}"
    search = importance_search(url)
    fit = SlowFit(monkeypatch)
    ro = open_readonly(url)
    client = TestClient(create_app(ro), base_url="http://localhost")
    for _ in range(2):
        page = client.get(f"/searches/{search}")
        assert page.status_code == 200
        assert 'id="importance-pending"' in page.text and '<table id="importance">' not in page.text
        assert f'data-fragment="/searches/{search}/importance"' in page.text
    assert fit.calls == 1
    fit.gate.set()
    block = client.get(f"/searches/{search}/importance")
    assert block.status_code == 200 and block.text.lstrip().startswith("<section")
    assert [r[0] for r in cells(block.text, "importance")] == ["batch", "threads"]
    page = client.get(f"/searches/{search}")
    assert [r[0] for r in cells(page.text, "importance")] == ["batch", "threads"]
    assert 'id="importance-pending"' not in page.text and fit.calls == 1
    assert client.get("/searches/999/importance").status_code == 404
    assert client.get(f"/searches/{search}/importance?x=1").status_code == 400
    ro.dispose()


def test_a_study_of_tuna_tune_is_a_search_the_pages_show(db):
    """tuna.tune's runs, stored through a URL, on the searches list and the search's page."""
    import tuna

    def objective(p):
        if p["x"] == 2:
            raise RuntimeError("no good")
        return {"loss": (p["x"] - 3) ** 2}

    url = db.url.render_as_string(hide_password=False)
    result = tuna.tune(objective, {"x": [1, 2, 3, 4]}, storage=url, name="py", stat="loss")
    with dashboard_client(db) as (client, _ro):
        listed = client.get("/searches")
        assert listed.status_code == 200
        rows = {c[1]: c for c in cells(listed.text, "searches")}
        assert rows["py"][:3] == [str(result.search), "py", "done"]
        page = client.get(f"/searches/{result.search}")
        assert page.status_code == 200
        assert "objective raised RuntimeError: no good" in html.unescape(page.text)
