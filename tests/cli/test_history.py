"""The tuning library's commands: session rules/retire/unretire, history, best, load_jobs."""

from __future__ import annotations

import json

from tests.support.history import (
    ARCH,
    NUM_CU,
    add_find,
    add_measurements,
    add_platform,
    make_configs,
    session,
)
from tuna.cli import main
from tuna.db import open_database


def _db():
    return open_database()


def test_retire_unretire_and_unknown_session(runner):
    db = _db()
    make_configs(db)
    sid = session(db)
    db.dispose()
    result = runner.invoke(main, ["session", "retire", "-s", str(sid), "--reason", "bad clocks"])
    assert result.exit_code == 0, result.output
    assert f"session {sid}: retired at" in result.output
    assert f"`tuna session unretire -s {sid}` undoes it" in result.output
    listed = json.loads(runner.invoke(main, ["session", "list", "--json"]).output)
    assert [r["retired_reason"] for r in listed if r["id"] == sid] == ["bad clocks"]
    again = runner.invoke(main, ["session", "retire", "-s", str(sid)])
    assert again.exit_code == 1 and "already retired" in again.output
    result = runner.invoke(main, ["session", "unretire", "-s", str(sid)])
    assert result.exit_code == 0 and "active again" in result.output
    missing = runner.invoke(main, ["session", "retire", "-s", "77"])
    assert missing.exit_code == 1
    assert "Error: session 77 does not exist; `tuna session list` shows the sessions" in (
        missing.output
    )
    assert "Traceback" not in missing.output


def test_rules_show_set_and_refuse_bad_values(runner):
    db = _db()
    make_configs(db)
    sid = session(db)
    db.dispose()
    shown = runner.invoke(main, ["session", "rules", "-s", str(sid)])
    assert shown.output == f"session {sid}: library fingerprint\n"
    args = ["session", "rules", "-s", str(sid), "--library", "version", "--max-age", "30d",
            "--platform", "gpu.model=MI250X", "--json"]  # fmt: skip
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "session": sid,
        "rules": {"library": "version", "max_age": "30d", "platform": {"gpu.model": "MI250X"}},
    }
    cleared = runner.invoke(
        main, ["session", "rules", "-s", str(sid), "--no-max-age", "--no-platform"]
    )
    assert cleared.output == f"session {sid}: library version\n"
    bad = runner.invoke(main, ["session", "rules", "-s", str(sid), "--max-age", "a month"])
    assert bad.exit_code == 1
    assert "Error: --max-age 'a month' does not parse: give a duration (30d" in bad.output
    bad = runner.invoke(main, ["session", "rules", "-s", str(sid), "--platform", "gpu"])
    assert bad.exit_code == 1 and "FIELD=VALUE" in bad.output


def test_best_writes_json_and_says_why_nothing_counts(runner, tmp_path):
    db = _db()
    h = make_configs(db)
    a, b = session(db), session(db, library_commit="new")
    add_find(db, b, h.configs[0], h.solvers["NoopTunable"], 1.25, perf_params="tile=8")
    db.dispose()
    none = runner.invoke(main, ["best", "-s", str(a)])
    assert none.exit_code == 1
    assert f"Error: no compatible history for session {a}: {ARCH} {NUM_CU} CUs" in none.output
    assert "rule library excluded 1 find row(s)" in none.output
    out = tmp_path / "best.json"
    result = runner.invoke(main, ["best", "-s", str(a), "--library", "version", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"best of 1 problem(s) for session {a}" in result.output
    doc = json.loads(out.read_text())
    assert doc["rules"] == {"library": "version"}
    assert [(p["key"], p["solver"], p["params"], p["session"]) for p in doc["problems"]] == [
        (h.keys[0], "NoopTunable", "tile=8", b)
    ]
    stdout = runner.invoke(main, ["best", "-a", ARCH, "-n", str(NUM_CU), "-t", "net"])
    assert json.loads(stdout.output)["problems"][0]["driver"]
    bad = runner.invoke(main, ["best", "-a", ARCH, "-n", str(NUM_CU), "--max-age", "soon"])
    assert bad.exit_code == 1 and "--max-age 'soon' does not parse" in bad.output


def test_load_jobs_reports_what_did_not_count(runner):
    db = _db()
    make_configs(db)
    sid = session(db)
    db.dispose()
    result = runner.invoke(main, ["load_jobs", "-t", "net", "-s", str(sid)])
    assert result.exit_code == 0, result.output
    assert "history rules: library fingerprint" in result.output
    bad = runner.invoke(main, ["load_jobs", "-t", "net", "-s", str(sid), "--min-trials", "0"])
    assert bad.exit_code == 1 and "--min-trials 0: give at least 1" in bad.output


def test_history_effort_and_prune(runner):
    db = _db()
    h = make_configs(db)
    sid = session(db)
    p = add_platform(db, {"gpu": {"model": "MI250X"}})
    add_measurements(db, sid, h.configs[0], h.solvers["NoopDirect"], [3.0, 1.0, None], platform=p,
                     budget=3)  # fmt: skip
    db.dispose()

    def effort():
        out = runner.invoke(main, ["history", "effort", "-s", str(sid), "--json"]).output
        return [(r["key"], r["measurements"], r["valid"], r["budget"], r["best_ms"])
                for r in json.loads(out)]  # fmt: skip

    assert effort() == [(h.keys[0], 3, 2, 3, 1.0)]
    csv_out = runner.invoke(main, ["history", "effort", "-s", str(sid), "--csv"]).output
    assert csv_out.splitlines()[0].startswith("key,solver,platform,")
    table = runner.invoke(main, ["history", "effort", "-s", str(sid)]).output
    assert "NoopDirect" in table and "exhaustive" in table
    dry = runner.invoke(main, ["history", "prune", "--keep-best", "1", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "would delete 2 measurement(s), kept 1" in dry.output
    assert f"{h.keys[0]} NoopDirect: 2" in dry.output
    done = runner.invoke(main, ["history", "prune", "--keep-best", "1", "--json"])
    assert json.loads(done.output)["deleted"] == 2
    assert effort() == [(h.keys[0], 3, 2, 3, 1.0)]  # the effort spent stays counted
    zero = runner.invoke(main, ["history", "prune", "--keep-best", "0"])
    assert zero.exit_code == 1 and "Error: --keep-best 0: keep at least 1" in zero.output


def test_export_and_golden_refuse_a_retired_session(runner, tmp_path):
    db = _db()
    h = make_configs(db)
    sid = session(db)
    add_find(db, sid, h.configs[0], h.solvers["NoopDirect"], 1.0)
    db.dispose()
    assert runner.invoke(main, ["session", "retire", "-s", str(sid)]).exit_code == 0
    out = runner.invoke(main, ["export_db", "-s", str(sid), "-f", "-o", str(tmp_path)])
    assert out.exit_code == 1
    assert f"Error: session {sid} is retired: its results leave every export" in out.output
    assert f"tuna session unretire -s {sid}" in out.output
    gold = runner.invoke(main, ["update_golden", "--golden_v", "1", "-s", str(sid)])
    assert gold.exit_code == 1 and "leave every golden version" in gold.output


def test_session_create_stores_its_rules(runner):
    args = ["session", "create", "--arch", ARCH, "--num-cu", str(NUM_CU), "--backend", "noop"]
    result = runner.invoke(main, [*args, "--library", "version", "--max-age", "30d"])
    assert result.exit_code == 0, result.output
    assert "history that counts: library version, max age 30d" in result.output
    sid = int(result.output.split(":", 1)[0].removeprefix("session "))
    shown = runner.invoke(main, ["session", "rules", "-s", str(sid)])
    assert shown.output == f"session {sid}: library version, max age 30d\n"
    plain = runner.invoke(main, args)
    assert "history that counts" not in plain.output
    bad = runner.invoke(main, [*args, "--max-age", "forever"])
    assert bad.exit_code == 1 and "--max-age 'forever' does not parse" in bad.output
    listed = json.loads(runner.invoke(main, ["session", "list", "--json"]).output)
    assert [r["id"] for r in listed] == [sid, sid + 1]  # the refused one was not created


def test_best_as_a_golden_version_exports_in_miopens_format(runner, tmp_path):
    db = _db()
    h = make_configs(db)
    a, b, retired = session(db), session(db), session(db)
    direct, tunable = h.solvers["NoopDirect"], h.solvers["NoopTunable"]
    add_find(db, a, h.configs[0], direct, 2.0)
    add_find(db, b, h.configs[0], direct, 1.5)
    add_find(db, b, h.configs[0], tunable, 1.0, perf_params="tile=8")
    add_find(db, a, h.configs[1], direct, 0.5)
    add_find(db, retired, h.configs[1], direct, 0.1)
    db.dispose()
    runner.invoke(main, ["session", "retire", "-s", str(retired)])
    args = ["best", "-a", ARCH, "-n", str(NUM_CU), "--golden_v", "7"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "golden version 7 (gfx90a, 104 CUs): 3 rows, 2 keys, from session(s) " in result.output
    again = runner.invoke(main, args)
    assert again.exit_code == 1 and "golden version 7 exists" in again.output
    out = runner.invoke(main, ["export_db", "--golden_v", "7", "-f", "-o", str(tmp_path)])
    assert out.exit_code == 0, out.output
    (fdb,) = tmp_path.glob("*.fdb.txt")
    lines = dict(line.split("=", 1) for line in fdb.read_text().splitlines())
    assert [e.split(",")[0] for e in lines[h.keys[0]].split(";")] == [
        "NoopTunable:1", "NoopDirect:1.5",
    ]  # fmt: skip
    assert lines[h.keys[1]].startswith("NoopDirect:0.5,")  # not the retired session's 0.1
    both = runner.invoke(main, [*args, "-o", str(tmp_path / "x.json")])
    assert both.exit_code == 2 and "not both" in both.output


def test_a_session_retired_after_a_golden_version_leaves_its_export(runner, tmp_path):
    """Golden versions are immutable, but retiring a session takes its rows out of every
    later export of one (how many is said, and in the manifest); --include_retired keeps
    them; an export left with nothing says why."""
    db = _db()
    h = make_configs(db)
    a, b = session(db), session(db)
    direct, tunable = h.solvers["NoopDirect"], h.solvers["NoopTunable"]
    add_find(db, a, h.configs[0], direct, 2.0)
    add_find(db, b, h.configs[0], tunable, 1.0)
    add_find(db, b, h.configs[1], direct, 0.5)
    db.dispose()
    made = runner.invoke(main, ["best", "-a", ARCH, "-n", str(NUM_CU), "--golden_v", "3"])
    assert made.exit_code == 0, made.output
    assert runner.invoke(main, ["session", "retire", "-s", str(b)]).exit_code == 0

    def export(*extra: str, tag: str = "x"):
        out = tmp_path / tag
        result = runner.invoke(main, ["export_db", "--golden_v", "3", "-f", "-o", str(out), *extra])
        assert result.exit_code == 0, result.output
        (fdb,) = out.glob("*.fdb.txt")
        (manifest,) = out.glob("*.json")
        lines = dict(line.split("=", 1) for line in fdb.read_text().splitlines())
        return result.output, lines, json.loads(manifest.read_text())

    output, lines, manifest = export()
    assert lines == {h.keys[0]: lines[h.keys[0]]}  # config 1 had b's row only
    assert lines[h.keys[0]].startswith("NoopDirect:2,")  # not b's faster NoopTunable
    assert f"left out 2 golden row(s) of retired session(s) {b} (--include_retired" in output
    assert manifest["source"]["retired_sessions_left_out"] == [b]
    assert manifest["counts"]["retired_rows_left_out"] == 2
    output, lines, manifest = export("--include_retired", tag="y")
    assert set(lines) == {h.keys[0], h.keys[1]} and "left out" not in output
    assert lines[h.keys[0]].startswith("NoopTunable:1,")
    assert "retired_sessions_left_out" not in manifest["source"]
    assert runner.invoke(main, ["session", "retire", "-s", str(a)]).exit_code == 0
    none = runner.invoke(main, ["export_db", "--golden_v", "3", "-f", "-o", str(tmp_path / "z")])
    assert none.exit_code == 1
    assert f"retired session(s) {a}, {b} are left out; --include_retired" in none.output


def test_load_jobs_min_trials_says_what_it_skipped(runner):
    db = _db()
    h = make_configs(db)
    old = session(db)
    p = add_platform(db, {"gpu": {"model": "MI250X"}})
    add_measurements(db, old, h.configs[0], h.solvers["NoopTunable"], [1.0, 2.0], platform=p)
    sid = session(db)
    db.dispose()
    args = ["load_jobs", "-t", "net", "-s", str(sid), "--only_tunable", "--min-trials", "2"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = [" ".join(line.split()) for line in result.output.splitlines()]
    assert "skipped: >= 2 measurements that count 1" in lines
    assert "jobs queued 2" in lines
    assert "(pass --force to queue work that counting history already did)" in lines
    forced = runner.invoke(main, [*args, "--force"])
    assert "jobs queued 1" in [" ".join(x.split()) for x in forced.output.splitlines()]


def test_best_says_beside_the_json_when_timings_were_unstable(runner, tmp_path):
    """Issue #24: a winner's repeated runs spread 1.5x: `tuna best` says so on stderr (its
    stdout stays the JSON document, whose rows carry their timings) and after -o's line."""
    db = _db()
    h = make_configs(db)
    a = session(db)
    solver, on = h.solvers["NoopTunable"], add_platform(db, {})
    add_measurements(db, a, h.configs[0], solver, [1.0, 1.2], platform=on)  # p0 p1
    add_measurements(db, a, h.configs[0], solver, [1.5], platform=on)  # p0 re-timed, disturbed
    add_find(db, a, h.configs[0], solver, 1.0, params="p0")
    db.dispose()
    r = runner.invoke(main, ["best", "-s", str(a)])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)["problems"]
    assert (row["timings"], row["spread"], row["unstable"]) == (2, 1.5, True)
    note = (
        "timings unstable: 1 of 1 best rows' repeated runs spread more than 1.25x (up to "
        "1.50x: machine busy?); each time is its fastest run"
    )
    assert r.stderr == note + "\n"
    out = tmp_path / "best.json"
    written = runner.invoke(main, ["best", "-s", str(a), "-o", str(out)])
    assert " ".join(written.output.split()).endswith(f"; {note}")
