"""``tuna solvers`` and ``tuna applicability``, on a miopen session with the FAKE fin."""

from __future__ import annotations

import sys

import pytest

from tuna.cli import main

FAKE_FIN = f"{sys.executable} -m tuna.backends.miopen.fake_fin"
LINES = """\
./bin/MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 2
./bin/MIOpenDriver conv -n 4 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1
"""


@pytest.fixture
def session(runner, tmp_path):
    env = ["--env", f"FIN_PATH={FAKE_FIN}", "--env", f"FIN_SCRATCH_DIR={tmp_path / 'scratch'}"]
    created = runner.invoke(
        main,
        ["session", "create", "--arch", "gfx906", "--num-cu", "60", "--backend", "miopen", *env],
    )
    assert created.exit_code == 0, created.output
    assert created.output.startswith("session 1: gfx906 60 CUs, backend miopen")
    return 1


def test_solvers_update_and_list(runner, session):
    result = runner.invoke(main, ["solvers", "update", "--session", "1"])
    assert result.exit_code == 0, result.output
    assert result.output == (
        "session 1, backend miopen: 104 solvers reported by the library build\nunchanged 104\n"
    )
    listed = runner.invoke(main, ["solvers", "list", "--session", "1"])
    assert listed.exit_code == 0
    (row,) = [line for line in listed.output.splitlines() if "ConvAsm1x1UV2" in line]
    cells = row.split()  # piped: plain columns
    assert cells[1:] == ["miopen", "ConvAsm1x1UV2", "3", "yes", "Direct", "yes"]


def test_applicability_update(runner, session, tmp_path):
    configs = tmp_path / "net.txt"
    configs.write_text(LINES)
    assert runner.invoke(main, ["import_configs", "-t", "net", "-f", str(configs)]).exit_code == 0
    result = runner.invoke(main, ["applicability", "update", "--session", "1", "-t", "net"])
    assert result.exit_code == 0, result.output
    assert result.output == (
        "session 1, backend miopen (asked the library build): 2 config(s), 2 answered\n"
        "applicable (config, solver) pairs        1\n"
        "not applicable (config, solver) pairs  207\n"
        "configs without an answer                0\n"
    )
    load = runner.invoke(main, ["load_jobs", "-t", "net", "--session", "1", "--step", "find"])
    assert load.exit_code == 0, load.output
    assert "queued per solver: ConvAsm1x1UV2 1" in load.output


def test_errors_say_what_and_where(runner, session, tmp_path):
    missing = runner.invoke(main, ["solvers", "update", "--session", "9"])
    assert missing.exit_code == 1
    assert missing.output == (
        "Error: session 9 does not exist; `tuna session list` shows the sessions\n"
    )
    runner.invoke(
        main,
        ["session", "create", "--arch", "gfx906", "--num-cu", "60", "--backend", "miopen",
         "--env", "FIN_PATH=/nope/fin", "--env", f"FIN_SCRATCH_DIR={tmp_path / 'scratch'}"],
    )  # fmt: skip
    broken = runner.invoke(main, ["solvers", "update", "--session", "2"])
    assert broken.exit_code == 1
    assert broken.output.startswith(
        "Error: get_solvers for session 2: cannot start fin `/nope/fin`"
    )
    assert "Traceback" not in broken.output


@pytest.mark.parametrize(
    "path", [["solvers"], ["solvers", "update"], ["solvers", "list"], ["applicability"],
             ["applicability", "update"]]
)  # fmt: skip
def test_help_has_an_example(runner, path):
    result = runner.invoke(main, [*path, "--help"])
    assert result.exit_code == 0 and "Example" in result.output
