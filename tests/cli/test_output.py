"""Output for scripts and pipes: full-width plain tables, ``--json`` and ``--csv``."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re

import pytest

from tuna.cli import main
from tuna.cli.base import TunaConsole, json_text

LONG_KEY = "1024-14-14-1x1-256-14-14-128-0x0-1x1-1x1-0-NCHW-FP32-F"
LINE = "./bin/MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -F 1"


def _session(runner, label="a label long enough to make the table wider than eighty columns"):
    r = runner.invoke(
        main, ["session", "create", "--arch", "gfx90a", "--num-cu", "104", "--backend", "noop",
               "-l", label, "--miopen_v", "3.3.0", "--rocm_v", "6.2", "--docker", "img:1"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output


def test_piped_tables_are_full_width_and_plain(runner, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")  # a pipe ignores the terminal's width
    _session(runner)
    result = runner.invoke(main, ["session", "list"])
    assert result.exit_code == 0
    lines = [line.rstrip() for line in result.output.splitlines()]
    assert lines[0] == "Sessions"
    assert lines[1].split() == [
        "id", "arch", "CUs", "backend", "library", "label", "strategy", "fingerprint", "created",
        "retired",
    ]  # fmt: skip
    row = lines[2]
    assert re.split(r"\s{2,}", row)[:6] == [
        "1", "gfx90a", "104", "noop", "3.3.0",
        "a label long enough to make the table wider than eighty columns",
    ]  # fmt: skip
    assert len(row) > 100  # whole, on one line
    assert not any(ch in result.output for ch in "│┃━─┏└")


def test_session_list_json_and_csv(runner):
    _session(runner)
    result = runner.invoke(main, ["session", "list", "--json"])
    assert result.exit_code == 0, result.output
    [s] = json.loads(result.output)
    assert {k: s[k] for k in ("id", "arch", "num_cu", "library_version", "toolchain")} == {
        "id": 1, "arch": "gfx90a", "num_cu": 104, "library_version": "3.3.0", "toolchain": "6.2",
    }  # fmt: skip
    assert s["docker_image"] == "img:1" and s["environment"] == {} and s["ticket"] is None
    rows = list(
        csv.DictReader(io.StringIO(runner.invoke(main, ["session", "list", "--csv"]).output))
    )
    assert [(r["id"], r["label"], r["ticket"], r["environment"]) for r in rows] == [
        ("1", "a label long enough to make the table wider than eighty columns", "", "{}")
    ]


def test_jobs_status_json_and_csv(runner):
    _session(runner)
    assert runner.invoke(main, ["import_configs", "-t", "t", "-d", LINE]).exit_code == 0
    assert runner.invoke(main, ["load_jobs", "-t", "t", "-s", "1"]).exit_code == 0
    out = runner.invoke(main, ["jobs", "status", "-s", "1", "--csv"]).output
    assert out == (
        "state,jobs\nnew,3\ncompile_start,0\ncompiled,0\neval_start,0\nevaluated,0\n"
        "errored,0\nnot_applicable,0\n"
    )
    doc = json.loads(runner.invoke(main, ["jobs", "status", "--session_id", "1", "--json"]).output)
    assert doc["session"] == 1 and doc["total"] == 3 and doc["by_state"]["new"] == 3
    assert doc["failures"] == [] and doc["expired_leases"] == 0


def test_solvers_and_machines_list_csv(runner):
    _session(runner)
    out = runner.invoke(main, ["solvers", "list", "-s", "1", "--csv"]).output
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["id", "backend", "name", "library_id", "tunable", "algorithm", "valid"]
    assert {r["backend"] for r in rows} == {"noop"} and len(rows) >= 3
    assert runner.invoke(main, ["machine", "add", "10.0.0.9", "--gpus", "0,1"]).exit_code == 0
    out = runner.invoke(main, ["machine", "list", "--csv"]).output
    [m] = csv.DictReader(io.StringIO(out))
    assert (m["hostname"], m["port"], m["gpus"], m["available"]) == (
        "10.0.0.9",
        "22",
        "[0, 1]",
        "1",
    )


def test_query_db_json_holds_whole_keys(runner):
    result = runner.invoke(main, ["query_db", LINE, "--json"])
    assert result.exit_code == 0, result.output
    [r] = json.loads(result.output)
    assert (r["key"], r["config_id"], r["jobs"], r["line_no"]) == (LONG_KEY, None, [], 1)


def test_a_terminal_is_as_wide_as_columns_says_when_printing_not_at_import(monkeypatch):
    """Under pytest-xdist every worker starts with COLUMNS=80 in its environment: pytest's main
    process imports readline, whose C library setenv()s COLUMNS and LINES behind os.environ's
    back, and the workers inherit them. Rich's Console reads COLUMNS once, when it is made (at
    import), so a console made then stayed 80 wide after a test set COLUMNS=200, and terminal
    renderings wrapped under xdist only. TunaConsole reads it when it prints."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # a terminal
    monkeypatch.delenv("TERM", raising=False)  # (TERM=dumb is 80 wide whatever COLUMNS says)
    out = io.StringIO()
    console = TunaConsole(file=out, highlight=False, soft_wrap=False)
    monkeypatch.setenv("COLUMNS", "200")
    assert console.width == 200
    console.print("x" * 150)
    assert out.getvalue() == "x" * 150 + "\n"


def test_a_console_made_on_a_terminal_prints_plain_text_once_it_is_piped(monkeypatch):
    """Rich picks a console's colour system once, when it is made: the commands' consoles are
    made on first use, so when that was inside a test that set TTY_COMPATIBLE=1 (the quick
    start's), every later test in that process read ANSI colour codes from piped output (two
    docs tests failed after tests/cli/test_quickstart.py in one process). TunaConsole decides
    when it prints, as it does for COLUMNS."""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # a terminal, when the console is made
    out = io.StringIO()
    console = TunaConsole(file=out, highlight=False, soft_wrap=False)
    console.print("[bold red]done[/]")
    assert "\x1b[" in out.getvalue()  # coloured on the terminal
    monkeypatch.delenv("TTY_COMPATIBLE")  # now a pipe (a StringIO is no tty)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    out.truncate(0)
    out.seek(0)
    console.print("[bold red]done[/]")
    assert out.getvalue() == "done\n"
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # a terminal again, now with NO_COLOR
    monkeypatch.setenv("NO_COLOR", "1")
    out.truncate(0)
    out.seek(0)
    console.print("[red]done[/]")
    assert out.getvalue() == "done\n"  # NO_COLOR read when printing too


@pytest.mark.parametrize(
    ("argv", "header"),
    [
        (["session", "list", "--csv"], "id,arch,num_cu,"),
        (["machine", "list", "--csv"], "id,hostname,"),
        (["solvers", "list", "--csv"], "id,backend,name,library_id,"),
    ],
)
def test_a_csv_listing_of_no_rows_still_prints_its_header(runner, argv, header):
    """issue #24: a CSV listing with zero rows printed nothing at all, not even a header."""
    result = runner.invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(header) and result.output.count("\n") == 1


def test_a_csv_listing_of_a_sessions_nothing_still_prints_its_header(runner):
    _session(runner)
    for argv, header in (
        (["history", "effort", "-s", "1", "--csv"], "key,solver,platform,"),
        (["search", "list", "-s", "1", "--csv"], "id,session,name,state,"),
    ):
        result = runner.invoke(main, argv)
        assert result.exit_code == 0, result.output
        assert result.output.startswith(header) and result.output.count("\n") == 1, argv


def test_every_commands_json_writes_times_in_iso_8601():
    """One helper (json_text) behind --json and tuna best: a time is 2026-11-28T03:26:53,
    never str()'s 2026-11-28 03:26:53, so two commands showing one row print it alike."""
    doc = {"finished": dt.datetime(2026, 11, 28, 3, 26, 53), "day": dt.date(2026, 11, 28)}
    assert json_text(doc) == ('{\n  "finished": "2026-11-28T03:26:53",\n  "day": "2026-11-28"\n}\n')
    assert json.loads(json_text([doc])) == [json.loads(json_text(doc))]
