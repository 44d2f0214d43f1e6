"""A report's values and its HTML (tuna.report.page), without a database."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuna.errors import TunaError
from tuna.report.page import Baseline, ReportOptions, Section, render_html


def test_baseline_parse():
    assert Baseline.parse("slowest") == Baseline()
    assert Baseline.parse("solver:X") == Baseline(solver="X")
    assert Baseline.parse("session:3") == Baseline(session=3)
    assert Baseline.parse("golden:2") == Baseline(golden=2)
    for bad in ("solver:", "session:x", "slowest:1", "fastest"):
        with pytest.raises(TunaError, match="expected slowest, solver:NAME, session:N"):
            Baseline.parse(bad)


def test_the_page_escapes_what_it_shows_and_lists_every_section():
    sections = [
        Section("a", "Speed <ups>", notes=["1 < 2 & 3"]),
        Section("b", "Winners", table=(["solver"], [("<script>",)])),
    ]
    page = render_html(ReportOptions((7,), Path("out")), {7: "gfx<90a>"}, sections)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<title>Tuna report: session 7</title>" in page
    assert "<h1>Tuna report: session 7 (gfx&lt;90a&gt;)</h1>" in page  # escaped once
    assert '<a href="#a">Speed &lt;ups&gt;</a><a href="#b">Winners</a>' in page
    assert '<p class="note">1 &lt; 2 &amp; 3</p>' in page
    assert '<table id="table-b">' in page and "search-pareto.json" not in page
