"""Running fin: every way it can fail is a FinError saying what and where, never a traceback."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.backends.miopen.recorded import FAKE_FIN, script
from tuna.backends.miopen.runner import DEFAULT_FIN, FinCommand, FinError, run_fin

JOBS = [{"steps": ["get_solvers"]}]
WRITE_OUT = 'out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done\n'


def run(tmp_path: Path, fin: str, *, timeout: float = 30, jobs=JOBS) -> list[dict]:
    return run_fin(
        FinCommand.from_setting(fin),
        jobs,
        workdir=tmp_path / "work",
        env={"PATH": "/usr/bin:/bin"},
        timeout_s=timeout,
        what="get_solvers for session 1",
    )


def test_fin_command_is_a_path_or_a_command_line(tmp_path):
    path = script(tmp_path / "my fin", "exit 0\n")
    assert FinCommand.from_setting(path).argv == (path,)  # a file, spaces and all
    assert FinCommand.from_setting("python3 -m x").argv == ("python3", "-m", "x")
    assert FinCommand.from_setting(None).argv == (DEFAULT_FIN,)
    assert FinCommand.from_setting("  ").argv == (DEFAULT_FIN,)
    with pytest.raises(FinError, match="neither a file nor a command line"):
        FinCommand.from_setting('python3 "unclosed')


def test_output_of_the_fake_fin_is_read(tmp_path):
    (job,) = run(tmp_path, FAKE_FIN)
    assert len(job["all_solvers"]) > 100 and job["input"] == JOBS[0]
    inp = json.loads((tmp_path / "work" / "input.json").read_text())
    assert inp == JOBS


def test_fin_not_found(tmp_path):
    with pytest.raises(FinError, match=r"get_solvers for session 1: cannot start fin `/nope/fin`"
                       r".*set FIN_PATH"):  # fmt: skip
        run(tmp_path, "/nope/fin")


def test_non_zero_exit_shows_the_end_of_fins_log(tmp_path):
    fin = script(tmp_path / "fin", "echo 'MIOpen Error: bad arch gfx000' >&2\nexit 3\n")
    with pytest.raises(FinError) as e:
        run(tmp_path, fin)
    message = str(e.value)
    assert message.startswith("get_solvers for session 1: fin exited with status 3;")
    assert f"input {tmp_path / 'work' / 'input.json'}" in message
    assert f"log {tmp_path / 'work' / 'fin.log'}" in message
    assert message.endswith("MIOpen Error: bad arch gfx000")


def test_killed_by_a_signal(tmp_path):
    fin = script(tmp_path / "fin", "kill -SEGV $$\n")
    with pytest.raises(FinError, match="fin was killed by SIGSEGV"):
        run(tmp_path, fin)


def test_time_limit_kills_fin(tmp_path):
    fin = script(tmp_path / "fin", "sleep 30 &\nwait\n")
    started = time.monotonic()
    with pytest.raises(
        FinError, match=r"fin timed out after 0.5 s and was killed \(FIN_TIMEOUT_S\)"
    ):
        run(tmp_path, fin, timeout=0.5)
    assert time.monotonic() - started < 10


def test_exit_zero_without_an_output_file(tmp_path):
    # what fin itself does when its arguments are wrong: usage, exit status 0
    fin = script(tmp_path / "fin", "echo Usage\nexit 0\n")
    with pytest.raises(FinError, match=r"fin exited 0 but wrote no output file .*output\.json"):
        run(tmp_path, fin)


def test_malformed_output(tmp_path):
    fin = script(tmp_path / "fin", WRITE_OUT + 'printf "[{\\"process_env\\": [" >"$out"\n')
    with pytest.raises(FinError, match=r"fin's output .*output\.json is not JSON"):
        run(tmp_path, fin)


def test_output_not_shaped_as_fin_writes_it(tmp_path):
    fin = script(tmp_path / "fin", WRITE_OUT + 'echo \'[{"all_solvers": []}]\' >"$out"\n')
    with pytest.raises(FinError, match=r"get_solvers for session 1: .*element 0 is not fin's"):
        run(tmp_path, fin)


def test_output_with_the_wrong_number_of_jobs(tmp_path):
    fin = script(tmp_path / "fin", WRITE_OUT + 'echo \'[{"process_env": []}]\' >"$out"\n')
    with pytest.raises(FinError, match=r"has 0 job result\(s\) for 1 input job\(s\)"):
        run(tmp_path, fin)


def test_fin_does_not_outlive_an_interrupted_wait(tmp_path, monkeypatch):
    started: list[subprocess.Popen[bytes]] = []
    real_wait = subprocess.Popen.wait

    def wait(self, timeout=None):
        started.append(self)
        if timeout is not None:  # the worker's time limit fires while fin runs
            raise KeyboardInterrupt
        return real_wait(self)

    monkeypatch.setattr(subprocess.Popen, "wait", wait)
    fin = script(tmp_path / "fin", "sleep 30\n")
    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, fin)
    assert started and started[0].returncode is not None  # killed and reaped
