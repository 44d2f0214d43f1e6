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


def test_the_validation_table_and_charts_are_on_the_search_page(chrome, site):
    chrome.get(f"{site.server.base}/searches/{site.search}")
    rows = wait_for("the validation table", lambda: by_css(chrome, "#validated-1 tr[data-seq]"), 20)
    assert len(rows) == site.runs
    kept = [r for r in rows if r.find_elements("css selector", "td.status")[0].text == "yes"]
    assert len(kept) == site.kept
    for chart_id in ("validation-0-0", "validation-0-1"):
        box = by_css(chrome, f"svg#{chart_id}")[0].rect
        marks = by_css(chrome, f"svg#{chart_id} circle.tuned, svg#{chart_id} circle.kept, "
                               f"svg#{chart_id} path.lost")  # fmt: skip
        assert len(marks) == 2 * site.runs  # each run: tuned, and kept or lost
        for m in marks:
            r = m.rect
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
    headings = [h.text for h in by_css(chrome, "h2") if h.text.startswith("Validation on")]
    assert headings == ["Validation on the 'holdout' inputs", "Validation on the 'test' inputs"]
