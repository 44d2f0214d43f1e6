"""Flags MITuna users type: -h everywhere, one meaning per letter, --session_id, load_job, and
docs/how-to/mituna.md's "MITuna → Tuna" table checked against the real commands."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.support import docs
from tuna.cli import main
from tuna.cli.load import _step

REPO = Path(__file__).resolve().parents[2]


def commands(group: click.Group = main, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, cmd in sorted(group.commands.items()):
        yield (*path, name)
        if isinstance(cmd, click.Group):
            yield from commands(cmd, (*path, name))


def command(path: tuple[str, ...]) -> click.Command:
    cmd: click.Command = main
    for name in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    return cmd


ALL = list(commands())


@pytest.mark.parametrize("path", ALL, ids=" ".join)
def test_dash_h_is_help_on_every_command_and_shows_an_example(path):
    result = CliRunner().invoke(main, [*path, "-h"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: main {' '.join(path)} ")
    assert "Example" in result.output


def _scripts() -> dict[str, str]:
    """``[project.scripts]`` of pyproject.toml (tomllib needs Python 3.11)."""
    text = (REPO / "pyproject.toml").read_text().split("[project.scripts]\n", 1)[1]
    block = text.split("\n\n", 1)[0]
    return dict(re.findall(r'^(\w+) = "([\w.:]+)"$', block, re.M))


@pytest.mark.parametrize("script", sorted(_scripts()))
def test_dash_h_works_on_the_commands_run_under_their_own_names(script, monkeypatch):
    module, func = _scripts()[script].split(":")
    monkeypatch.setattr("sys.argv", [script, "-h"])
    with pytest.raises(SystemExit) as e:
        getattr(import_module(module), func)()
    assert e.value.code == 0


def test_load_job_is_load_jobs_under_mituna_s_name():
    assert _scripts()["load_job"] == "tuna.cli.load:load_job_main"
    result = CliRunner().invoke(main, ["load_job", "-h"])
    assert result.exit_code == 0
    assert "Queue jobs: one per (config, applicable solver)" in result.output
    listed = CliRunner().invoke(main, ["-h"]).output.split()
    assert "load_jobs" in listed and "load_job" not in listed  # not listed twice


# Each short flag and what it means; a second meaning must be added here and to
# docs/how-to/mituna.md's "One letter, one meaning" (MITuna's own double meanings are kept
# per command).
LETTERS = {
    "-s": {"--session"},
    "-t": {"--tag", "--top"},
    "-l": {"--label"},
    "-a": {"--arch"},
    "-n": {"--num_cu"},
    "-w": {"--workers"},
    "-o": {"--output", "--out-dir", "--out"},
    "-f": {"--file", "--find_db", "--find_enforce"},
    "-m": {"--machine", "--base"},
    "-e": {"--exec"},
    "-y": {"--yes"},
    "-v": {"--verbose"},
    "-h": {"--help"},
    "-T": {"--tag_only"},
    "-b": {"--batches"},
    "-c": {"--command", "--opencl"},
    "-d": {"--driver"},
    "-k": {"--kern_db"},
    "-p": {"--perf_db"},
}


def test_one_letter_means_one_thing_across_commands():
    seen: dict[str, set[str]] = {}
    where: dict[tuple[str, str], list[str]] = {}
    for path in ALL:
        cmd = command(path)
        ctx = click.Context(cmd)
        for p in cmd.get_params(ctx):
            if not isinstance(p, click.Option):
                continue
            names = p.opts + p.secondary_opts
            long = sorted((n for n in names if n.startswith("--")), key=len)
            meaning = long[0].replace("-cu", "_cu") if long else "?"
            for short in (n for n in names if len(n) == 2):
                seen.setdefault(short, set()).add(meaning)
                where.setdefault((short, meaning), []).append(" ".join(path))
    extra = {s: m - LETTERS.get(s, set()) for s, m in seen.items() if m - LETTERS.get(s, set())}
    assert not extra, {s: {m: where[s, m] for m in ms} for s, ms in extra.items()}


def test_every_command_that_takes_a_session_takes_session_id_and_dash_s():
    for path in ALL:
        cmd = command(path)
        for p in cmd.params:
            if p.name in ("session_id", "sessions"):
                assert {"-s", "--session"} <= set(p.opts), path
                if path[0] not in ("report",):  # several sessions: MITuna had no such command
                    assert "--session_id" in p.opts, path


def test_load_jobs_s_with_solver_names_says_what_mituna_meant(runner):
    result = runner.invoke(main, ["load_jobs", "-t", "x", "-s", "ConvA,ConvB"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: Invalid value for '-s' / '--session' / '--session_id': 'ConvA,ConvB' is not a "
        "session id (a number); MITuna's load_job -s (solvers) is --solvers in Tuna"
    )


@pytest.mark.parametrize(
    ("fin_steps", "step"),
    [
        ("miopen_perf_compile,miopen_perf_eval", "perf"),
        ("miopen_perf_compile", "perf"),
        ("miopen_find_compile,miopen_find_eval", "find"),
        ("miopen_find_eval", "find"),
    ],
)
def test_fin_steps_name_the_step(fin_steps, step):
    assert _step(None, fin_steps) == step


def test_fin_steps_that_name_no_step_are_refused(runner):
    for bad in ("miopen_perf_compile,miopen_find_eval", "not_fin", ""):
        result = runner.invoke(main, ["load_jobs", "-t", "x", "-s", "1", "--fin_steps", bad])
        assert result.exit_code == 1, bad
        assert result.output.startswith(f"Error: --fin_steps {bad}: give miopen_perf_compile")


def _table_rows() -> list[tuple[str, str]]:
    section = docs.section("how-to/mituna.md", "## Commands and flags: MITuna → Tuna")
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows.append((cells[0], cells[1]))
    return rows


def test_the_mituna_table_names_real_commands_and_flags():
    rows = _table_rows()
    assert len(rows) >= 15
    checked = 0
    for mituna, tuna in rows:
        m = re.fullmatch(r"`([^`]+)`", tuna)
        assert m, f"mituna.md row for {mituna}: the Tuna cell is one `command line`"
        words = shlex.split(m.group(1))
        if words[0] == "SELECT":
            continue
        path = words[1:] if words[0] == "tuna" else words
        cmd: click.Command = main
        i = 0
        while isinstance(cmd, click.Group):
            assert path[i] in cmd.commands, f"mituna.md: {m.group(1)}: no command {path[i]!r}"
            cmd = cmd.commands[path[i]]
            i += 1
        known = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"-h"}
        for word in path[i:]:
            if word.startswith("-") and word != "-":
                assert word in known, f"mituna.md: {m.group(1)}: {cmd.name} has no {word}"
        checked += 1
    assert checked >= 15


def test_import_db_help_says_what_happens_to_unknown_solvers():
    out = CliRunner().invoke(main, ["import_db", "-h"]).output
    assert "no miopen backend" not in out
    assert "recorded as solvers of the session's library build" in " ".join(out.split())


@pytest.mark.parametrize(
    "args",
    [
        ["-s", "NoopDirect", "--session_id", "2"],  # MITuna's own Jenkins order
        ["--session_id", "2", "-s", "NoopDirect"],
    ],
)
def test_load_job_s_with_a_solver_is_refused_whatever_the_order(runner, args):
    r = runner.invoke(main, ["load_jobs", "-t", "few", "-l", "s", *args])
    assert r.exit_code == 2, r.output
    assert r.output.splitlines()[-1] == (
        "Error: Invalid value for '-s' / '--session' / '--session_id': 'NoopDirect' is not a "
        "session id (a number); MITuna's load_job -s (solvers) is --solvers in Tuna"
    )


def test_a_session_given_twice_is_refused_not_overridden(runner):
    r = runner.invoke(main, ["load_jobs", "-t", "few", "--session_id", "2", "-s", "5"])
    assert r.exit_code == 2, r.output
    assert r.output.splitlines()[-1] == (
        "Error: Invalid value for '-s' / '--session' / '--session_id': the session is given "
        "twice (2, 5); give it once. MITuna's load_job -s (solvers) is --solvers in Tuna"
    )


BIG = "99999999999999999999"


@pytest.mark.parametrize(
    "args",
    [
        ["load_jobs", "-t", "x", "-s", BIG],
        ["load_jobs", "-t", "x", "-s", "1", "--priority", "40000"],
        ["export_db", "-s", "1", "-f", "--golden_v", BIG],
        ["update_golden", "-s", "1", "--golden_v", BIG],
        ["session", "create", "--arch", "gfx90a", "--backend", "noop", "--num-cu", "3000000000"],
        ["machine", "add", "h", "--num-cu", BIG],
        ["go_fish", "-s", "1", "--compile", "--local", "--claim-batch", BIG],
        ["worker", "-s", "1", "--phase", "compile", "--claim-batch", BIG],
        ["worker", "-s", "1", "--phase", "compile", "--gpu", BIG],
        ["worker", "-s", "1", "--phase", "compile", "--machine", BIG],
        ["load_jobs", "-t", "x", "-s", "1", "--min-trials", BIG],
        ["search", "create", "-s", "1", "--strategy", "random", "--config", BIG],
    ],
    ids=lambda a: " ".join(a[:2]) + " " + a[-2],
)
def test_integers_past_their_column_are_refused_in_one_line(runner, args):
    """One range per column type, checked before the database sees it: the same answer on
    SQLite and MariaDB (SQLite took --num-cu 3000000000, MariaDB refused it; both raised
    tracebacks past 64 bits)."""
    r = runner.invoke(main, args)
    assert r.exit_code == 2, r.output
    assert (
        "Traceback" not in r.output and r.exception is None or isinstance(r.exception, SystemExit)
    )
    assert "is not in the range" in r.output.splitlines()[-1], r.output
