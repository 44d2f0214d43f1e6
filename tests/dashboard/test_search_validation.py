"""A search's validations on its dashboard page (issue #28): per input set, the front and
the baseline with what was predicted, tuned and measured there and whether each is kept,
and a chart per stat of predicted against measured (on SQLite and MariaDB)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import tuna
from tests.dashboard.conftest import dashboard_client
from tests.dashboard.test_app import cells
from tests.searches.test_validation import net, study
from tuna.dashboard.app import DashboardSettings

NS = "{http://www.w3.org/2000/svg}"


def cell(value: object) -> str:
    """A stat as `tuna search validate` prints it: a float to 4 significant digits."""
    return "—" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def test_the_search_page_shows_each_validation_as_stored(db) -> None:
    result = study(db)
    v = tuna.validate(result, net, storage=db)
    held = tuna.validate(result, net, storage=db, inputs="holdout", stats=["accuracy"])
    with dashboard_client(db, DashboardSettings(refresh_s=3)) as (client, _ro):
        page = client.get(f"/searches/{result.search}").text
    assert page.count("<h2>Validation on") == 2
    assert "<h2>Validation on the 'holdout' inputs</h2>" in page
    rows = cells(page, "validated-2")  # by the inputs' name: holdout, then test
    assert v.baseline is not None
    shown_runs = v.runs if v.baseline in v.runs else [v.baseline, *v.runs]  # as the CLI lists
    assert [r[0] for r in rows] == [str(r.seq) for r in shown_runs]
    assert "-1" in [r[0] for r in rows]
    for shown, run in zip(rows, shown_runs, strict=True):
        predicted, tuned, measured = (run.predicted or {}), run.tuned, run.measured or {}
        assert shown[2:8] == [
            cell(predicted.get("mflop")),
            cell(tuned["mflop"]),
            cell(measured["mflop"]),
            cell(predicted.get("accuracy")),
            cell(tuned["accuracy"]),
            cell(measured["accuracy"]),
        ]
        assert shown[8] == ("yes" if run.kept else "no")
    for shown in cells(page, "validated-1"):  # net drops accuracy on 'test' inputs alone
        assert shown[6] == shown[7] and shown[3] == shown[4]
    kept = re.findall(r'<b class="kept-count">(\d+)</b> of (\d+) runs kept', page)
    assert kept == [(str(len(x.kept)), str(len(x.runs))) for x in (held, v)]
    found = re.findall(r'<svg id="(validation-[\d-]+)"', page)
    assert found == ["validation-0-0", "validation-0-1", "validation-1-0", "validation-1-1"]
    svg = re.search(r'<svg id="validation-1-1".*?</svg>', page, re.S)
    assert svg is not None
    chart = ET.fromstring(svg.group(0))  # accuracy on the 'test' inputs
    kept_runs = [r for r in shown_runs if r.kept]
    assert len(chart.findall(f"{NS}circle[@class='tuned']")) == len(shown_runs)
    assert len(chart.findall(f"{NS}circle[@class='kept']")) == len(kept_runs)
    assert len(chart.findall(f"{NS}path[@class='lost']")) == len(shown_runs) - len(kept_runs)
    assert 0 < len(kept_runs) < len(shown_runs)  # both marks are drawn
    assert chart.find(f"{NS}line[@class='equal']") is not None


def test_a_search_never_validated_has_no_validation_section(lite) -> None:
    result = study(lite)
    with dashboard_client(lite, DashboardSettings(refresh_s=3)) as (client, _ro):
        page = client.get(f"/searches/{result.search}").text
    assert "Validation on" not in page and 'id="validation-' not in page
