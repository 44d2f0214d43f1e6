"""A search of several objectives on the dashboard: its constraints, baseline, Pareto front
table and chart, the front tuna.tune returned (on SQLite and MariaDB)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import tuna
from tests.dashboard.conftest import dashboard_client
from tests.dashboard.test_app import cells
from tests.searches.test_tune_objectives import EXACT, SPACE, TWO, WITHIN_3, approximate
from tuna.dashboard.app import DashboardSettings

NS = "{http://www.w3.org/2000/svg}"


def test_the_search_page_shows_the_front_tune_returned(db):
    result = tuna.tune(approximate, SPACE, directions=TWO, constraints=WITHIN_3,
                       baseline=EXACT, storage=db, name="approx")  # fmt: skip
    with dashboard_client(db, DashboardSettings(refresh_s=3)) as (client, _ro):
        page = client.get(f"/searches/{result.search}").text
        listing = client.get("/searches").text
    assert "minimise <b>time_ms</b>, maximise <b>accuracy</b>" in page
    assert "<code>accuracy &gt;= baseline.accuracy - 3</code>" in page
    assert re.search(r'id="baseline">Baseline \(run -1\): <code>level=0 width=2</code>', page)
    rows = cells(page, "pareto")
    assert [r[0] for r in rows] == ["4", "5", "2", "3", "0", "-1", "1"]
    assert [(float(r[2]), float(r[3])) for r in rows] == [
        (run.stats["time_ms"], run.stats["accuracy"]) for run in result.pareto
    ]
    svg = re.search(r'<svg id="pareto-front".*?</svg>', page, re.S)
    assert svg is not None
    chart = ET.fromstring(svg.group(0))
    assert len(chart.findall(f"{NS}circle[@class='front-run']")) == 7
    assert len(chart.findall(f"{NS}circle[@class='baseline']")) == 1
    # The runs that count, as dots (the baseline and ten proposals, four failing the constraint).
    assert len(chart.findall(f"{NS}circle[@class='run']")) == 7
    assert "does not count (accuracy &gt;= baseline.accuracy - 3: not met)" in page
    assert "min time_ms, max accuracy" in listing


def test_one_objective_has_no_front_section(lite):
    result = tuna.tune(lambda p: float(p["level"]), SPACE, storage=lite, name="one")
    with dashboard_client(lite, DashboardSettings(refresh_s=3)) as (client, _ro):
        page = client.get(f"/searches/{result.search}").text
    assert "Pareto front" not in page and 'id="pareto-front"' not in page
