"""A search's validation in a real headless Chromium (issue #28): the page of a validated
search shows the predicted-against-measured table and a chart per stat, each mark inside
its chart's box; a validation stored while the page is open appears as it refreshes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import tuna
from tests.dashboard.conftest import Server, dashboard_server, wait_for
from tests.dashboard.test_browser import by_css, shot
from tests.searches.test_validation import net, study
from tuna.db import Database


@dataclass
class Site:
    server: Server
    db: Database
    search: int
    runs: int  # the test validation's rows: the front, and the baseline when not on it
    kept: int


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    def prepare(db: Database) -> tuple[Database, int, int, int]:
        result = study(db)
        v = tuna.validate(result, net, storage=db)
        shown = v.runs if v.baseline in v.runs else [v.baseline, *v.runs]
        return db, result.search, len(shown), sum(1 for r in shown if r is not None and r.kept)

    with dashboard_server(tmp_path_factory.mktemp("validation-browser"), prepare) as (s, ids):
        yield Site(s, *ids)


#: The validation table's statuses and each chart's box and marks, read in one script: the
#: live refresh swaps the page's content every few seconds, and elements read one by one went
#: stale between two reads (StaleElementReferenceException in CI at load 17-25).
READ_PAGE = """
const rect = (e) => { const r = e.getBoundingClientRect();
                      return {x: r.x, y: r.y, width: r.width, height: r.height}; };
const statuses = [...document.querySelectorAll("#validated-1 tr[data-seq]")].map(
    (tr) => tr.querySelector("td.status").textContent.trim());
const charts = {};
for (const id of arguments[0]) {
  const svg = document.getElementById(id);
  if (!svg) return null;
  charts[id] = {box: rect(svg), marks: [...svg.querySelectorAll(
      "circle.tuned, circle.kept, path.lost")].map(rect)};
}
return statuses.length ? {statuses, charts} : null;
"""


def test_the_validation_table_and_charts_are_on_the_search_page(chrome, site):
    chrome.get(f"{site.server.base}/searches/{site.search}")
    charts = ["validation-0-0", "validation-0-1"]
    page = wait_for("the validation table", lambda: chrome.execute_script(READ_PAGE, charts), 20)
    assert len(page["statuses"]) == site.runs
    assert page["statuses"].count("yes") == site.kept
    for chart_id in charts:
        box, marks = page["charts"][chart_id]["box"], page["charts"][chart_id]["marks"]
        assert len(marks) == 2 * site.runs  # each run: tuned, and kept or lost
        for r in marks:
            assert box["x"] <= r["x"] and r["x"] + r["width"] <= box["x"] + box["width"]
            assert box["y"] <= r["y"] and r["y"] + r["height"] <= box["y"] + box["height"]
    chrome.execute_script("document.getElementById('validated-1').scrollIntoView()")
    shot(chrome, "search-validation")


def test_a_validation_stored_while_the_page_is_open_appears(chrome, site):
    chrome.get(f"{site.server.base}/searches/{site.search}")
    wait_for("the first validation", lambda: by_css(chrome, "#validated-1"), 20)
    assert not by_css(chrome, "#validated-2")
    tuna.validate(site.search, net, storage=site.db, inputs="holdout")
    wait_for("the holdout validation", lambda: by_css(chrome, "#validated-2"), 30)
    headings = wait_for(  # one read an attempt, repeated while a refresh swaps it (as above)
        "the headings",
        lambda: [h.text for h in by_css(chrome, "h2") if h.text.startswith("Validation on")],
        20,
    )
    assert headings == ["Validation on the 'holdout' inputs", "Validation on the 'test' inputs"]
