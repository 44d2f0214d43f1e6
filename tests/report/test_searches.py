"""The report's search sections on seeded searches (tests/searches/seed.py)."""

from __future__ import annotations

import csv
import html
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.report.seed import seeded_database
from tests.searches.seed import BISECT_P95, SERVE_BEST_SO_FAR, seed_searches
from tuna.cli import main
from tuna.report import ReportOptions, build_report, parse_stat_pair

NS = "{http://www.w3.org/2000/svg}"
STATS = parse_stat_pair("throughput:max,p95_ms:min")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def report(request, tmp_path_factory):
    """The report of the seeded searches' session, written once per dialect."""
    tmp = tmp_path_factory.mktemp("search-report")
    with seeded_database(request, tmp) as db:
        sd = seed_searches(db)
        out = tmp / "out"
        rep = build_report(db, ReportOptions((sd.session,), out, take_best=1, pareto_stats=STATS))
        yield rep, out, sd


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def section(rep, sid):
    return next(s for s in rep.sections if s.id == sid)


def test_the_pareto_front_of_two_named_stats_marks_optimal_and_take_best_runs(report):
    rep, out, sd = report
    doc = json.loads((out / "search-pareto.json").read_text())
    assert doc["stats"] == ["throughput:max", "p95_ms:min"] and doc["take_best"] == 1
    by_name = {s["name"]: s for s in doc["searches"]}
    assert set(by_name) == {"serve", "rate-bisect", "empty"}
    serve = by_name["serve"]
    assert serve["search"] == sd.serve and serve["session"] == sd.session
    # seq 3 printed the most throughput but its result_validity says INVALID: not ranked.
    got = {p["seq"]: (p["front"], p["pareto_optimal"], p["selected"]) for p in serve["points"]}
    assert got == {0: (0, True, True), 1: (0, True, True), 2: (1, False, True),
                   5: (0, True, True)}  # fmt: skip
    assert serve["points"][1]["point"] == {"batch": 1, "threads": 2}
    assert serve["points"][1]["stats"] == {"throughput": 180.0, "p95_ms": 9.0}
    assert by_name["rate-bisect"]["points"] == [] and by_name["empty"]["points"] == []
    sec = section(rep, "search-pareto")
    assert [f.name for f in sec.figures] == [f"search-pareto-{sd.serve}"]
    assert any("rate-bisect" in n and "throughput and p95_ms" in n for n in sec.notes)
    rows = read_csv(out / "figures" / f"search-pareto-{sd.serve}.csv")
    got_rows = [(r["seq"], r["throughput"], r["p95_ms"], r["pareto_optimal"], r["selected"])
                for r in rows]  # fmt: skip
    assert got_rows == [
        ("0", "100.0", "5.0", "1", "1"),
        ("1", "180.0", "9.0", "1", "1"),
        ("2", "150.0", "9.5", "0", "1"),
        ("5", "250.0", "20.0", "1", "1"),
    ]
    assert 'href="search-pareto.json"' in rep.index.read_text()


def test_progress_draws_best_so_far_per_search_one_figure_per_objective(report):
    rep, out, sd = report
    sec = section(rep, "search-progress")
    names = sorted(f.name for f in sec.figures)
    assert names == ["search-progress-p95_ms-min", "search-progress-throughput-max"]
    rows = read_csv(out / "figures" / "search-progress-throughput-max.csv")
    assert [r["name"] for r in rows] == ["serve"] * 6
    assert [float(r["best_so_far"]) for r in rows] == SERVE_BEST_SO_FAR
    assert [int(r["seq"]) for r in rows] == [1, 0, 2, 3, 4, 5]
    assert [r["value"] for r in rows] == ["180.0", "100.0", "150.0", "", "", "250.0"]
    bisect = read_csv(out / "figures" / "search-progress-p95_ms-min.csv")
    assert [float(r["value"]) for r in bisect] == BISECT_P95
    assert [float(r["best_so_far"]) for r in bisect] == [12.0, 8.0, 8.0, 7.0]
    assert f"Search empty (session {sd.session}) has no finished run yet." in sec.notes


def test_every_search_figure_has_a_title_axis_labels_with_units_and_a_legend(report):
    rep, out, _ = report
    figs = [f for s in rep.sections if s.id.startswith("search-") for f in s.figures]
    assert len(figs) == 3
    for fig in figs:
        svg = (out / fig.files["svg"]).read_text()
        for label in (fig.title, fig.xlabel, fig.ylabel):
            assert label and html.escape(label, quote=False) in svg, (fig.name, label)
        assert "(count)" in fig.xlabel or "unit" in fig.xlabel
        # A unit by the stat's name where it says one (p95_ms: ms), else the benchmark's.
        assert ("(ms," if "_ms" in fig.ylabel else "the benchmark's unit") in fig.ylabel
        assert 'id="legend_1"' in svg
        assert (out / fig.files["csv"]).stat().st_size > 0
        ET.fromstring(svg)
    progress = (out / "figures" / "search-progress-throughput-max.svg").read_text()
    assert "serve (default searcher)" in progress


def test_a_report_without_pareto_stats_says_how_to_name_them(tmp_path, sqlite_url):
    from tuna.db import open_database

    db = open_database(sqlite_url)
    sd = seed_searches(db)
    # A session with searches but no job and no find result still has a report.
    rep = build_report(db, ReportOptions((sd.session,), tmp_path))
    db.dispose()
    sec = section(rep, "search-pareto")
    assert sec.figures == [] and "--pareto-stats throughput:max,p95_ms:min" in sec.notes[0]
    assert not (tmp_path / "search-pareto.json").exists()
    assert section(rep, "search-progress").figures


def test_report_cli_takes_pareto_stats_and_refuses_bad_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("TUNA_DATA_DIR", str(tmp_path / "data"))
    from tuna.config import load_settings
    from tuna.db import open_database

    db = open_database(load_settings().db_url)
    sd = seed_searches(db)
    db.dispose()
    out = tmp_path / "r"
    r = CliRunner().invoke(main, ["report", "-s", str(sd.session), "-o", str(out),
                                  "--pareto-stats", "throughput:max,p95_ms:min"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert (out / "search-pareto.json").is_file()
    assert (out / "figures" / f"search-pareto-{sd.serve}.svg").is_file()
    r = CliRunner().invoke(main, ["report", "-s", str(sd.session), "-o", str(tmp_path / "x"),
                                  "--pareto-stats", "throughput:up,p95_ms:min"])  # fmt: skip
    assert r.exit_code == 1
    assert r.output == ("Error: --pareto-stats 'throughput:up,p95_ms:min': 'throughput:up' is "
                        "not STAT:min or STAT:max, e.g. throughput:max,p95_ms:min\n")  # fmt: skip
    assert not (tmp_path / "x").exists()


def test_a_search_of_several_objectives_is_drawn_on_its_own_without_pareto_stats(
    tmp_path, sqlite_url
):
    import tuna
    from tests.searches.test_tune_objectives import EXACT, SPACE, TWO, WITHIN_3, approximate
    from tuna.db import open_database
    from tuna.searches import query

    db = open_database(sqlite_url)
    result = tuna.tune(approximate, SPACE, directions=TWO, constraints=WITHIN_3,
                       baseline=EXACT, storage=db, name="approx")  # fmt: skip
    s = query.find_search(db, result.search)
    front = [r.seq for r in query.pareto(db, s)]
    rep = build_report(db, ReportOptions((s.session,), tmp_path))
    db.dispose()
    sec = section(rep, "search-pareto")
    assert [f.name for f in sec.figures] == [f"search-pareto-{s.id}"]
    doc = json.loads((tmp_path / "search-pareto.json").read_text())
    (only,) = doc["searches"]
    assert only["stats"] == ["time_ms:min", "accuracy:max"]
    # The report's front 0 is the front search show lists (runs failing the constraint out).
    assert sorted(p["seq"] for p in only["points"] if p["pareto_optimal"]) == sorted(front)
    assert len(only["points"]) == 7  # the runs that count: the baseline and six others
