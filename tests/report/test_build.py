from __future__ import annotations

import csv
import html
import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from tests.report.seed import EVALUATED_ON_A, add_find_rows
from tuna.cli import main
from tuna.db.enums import JobState
from tuna.db.models import FindDb, Job
from tuna.errors import MissingExtraError, NotFoundError, TunaError
from tuna.report import Baseline, ReportOptions, build_report


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def count(db, *where) -> int:
    with db.session() as s:
        return s.execute(select(func.count()).select_from(Job).where(*where)).scalar_one()


def test_report_of_a_tuned_session_draws_every_section_from_its_data(seeded, tmp_path):
    db, sd = seeded
    rep = build_report(db, ReportOptions((sd.tuned,), tmp_path, take_best=1, problems=3))
    page = rep.index.read_text()
    # Self-contained: every file the page names is in the directory, nothing outside.
    assert "http" not in page and "<script" not in page
    for src in re.findall(r'(?:src|href)="([^"#]+)"', page):
        assert (tmp_path / src).is_file(), src
    names = {Path(f).stem for f in rep.files}
    assert {"speedups", "solver_wins", "jobs_per_machine"} <= names
    assert sum(n.startswith("pareto-") for n in names) == 3
    for f in rep.files:
        assert (tmp_path / f).stat().st_size > 0
    # Every figure: a title, axis labels with units, a legend (text stays text in the SVG).
    for fig in (fig for sec in rep.sections for fig in sec.figures):
        svg = (tmp_path / fig.files["svg"]).read_text()
        for label in (fig.title, fig.xlabel, fig.ylabel):
            assert label and html.escape(label, quote=False) in svg, (fig.name, label)
        assert "(" in fig.xlabel + fig.ylabel, fig.name  # a unit: (ms), (count), (x ...)
        assert 'id="legend_1"' in svg, fig.name
    with db.session() as s:
        problems = s.execute(
            select(func.count(func.distinct(FindDb.config))).where(FindDb.session == sd.tuned)
        ).scalar_one()
        best = dict(
            s.execute(
                select(FindDb.config, func.min(FindDb.time_ms))
                .where(FindDb.session == sd.tuned)
                .group_by(FindDb.config)
            ).all()
        )
    assert problems == 12
    ups = read_csv(tmp_path / "figures" / "speedups.csv")
    assert len(ups) == problems
    assert {int(u["config"]): float(u["best_ms"]) for u in ups} == best
    for u in ups:
        assert float(u["speedup"]) == pytest.approx(float(u["baseline_ms"]) / float(u["best_ms"]))
    wins = read_csv(tmp_path / "figures" / "solver_wins.csv")
    assert sum(int(w["problems_won"]) for w in wins) == problems
    assert {w["family"] for w in wins} == {"fwd 1x1", "fwd 3x3", "bwd 1x1", "bwd 3x3",
                                            "wrw 1x1", "wrw 3x3"}  # fmt: skip
    sets = json.loads(rep.pareto_json.read_text())["problems"]
    assert len(sets) == problems
    for s in sets:
        fastest = min(p["time_ms"] for p in s["points"])
        assert any(p["pareto_optimal"] and p["time_ms"] == fastest for p in s["points"])
    # Each job counts once, on the machine that evaluated it.
    per_machine: dict[str, int] = {}
    for r in read_csv(tmp_path / "figures" / "jobs_per_machine.csv"):
        per_machine[r["machine"]] = per_machine.get(r["machine"], 0) + int(r["jobs"])
    jobs = count(db, Job.session == sd.tuned)
    assert per_machine == {"node-a": EVALUATED_ON_A, "node-b": jobs - EVALUATED_ON_A}


def test_pareto_json_marks_the_front_and_take_best(seeded, tmp_path):
    db, sd = seeded
    config = add_find_rows(db, sd.empty, 0, [
        ("NoopDirect", 1.0, 4 << 20),       # fastest, hungriest: optimal
        ("NoopGemm1x1", 2.0, 1 << 20),      # optimal
        ("NoopWinograd3x3", 3.0, 2 << 20),  # beaten by NoopGemm1x1 only: front 1
        ("NoopTunable", 4.0, 8 << 20),      # beaten by all: front 2
    ])  # fmt: skip
    build_report(db, ReportOptions((sd.empty,), tmp_path, take_best=1))
    (s,) = json.loads((tmp_path / "pareto.json").read_text())["problems"]
    assert s["config"] == config
    got = {p["solver"]: (p["front"], p["pareto_optimal"], p["selected"]) for p in s["points"]}
    assert got == {
        "NoopDirect": (0, True, True),
        "NoopGemm1x1": (0, True, True),
        "NoopWinograd3x3": (1, False, True),
        "NoopTunable": (2, False, False),
    }
    rows = read_csv(tmp_path / "figures" / f"pareto-s{sd.empty}-c{config}.csv")
    assert [(r["solver"], int(r["workspace_bytes"])) for r in rows][0] == ("NoopDirect", 4 << 20)


def test_fleet_section_counts_failures_and_lost_leases(seeded, tmp_path):
    db, sd = seeded
    # problems=0: no Pareto figures (eight per report, most of its drawing); this test reads
    # the fleet's CSVs, which are drawn whatever --problems says
    build_report(db, ReportOptions((sd.tuned, sd.failing, sd.leases), tmp_path, problems=0))
    reasons = read_csv(tmp_path / "figures" / "failure_reasons.csv")
    errored = count(db, Job.session == sd.failing, Job.state == JobState.ERRORED)
    assert errored == count(db, Job.session == sd.failing) > 0
    assert [(r["state"], int(r["jobs"])) for r in reasons if "boom" in r["reason"]] == [
        ("errored", errored)
    ]
    losses = read_csv(tmp_path / "figures" / "lease_losses.csv")
    assert [(r["machine"], int(r["jobs"])) for r in losses] == [("node-b", 3)]


def test_speedups_against_a_solver_and_against_another_session(seeded, tmp_path):
    db, sd = seeded
    # problems=0: no Pareto figures; the speed-ups are drawn whatever --problems says
    build_report(
        db,
        ReportOptions((sd.tuned,), tmp_path / "a", vs=Baseline(solver="NoopDirect"), problems=0),
    )
    ups = read_csv(tmp_path / "a" / "figures" / "speedups.csv")
    assert ups and all(u["baseline"] == "NoopDirect" for u in ups)
    assert all(float(u["speedup"]) >= 1.0 for u in ups)
    build_report(
        db, ReportOptions((sd.tuned,), tmp_path / "b", vs=Baseline(session=sd.tuned), problems=0)
    )
    ups = read_csv(tmp_path / "b" / "figures" / "speedups.csv")
    assert ups and all(float(u["speedup"]) == 1.0 for u in ups)
    with pytest.raises(NotFoundError, match="has no find results to compare"):
        build_report(
            db, ReportOptions((sd.tuned,), tmp_path / "c", vs=Baseline(golden=7), problems=0)
        )


def test_unknown_and_empty_sessions_are_refused_and_nothing_is_written(lite_seeded, tmp_path):
    db, sd = lite_seeded
    with pytest.raises(NotFoundError, match=r"session 999 does not exist; `tuna session list`"):
        build_report(db, ReportOptions((sd.tuned, 999), tmp_path / "x"))
    with pytest.raises(NotFoundError, match="has no jobs, no find results and no searches: "):
        build_report(db, ReportOptions((sd.empty,), tmp_path / "y"))
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_a_session_with_jobs_but_no_results_yet_still_reports_its_fleet(lite_seeded, tmp_path):
    db, sd = lite_seeded
    rep = build_report(db, ReportOptions((sd.failing,), tmp_path))
    notes = {s.id: s.notes for s in rep.sections}
    assert notes["speedups"] == ["No find results in these sessions yet."]
    assert (tmp_path / "figures" / "failure_reasons.svg").is_file()


def test_missing_matplotlib_names_the_extra(lite_seeded, tmp_path, monkeypatch):
    db, sd = lite_seeded
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'tuna\[report\]'"):
        build_report(db, ReportOptions((sd.tuned,), tmp_path))


def test_cli_report_writes_the_page_and_says_what_it_found(lite_seeded, tmp_path, monkeypatch):
    db, sd = lite_seeded
    monkeypatch.setenv("TUNA_DB_URL", str(db.url))
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "rep"
    r = CliRunner().invoke(main, ["report", "-s", str(sd.tuned), "-o", str(out), "--problems", "1"])
    assert r.exit_code == 0, r.output
    assert (
        r.output.splitlines()[0] == f"wrote {out / 'index.html'} (4 figures, PNG + SVG + CSV each)"
    )
    assert (out / "index.html").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "999"], "Error: session 999 does not exist"),
        (["-s", "{empty}"], "has no jobs, no find results and no searches"),
        (
            ["-s", "{tuned}", "--vs", "fastest"],
            "Error: --vs 'fastest': expected slowest, solver:NAME",
        ),
        (["-s", "{tuned}", "--vs", "session:x"], "Error: --vs 'session:x'"),
        (["-s", "{tuned}", "--take-best", "-1"], "Invalid value for '--take-best'"),
    ],
)
def test_cli_report_bad_input(lite_seeded, tmp_path, monkeypatch, args, message):
    db, sd = lite_seeded
    monkeypatch.setenv("TUNA_DB_URL", str(db.url))
    monkeypatch.setenv("COLUMNS", "200")
    args = [a.format(empty=sd.empty, tuned=sd.tuned) for a in args]
    r = CliRunner().invoke(main, ["report", *args, "-o", str(tmp_path / "o")])
    assert r.exit_code != 0 and message in r.output
    assert "Traceback" not in r.output and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("direction", "y", "x", "groups", "name"),
    [("F", 3, 3, 1, "fwd 3x3"), ("W", 1, 1, 32, "wrw 1x1 g32"), ("B", 5, 1, 1, "bwd 5x1")],
)
def test_family_names_parse_back(direction, y, x, groups, name):
    from tuna.results.insight import family_name, parse_family

    assert family_name(direction, y, x, groups) == name
    assert parse_family(name) == (direction, y, x, groups)
    with pytest.raises(TunaError, match="expected DIRECTION YxX"):
        parse_family(name.replace(" ", "-"))


def test_the_winners_parameters_are_in_the_page_its_csvs_and_pareto_json(seeded, tmp_path):
    """A tuner's first question, "which config won, with which parameters", had no answer."""
    db, sd = seeded
    # problems=0: no Pareto figures; pareto.json, the tables and the CSVs are written whatever
    # --problems says
    build_report(db, ReportOptions((sd.tuned,), tmp_path, problems=0))
    with db.session() as s:
        rows = s.execute(select(FindDb.config, FindDb.time_ms, FindDb.params)
                         .where(FindDb.session == sd.tuned)).all()  # fmt: skip
    best: dict[int, tuple[float, str]] = {}
    for config, t, params in rows:
        if config not in best or t < best[config][0]:
            best[config] = (t, params or "")
    assert any(p for _t, p in best.values()), "the seed must have a tuned winner"
    winners = read_csv(tmp_path / "winners.csv")
    assert {int(r["config"]): r["params"] for r in winners} == {c: p for c, (_t, p) in best.items()}
    page = (tmp_path / "index.html").read_text()
    table = re.search(r'<table id="table-winners">(.*?)</table>', page, re.S).group(1)
    for config, (_t, params) in best.items():
        assert re.search(rf"<tr><td>{sd.tuned}</td><td>{config}</td>.*?<td>{re.escape(params)}"
                         r"</td></tr>", table), config  # fmt: skip
    speedups = read_csv(tmp_path / "figures" / "speedups.csv")
    assert {int(r["config"]): r["best_params"] for r in speedups} == {
        c: p for c, (_t, p) in best.items()
    }
    pareto = json.loads((tmp_path / "pareto.json").read_text())["problems"]
    by_point = {(s["config"], p["time_ms"]): p["params"] for s in pareto for p in s["points"]}
    assert {(c, float(t)): p for c, t, p in rows} == by_point
    meta = json.loads((tmp_path / "report.json").read_text())
    assert "winners.csv" in meta["files"] and "figures/speedups.csv" in meta["files"]


def test_the_winners_timings_and_whether_they_were_stable_are_beside_their_times(lite, tmp_path):
    """Issue #24: the report compares times; a winner whose repeated runs spread more than
    1.25x is marked unstable in the winners table and CSV and next to the speed-up figure."""
    from tests.support.history import add_find, add_measurements, add_platform, make_configs
    from tests.support.history import session as make_session

    h = make_configs(lite)
    a = make_session(lite)
    solver, on = h.solvers["NoopTunable"], add_platform(lite, {})
    add_measurements(lite, a, h.configs[0], solver, [1.0, 1.3], platform=on)  # p0 p1
    add_measurements(lite, a, h.configs[0], solver, [1.6], platform=on)  # p0 re-timed: 1.6x
    add_find(lite, a, h.configs[0], solver, 1.0, params="p0")
    add_measurements(lite, a, h.configs[1], solver, [2.0], platform=on)  # p0 timed once
    add_find(lite, a, h.configs[1], solver, 2.0, params="p0")
    add_find(lite, a, h.configs[1], h.solvers["NoopDirect"], 4.0)  # a slower solver
    build_report(lite, ReportOptions((a,), tmp_path, problems=0))  # no Pareto figures: not read
    winners = {int(r["config"]): r for r in read_csv(tmp_path / "winners.csv")}
    assert [(winners[c]["timings"], winners[c]["spread"], winners[c]["unstable"])
            for c in h.configs[:2]] == [("2", "1.6", "1"), ("1", "1.0", "0")]  # fmt: skip
    page = html.unescape((tmp_path / "index.html").read_text())
    table = re.search(r'<table id="table-winners">(.*?)</table>', page, re.S).group(1)
    assert "<th>time_ms</th><th>timings</th>" in table
    assert "<td>1</td><td>2 runs, spread 1.60x: unstable</td>" in table
    assert "<td>2</td><td>1 run</td>" in table
    note = ("Timings unstable: 1 of 2 winners' repeated runs spread more than 1.25x (up to "
            "1.60x: machine busy?); each time is its fastest run.")  # fmt: skip
    speedups = page[page.index('<section id="speedups">') : page.index('<section id="winners">')]
    assert note in speedups and note in page[page.index('<section id="winners">') :]
