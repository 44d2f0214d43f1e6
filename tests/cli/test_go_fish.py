"""``go_fish`` as people type it (tuna/cli/go_fish.py): flags, MITuna's spelling, output."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from tests.fleet.sshd import mute_port_fixture  # noqa: F401  (the mute_port fixture)
from tuna.cli import main

LINES = "\n".join(
    f"MIOpenDriver conv -n 2 -c {c} -H 8 -W 8 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1" for c in (4, 8, 16)
)


def noop_session(runner, tmp_path, *extra: str) -> None:
    (tmp_path / "net.txt").write_text(LINES)
    for args in (
        ["import_configs", "-t", "net", "-f", str(tmp_path / "net.txt")],
        ["session", "create", "--arch", "cpu", "--num-cu", "2", "--backend", "noop", *extra],
        ["load_jobs", "-t", "net", "--session", "1", "--step", "perf"],
    ):
        r = runner.invoke(main, args)
        assert r.exit_code == 0, r.output


def go_fish(runner, *args: str):
    return runner.invoke(main, ["go_fish", *args], catch_exceptions=False)


def test_compile_and_run_perf_together_run_both_phases_in_order(runner, tmp_path):
    noop_session(runner, tmp_path)
    r = go_fish(runner, "--session", "1", "--run_perf", "--compile", "--local", "-w", "1")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    compiled = next(i for i, ln in enumerate(lines) if ln.startswith("go_fish compile,"))
    evaluated = next(i for i, ln in enumerate(lines) if ln.startswith("go_fish run_perf,"))
    assert compiled < evaluated
    assert "  this run: evaluated 9" in lines
    assert "  session 1 now: evaluated 9" in lines


def test_the_summary_counts_what_this_run_did(runner, tmp_path):
    noop_session(runner, tmp_path)
    assert go_fish(runner, "--session", "1", "--compile", "--local", "-w", "1").exit_code == 0
    r = go_fish(runner, "--session", "1", "--compile", "--local", "-w", "1")
    assert r.exit_code == 0, r.output
    assert "nothing to do: no job of this phase is ready or in flight" in r.output
    assert "with 0 local worker(s); 0 job(s) left the phase" in r.output
    assert "  this run: nothing" in r.output.splitlines()
    assert "  session 1 now: compiled 9" in r.output.splitlines()


def test_mituna_spelling_library_fin_steps_session_id_and_machine_lists(runner, tmp_path):
    noop_session(runner, tmp_path)
    r = go_fish(
        runner,
        "noop",
        "--fin_steps",
        "miopen_perf_compile,miopen_perf_eval",
        "--session_id",
        "1",
        "--local",
        "-w",
        "1",
    )
    assert r.exit_code == 0, r.output
    assert "go_fish compile, session 1: drained" in r.output
    assert "go_fish run_perf, session 1: drained" in r.output
    r = go_fish(runner, "miopen", "--session_id", "1", "--compile", "--local")
    assert r.exit_code == 2 and "session 1 uses the noop backend, not miopen" in r.output
    r = go_fish(runner, "--fin_steps", "get_solvers", "--session", "1")
    assert r.exit_code == 1
    assert "--fin_steps get_solvers: go_fish runs miopen_perf_compile" in r.output
    r = go_fish(runner, "--session", "1", "--run_perf", "--run_find")
    assert r.exit_code == 1 and "--run_perf and --run_find together" in r.output
    # -m 1,2 is two machines, as -m 1 -m 2 is; neither is registered here
    r = go_fish(runner, "--session", "1", "--compile", "-m", "1,2")
    assert r.exit_code == 2 and "no available machine matches -a/-n/-m" in r.output
    r = go_fish(runner, "--session", "1", "--compile", "-m", "1,x")
    assert r.exit_code == 2 and "machine ids are numbers, e.g. -m 1,2" in r.output


def test_progress_off_a_terminal_is_one_line_per_interval(runner, tmp_path):
    noop_session(runner, tmp_path, "--env", "NOOP_SLEEP_S=0.1")
    r = go_fish(
        runner, "--session", "1", "--compile", "--local", "-w", "1", "--progress-every", "0.2"
    )
    assert r.exit_code == 0, r.output
    progress = [ln for ln in r.output.splitlines() if ln.startswith("go_fish compile, session 1 [")]
    assert len(progress) >= 2, r.output  # nine jobs of 0.1 s, a line every 0.2 s
    assert "to go" in progress[0] and "jobs/s, ETA" in progress[0]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_machines_are_one_line_each_even_on_one_address(runner, tmp_path, mute_port):
    """A port that never speaks SSH and a closed port on the same address: each machine is
    tried and named by its port, in one line, with no traceback. (The mute port is waited on
    twice, by the tidy-up and the start: TUNA_SSH_CONNECT_TIMEOUT keeps that at 2 x 1 s.)"""
    noop_session(runner, tmp_path, "--docker-image", "tuna-worker:none")
    closed = _closed_port()
    for port in (mute_port, closed):
        r = runner.invoke(main, ["machine", "add", "127.0.0.1", "--port", str(port)])
        assert r.exit_code == 0, r.output
    env = dict(
        os.environ,
        TUNA_DATA_DIR=str(tmp_path / "data"),
        TUNA_WORKER_DB_URL="mysql+pymysql://tuna:pw@10.255.0.1/tuna",
        TUNA_KNOWN_HOSTS=str(tmp_path / "known_hosts"),
        COLUMNS="200",
        TUNA_SSH_CONNECT_TIMEOUT="1",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tuna.cli", "go_fish", "--session", "1", "--compile"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Traceback" not in out and "Errno" not in out and "No existing session" not in out
    assert (
        f"127.0.0.1:{mute_port}: could not start workers: port {mute_port} accepted the "
        "connection but no SSH server answered within 1 s"
    ) in out.splitlines()
    assert (
        f"127.0.0.1:{closed}: could not start workers: cannot connect to port {closed}: "
        "Connection refused"
    ) in out.splitlines()
    assert "Error: go_fish compile: no machine could start a worker (see above)" in out


def test_a_pace_setting_that_is_not_seconds_is_refused_before_anything_starts(runner, tmp_path):
    noop_session(runner, tmp_path)
    r = runner.invoke(
        main,
        ["go_fish", "--session", "1", "--compile", "--local"],
        env={"TUNA_FLEET_DRAIN_GRACE": "soon"},
    )
    assert r.exit_code == 1, r.output
    said = "TUNA_FLEET_DRAIN_GRACE='soon': expected a number of seconds above 0, e.g. 30"
    assert said in r.output
    assert "Traceback" not in r.output


def test_more_workers_than_anyone_could_start_is_refused_in_one_line(runner, tmp_path):
    noop_session(runner, tmp_path)
    r = runner.invoke(
        main, ["go_fish", "--session", "1", "--compile", "--local", "-w", "99999999999"]
    )
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "99999999999 is not in the range 1<=x<=" in r.output


def test_no_more_local_workers_start_than_there_are_jobs(runner, tmp_path):
    (tmp_path / "three.txt").write_text(LINES.splitlines()[0])  # 3 solvers: 3 jobs
    for args in (
        ["import_configs", "-t", "one", "-f", str(tmp_path / "three.txt")],
        ["session", "create", "--arch", "cpu", "--num-cu", "2", "--backend", "noop"],
        ["load_jobs", "-t", "one", "--session", "1", "--step", "perf"],
    ):
        assert runner.invoke(main, args).exit_code == 0
    r = go_fish(runner, "--session", "1", "--compile", "--local", "-w", "8")
    assert r.exit_code == 0, r.output
    assert "3 job(s) to work: 3 local worker(s), not 8" in r.output
    assert "with 3 local worker(s)" in r.output


def test_a_run_whose_every_job_errored_exits_non_zero_with_a_summary(runner, tmp_path):
    noop_session(runner, tmp_path, "--env", "NOOP_FAIL=boom")
    r = go_fish(runner, "--session", "1", "--compile", "--local", "-w", "2", "--max-retries", "0")
    assert r.exit_code == 1, r.output
    assert "  this run: errored 9" in r.output.splitlines()
    assert "every job of this run errored (9); see the failure reasons above" in r.output


def test_two_runs_of_one_session_and_two_sessions_log_to_their_own_files(runner, tmp_path):
    noop_session(runner, tmp_path)
    r = runner.invoke(
        main, ["session", "create", "--arch", "cpu", "--num-cu", "2", "--backend", "noop"]
    )
    assert r.exit_code == 0
    assert (
        runner.invoke(
            main, ["load_jobs", "-t", "net", "--session", "2", "--step", "perf"]
        ).exit_code
        == 0
    )
    (tmp_path / "more.txt").write_text(LINES.replace("-H 8 -W 8", "-H 9 -W 9"))
    assert (
        runner.invoke(
            main, ["import_configs", "-t", "more", "-f", str(tmp_path / "more.txt")]
        ).exit_code
        == 0
    )
    logs = tmp_path / "logs"
    for session in ("1", "2", "1"):
        args = ("--session", session, "--compile", "--local", "-w", "1", "--log-dir", str(logs))
        assert go_fish(runner, *args).exit_code == 0
        load = ["load_jobs", "-t", "more", "--session", "1", "--step", "perf"]
        assert runner.invoke(main, load).exit_code == 0  # more work for the second run
    files = sorted(p.relative_to(logs) for p in logs.rglob("*.log"))
    assert len(files) == 3, files
    assert [f.parts[:2] for f in files] == [("compile", "cpu")] * 3
    assert sorted(f.parts[3] for f in files) == ["session-1", "session-1", "session-2"]
    assert len({f.parent for f in files}) == 3  # each run a folder of its own


def test_two_go_fish_on_one_session_each_count_what_their_own_workers_did(runner, tmp_path):
    """Both printed "this run: compiled 9" (the session's growth) where their workers did,
    say, 5 and 4: each counts its own workers' jobs, and logs to its own folder."""
    noop_session(runner, tmp_path, "--env", "NOOP_SLEEP_S=1")  # 9 s of work: both start
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
    cmd = [sys.executable, "-m", "tuna.cli", "go_fish", "-s", "1", "--compile", "--local"]
    runs = [
        subprocess.Popen(
            [*cmd, "-w", "1", "--log-dir", str(tmp_path / "logs")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0] for p in runs]
    did = []
    for out in outs:
        line = next(ln for ln in out.splitlines() if ln.startswith("  this run: "))
        did.append(0 if line.endswith("nothing") else int(line.rsplit(" ", 1)[1]))
    assert sum(did) == 9 and all(did), outs
    assert len(list((tmp_path / "logs").rglob("worker-0.log"))) == 2
