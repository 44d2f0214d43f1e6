"""``tuna search list`` and ``tuna search show`` on seeded searches (tests/searches/seed.py),
and what ``tuna search run`` says of them."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from tests.searches.seed import SERVE, SeededSearches, seed_searches
from tests.support.databases import copy_sqlite
from tests.support.seed import open_test_db
from tuna.cli import main
from tuna.cli.search_drive import summary_line
from tuna.config import load_settings
from tuna.db import open_database
from tuna.searches import query


@pytest.fixture(scope="module")
def seeded_file(tmp_path_factory) -> tuple[Path, SeededSearches]:
    """The seeded searches in a SQLite file, seeded once for the module."""
    path = tmp_path_factory.mktemp("seeded-searches") / "tuna.db"
    db = open_test_db(f"sqlite:///{path}")
    sd = seed_searches(db)
    db.dispose()
    return path, sd


@pytest.fixture
def seeded(seeded_file, runner):
    """The CLI on its own copy of the seeded searches (its embedded database)."""
    path, sd = seeded_file
    copy_sqlite(path, Path(load_settings().db_url.database or ""))
    return runner, sd


def words(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def test_search_list_shows_each_search_with_progress_builds_and_best(seeded):
    runner, sd = seeded
    r = runner.invoke(main, ["search", "list", "-s", str(sd.session)])
    assert r.exit_code == 0, r.output
    lines = [x.rstrip() for x in r.output.splitlines()]
    assert lines[0] == f"Searches of session {sd.session}"
    assert words(lines[1]) == ["id", "name", "state", "searcher", "objective", "done",
                               "in flight", "budget", "builds", "best"]  # fmt: skip
    rows = {w[1]: w for w in map(words, lines[2:])}
    assert rows["serve"] == [str(sd.serve), "serve", "active", "default", "throughput (max)",
                             "6 (5 valid)", "2", "10", "3/4", "250"]  # fmt: skip
    assert rows["rate-bisect"][5:] == ["4 (4 valid)", "0", "-", "0/0", "7"]
    assert rows["empty"][5:] == ["0 (0 valid)", "0", "5", "0/0", "-"]


def test_search_list_as_json_and_csv(seeded):
    runner, sd = seeded
    r = runner.invoke(main, ["search", "list", "-s", str(sd.session), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [s["name"] for s in doc] == ["serve", "rate-bisect", "empty"]
    assert {k: doc[0][k] for k in ("objective", "runs", "done", "in_flight", "best")} == {
        "objective": "throughput:max", "runs": 8, "done": 6, "in_flight": 2, "best": 250.0,
    }  # fmt: skip
    r = runner.invoke(main, ["search", "list", "-s", str(sd.session), "--csv"])
    rows = list(csv.DictReader(io.StringIO(r.output)))
    assert [(x["name"], x["best"], x["budget"]) for x in rows] == [
        ("serve", "250.0", "10"), ("rate-bisect", "7.0", ""), ("empty", "", "5"),
    ]  # fmt: skip


def test_search_list_of_a_session_without_searches_and_of_a_missing_one(seeded):
    runner, sd = seeded
    r = runner.invoke(main, ["search", "list", "-s", str(sd.session + 100)])
    assert r.exit_code == 1
    assert r.output == (f"Error: session {sd.session + 100} does not exist; `tuna session list` "
                        "shows the sessions\n")  # fmt: skip
    create = runner.invoke(main, ["session", "create", "--arch", "x", "--num-cu", "1",
                                  "--backend", "noop", "-l", "bare"])  # fmt: skip
    assert create.exit_code == 0, create.output
    sid = max(sd.session, sd.other_session) + 1
    r = runner.invoke(main, ["search", "list", "-s", str(sid)])
    assert r.exit_code == 0 and "has no search yet" in r.output


def test_search_show_gives_progress_the_best_run_and_the_runs_table(seeded):
    runner, sd = seeded
    r = runner.invoke(main, ["search", "show", "-s", str(sd.session), "serve"])
    assert r.exit_code == 0, r.output
    lines = [x.rstrip() for x in r.output.splitlines()]
    assert lines[0] == (f"Search {sd.serve} 'serve' (session {sd.session}): active, backend "
                        "bench, searcher default; objective maximise throughput")  # fmt: skip
    assert lines[1] == ("  runs: 6 done (5 valid, 1 invalid), 2 in flight, budget 10, "
                        "parallelism 4; builds: 3 of 4 built")  # fmt: skip
    assert lines[2] == "  best: run 5, throughput = 250 (batch=4 threads=2)"
    assert lines[3] == f"Runs of search {sd.serve}"
    assert words(lines[4]) == ["seq", "build params", "run params", "stats", "valid",
                               "machine", "finished"]  # fmt: skip
    rows = [words(x) for x in lines[5:13]]
    assert [int(w[0]) for w in rows] == [s[0] for s in SERVE]
    assert rows[1][:3] == ["1", "batch=1", "threads=2"]
    assert rows[1][3] == "throughput=180 p95_ms=9 result_validity=VALID"
    assert rows[1][4:6] == ["yes", "bench-host"]
    assert rows[3][4] == "yes; does not count (result_validity says invalid)"
    assert rows[4][4] == "no: exit status 1: segfault"
    assert rows[6][3:] == ["-", "in flight", "-", "-"]
    assert lines[13] == "8 runs shown"


def test_search_show_filters_and_orders_runs(seeded):
    runner, sd = seeded
    r = runner.invoke(main, ["search", "show", str(sd.serve), "--best", "--limit", "2"])
    assert r.exit_code == 0, r.output
    lines = [x.rstrip() for x in r.output.splitlines()]
    table = [words(x) for x in lines[5:]]
    assert [w[0] for w in table[:2]] == ["5", "1"]
    assert lines[-1] == "2 runs shown (--limit 2)"
    r = runner.invoke(main, ["search", "show", str(sd.serve), "--status", "invalid"])
    assert [words(x)[0] for x in r.output.splitlines()[5:-1]] == ["4"]
    r = runner.invoke(main, ["search", "show", str(sd.empty)])
    assert r.output.splitlines()[-2:] == ["  best: no run counts yet", "No run yet."]


def test_search_show_as_csv_has_a_column_per_param_and_stat(seeded):
    runner, sd = seeded
    r = runner.invoke(main, ["search", "show", str(sd.serve), "--csv", "--limit", "0"])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.output)))
    assert list(rows[0]) == ["seq", "status", "build", "build.batch", "run.threads",
                             "stat.throughput", "stat.p95_ms", "stat.result_validity",
                             "value", "reason", "machine", "finished"]  # fmt: skip
    assert [(x["seq"], x["build.batch"], x["run.threads"], x["stat.throughput"], x["status"])
            for x in rows[:2]] == [("0", "1", "1", "100.0", "valid"),
                                   ("1", "1", "2", "180.0", "valid")]  # fmt: skip
    assert rows[4]["reason"] == "exit status 1: segfault" and rows[4]["stat.throughput"] == ""


def test_search_show_as_json_has_the_search_its_best_run_and_its_runs(seeded):
    runner, sd = seeded
    r = runner.invoke(main, ["search", "show", str(sd.serve), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["search"]["name"] == "serve" and doc["search"]["best"] == 250.0
    assert doc["best"]["seq"] == 5 and doc["best"]["run_params"] == {"threads": 2}
    assert [x["seq"] for x in doc["runs"]] == list(range(8))
    assert doc["runs"][3]["stats"]["result_validity"] == "INVALID"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "show", "serve"], "Error: search 'serve': a search named by name needs its "
         "session, e.g. `tuna search show -s 3 serve` (or give its id)"),
        (["search", "show", "-s", "1", "nope"], "Error: search 'nope' in session 1 does not "
         "exist; `tuna search list -s 1` shows the searches"),
        (["search", "show", "424242"], "Error: search 424242 does not exist; `tuna search list "
         "-s SESSION` shows the searches"),
    ],
)  # fmt: skip
def test_search_show_says_what_is_wrong_without_a_traceback(seeded, args, message):
    runner, _ = seeded
    r = runner.invoke(main, args)
    assert r.exit_code == 1 and r.output == message + "\n", r.output


def test_search_run_names_a_search_of_its_session_only(seeded):
    runner, sd = seeded
    r = runner.invoke(main, ["search", "run", "-s", str(sd.other_session), "--search",
                             str(sd.serve)])  # fmt: skip
    assert r.exit_code == 1
    other = sd.other_session
    assert r.output == (f"Error: search {sd.serve} of session {other} does not exist; "
                        f"`tuna search list -s {other}` shows the searches\n")  # fmt: skip


def test_search_runs_summary_line_is_the_read_sides_summary(seeded):
    _, sd = seeded
    db = open_database(load_settings().db_url)
    try:
        serve = query.find_search(db, sd.serve)
        line = summary_line(serve, query.best_run(db, serve))
        empty = query.find_search(db, sd.empty)
        assert summary_line(empty, query.best_run(db, empty)) == (
            f"search {sd.empty} 'empty': active; 0/0 runs finished (0 invalid), 0 builds; "
            "no run counts yet"
        )
    finally:
        db.dispose()
    # seq 3 printed more but says INVALID; seq 4 crashed; 6 and 7 are in flight
    assert line == (f"search {sd.serve} 'serve': active; 6/8 runs finished (1 invalid), 4 builds; "
                    "best throughput=250 at batch=4 threads=2 (run 5)")  # fmt: skip


def test_a_strategy_search_needs_no_name_as_its_help_example_shows(runner, tmp_path):
    """`tuna search create -s 3 --strategy model ... --config 12 --solver CpuGemm1x1` from
    its own --help failed with "Missing option '--name'"; a strategy search has a default."""
    from tuna.cli import main as tuna

    lines = tmp_path / "n.txt"
    lines.write_text("MIOpenDriver conv -n 1 -c 16 -H 8 -W 8 -k 16 -y 1 -x 1 -F 1\n")
    for args in (
        ["import_configs", "-t", "t", "-f", str(lines)],
        ["session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "cpuconv"],
    ):
        assert runner.invoke(tuna, args).exit_code == 0
    args = ["search", "create", "-s", "1", "--strategy", "random", "--config", "1"]
    r = runner.invoke(tuna, [*args, "--solver", "CpuGemm1x1", "--budget", "8"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("search 1 'random CpuGemm1x1 config 1' in session 1: random")
    r = runner.invoke(
        tuna, ["search", "create", "p.py", "-s", "1", "--run", "x", "--objective", "t"]
    )
    assert r.exit_code == 1 and "--name" in r.output


def test_search_show_says_how_steady_the_stored_results_timings_were(runner, tmp_path):
    """Issue #24: where a strategy search's winner is shown, its repeated timings' spread is
    said beside it; above 1.25x they are unstable (the stored time stays the fastest)."""
    from sqlalchemy import insert, select

    from tests.support.history import add_platform
    from tuna.db.models import FindDb, Measurement, Solver

    lines = tmp_path / "n.txt"
    lines.write_text("MIOpenDriver conv -n 1 -c 16 -H 8 -W 8 -k 16 -y 1 -x 1 -F 1\n")
    for args in (
        ["import_configs", "-t", "t", "-f", str(lines)],
        ["session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "cpuconv"],
        ["search", "create", "-s", "1", "--strategy", "random", "--config", "1", "--solver",
         "CpuGemm1x1", "--budget", "8"],
    ):  # fmt: skip
        assert runner.invoke(main, args).exit_code == 0
    shown = runner.invoke(main, ["search", "show", "1"])
    assert "stored:" not in shown.output  # nothing stored yet
    db = open_database()
    try:
        on = add_platform(db, {})
        with db.session() as s:
            solver = s.execute(select(Solver.id).where(Solver.name == "CpuGemm1x1")).scalar_one()
            where = dict(session=1, config=1, solver=solver, params="1,1,4,64,1,0,0")
            s.execute(
                insert(Measurement),
                [dict(**where, platform=on, time_ms=t, valid=True) for t in (1.0, 1.4)],
            )
            s.execute(insert(FindDb).values(**where, time_ms=1.0, workspace=0, algorithm="direct"))
    finally:
        db.dispose()
    shown = runner.invoke(main, ["search", "show", "1"])
    assert shown.exit_code == 0, shown.output
    assert (
        "  stored: time_ms = 1 (1,1,4,64,1,0,0), another search's or job's of session 1; "
        "2 timing(s), spread 1.40x - timings unstable (machine busy?): the time is its "
        "fastest run"
    ) in shown.output
    doc = json.loads(runner.invoke(main, ["search", "show", "1", "--json"]).output)
    assert doc["stored"] == {
        "time_ms": 1.0, "params": "1,1,4,64,1,0,0", "job": None, "mine": False,
        "timings": 2, "spread": 1.4, "unstable": True,
    }  # fmt: skip
