from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.searches.helpers import bench_session, new_search
from tests.support.seed import make_session
from tests.support.wait import wait_until
from tuna.backends.base import Owns
from tuna.catalog.importer import import_configs, read_lines
from tuna.db.enums import JobState, JobStep
from tuna.db.models import Job
from tuna.errors import TunaError
from tuna.fleet.local import LocalWorkers, Task, evaluation_workers, run_local, worker_environment
from tuna.jobs import job_counts
from tuna.jobs.load import load_jobs
from tuna.sessions import SessionSpec, create_session

LINES = "\n".join(
    f"MIOpenDriver conv -n 2 -c {c} -H 8 -W 8 -k 8 -y {f} -x {f} -F 1"
    for c in (4, 8, 16)
    for f in (1, 3)
)


def setup(db, env=None):
    import_configs(db, read_lines(LINES), tag="net")
    sid = create_session(
        db, SessionSpec(arch="cpu", num_cu=2, backend="noop", environment=env or {})
    ).id
    load_jobs(db, sid, step="perf", tag="net")
    return sid


def test_compile_then_run_perf_drains_the_session_with_logs_per_worker(sqlite_url, tmp_path):
    from tuna.db import open_database

    db = open_database(sqlite_url)
    sid = setup(db)
    seen = []
    report = run_local(
        db,
        sid,
        Task.COMPILE,
        workers=2,
        log_dir=tmp_path / "logs",
        db_url=sqlite_url,
        interval=0.2,
        on_progress=seen.append,
    )
    assert report.drained and report.exit_codes == [0, 0]
    total = report.final.counts.total
    assert report.final.counts.by_state[JobState.COMPILED] == total == report.final.finished
    assert seen and seen[0].remaining + seen[0].finished == total
    assert sorted(p.name for p in report.logs) == ["worker-0.log", "worker-1.log"]
    assert all(p.parts[-6:-4] == ("compile", "cpu") for p in report.logs)
    assert {p.parts[-3] for p in report.logs} == {f"session-{sid}"}
    report = run_local(
        db,
        sid,
        Task.RUN_PERF,
        workers=1,
        log_dir=tmp_path / "logs",
        db_url=sqlite_url,
        interval=0.2,
    )
    assert report.drained
    assert job_counts(db, sid).by_state[JobState.EVALUATED] == total
    db.dispose()


def test_go_fish_evaluates_the_step_asked_for_and_leaves_the_other_steps_jobs_compiled(
    db, tmp_path
):
    """Issue #24: --run_perf and --run_find each refused a session with compiled jobs of both
    steps. Each evaluates its own step's jobs, exits 0, and the other's stay compiled."""
    sid = setup(db)
    load_jobs(db, sid, step="find", tag="net")
    url = db.url.render_as_string(hide_password=False)
    compiled = run_local(
        db, sid, Task.COMPILE, workers=1, log_dir=tmp_path, db_url=url, interval=0.2
    )
    assert compiled.drained and compiled.exit_codes == [0]

    def states() -> dict[tuple[str, str], int]:
        with db.session() as s:
            rows = s.execute(select(Job.step, Job.state)).all()
        out: dict[tuple[str, str], int] = {}
        for step, state in rows:
            key = (JobStep(step).value, JobState(state).value)
            out[key] = out.get(key, 0) + 1
        return out

    n = states()[("perf", "compiled")]
    assert n > 0 and states() == {("perf", "compiled"): n, ("find", "compiled"): n}
    env = dict(os.environ, TUNA_DB_URL=url, TUNA_LOG_DIR=str(tmp_path / "logs"))
    for flag, done in (("--run_perf", "perf"), ("--run_find", "find")):
        fish = subprocess.run(
            [sys.executable, "-m", "tuna.cli", "go_fish", "--session", str(sid), flag, "-w", "1"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert fish.returncode == 0, fish.stdout + fish.stderr
        if done == "perf":
            assert states() == {("perf", "evaluated"): n, ("find", "compiled"): n}
    assert states() == {("perf", "evaluated"): n, ("find", "evaluated"): n}


def test_find_enforce_environment():
    assert worker_environment(None) == {}
    assert worker_environment(3) == {"MIOPEN_FIND_ENFORCE": "3"}
    assert worker_environment(4) == {"MIOPEN_FIND_ENFORCE": "4", "MIOPEN_DISABLE_CACHE": "1"}
    with pytest.raises(TunaError):
        worker_environment(2)


def start_go_fish(url, log_dir, session, *args, ignore_sigint=False):
    """go_fish in a process group of its own, as a shell starts a job; with
    ``ignore_sigint``, as a non-interactive shell starts one in the background (``&``)."""
    env = dict(os.environ, TUNA_DB_URL=url, TUNA_LOG_DIR=str(log_dir))

    def preexec():
        os.setpgrp()
        if ignore_sigint:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    return subprocess.Popen(
        [sys.executable, "-m", "tuna.cli", "go_fish", "--session", str(session), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=preexec,
    )


def stopped_cleanly(db, sid, proc, sig, *, to_group=False):
    """Send ``sig`` once workers hold jobs; go_fish must stop them and leave none leased."""
    wait_until(
        lambda: job_counts(db, sid).by_state[JobState.COMPILE_START] > 0, "workers to hold jobs"
    )
    if to_group:  # the terminal's Ctrl-C: the whole foreground process group
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    out, _ = proc.communicate(timeout=90)
    text = out.decode()
    assert proc.returncode == 0, text
    assert f"{signal.Signals(sig).name}: interrupted" in text
    with db.session() as s:
        jobs = s.execute(select(Job.state, Job.retries, Job.reason).where(Job.session == sid)).all()
    states = [j.state for j in jobs]
    assert JobState.COMPILE_START not in states  # nothing left leased: no orphaned worker
    assert JobState.NEW in states  # the rest was handed back, not lost
    return jobs, text


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_the_workers_and_hands_their_jobs_back(sqlite_url, tmp_path, sig):
    from tuna.db import open_database

    db = open_database(sqlite_url)
    sid = setup(db, env={"NOOP_SLEEP_S": "0.5"})
    proc = start_go_fish(sqlite_url, tmp_path / "logs", sid, "--compile", "-w", "2")
    stopped_cleanly(db, sid, proc, sig)
    db.dispose()


def test_a_background_go_fish_with_sigint_ignored_is_still_interruptible(sqlite_url, tmp_path):
    from tuna.db import open_database

    db = open_database(sqlite_url)
    sid = setup(db, env={"NOOP_SLEEP_S": "0.5"})
    proc = start_go_fish(
        sqlite_url, tmp_path / "logs", sid, "--compile", "-w", "2", ignore_sigint=True
    )
    try:
        stopped_cleanly(db, sid, proc, signal.SIGINT)
    finally:
        proc.kill()
    db.dispose()


def test_ctrl_c_at_the_terminal_lets_the_compiler_finish_and_charges_nothing(sqlite_url, tmp_path):
    """The terminal sends SIGINT to the whole foreground group: the workers and the
    compilers they run must not get it; go_fish stops the workers, each finishes its job."""
    from tuna.db import open_database

    slow_cc = tmp_path / "slow-cc"
    started = tmp_path / "cc-started"
    # slow to compile (-c), not to link: cpuconv calls the compiler for both (toolchain.py)
    slow_cc.write_text(
        f'#!/bin/sh\ncase " $* " in *" -c "*) touch {started}; sleep 1;; esac\nexec cc "$@"\n'
    )
    slow_cc.chmod(0o755)
    db = open_database(sqlite_url)
    import_configs(db, read_lines(LINES), tag="net")
    sid = create_session(
        db,
        SessionSpec(
            arch="cpu",
            num_cu=2,
            backend="cpuconv",
            environment={"CPUCONV_CC": str(slow_cc), "CPUCONV_MAX_CANDIDATES": "1"},
        ),
    ).id
    load_jobs(db, sid, step="perf", tag="net")
    proc = start_go_fish(sqlite_url, tmp_path / "logs", sid, "--compile", "-w", "2")
    wait_until(started.exists, "a compiler to start")  # the signal lands mid-compile
    jobs, text = stopped_cleanly(db, sid, proc, signal.SIGINT, to_group=True)
    assert [j for j in jobs if j.retries or j.reason] == [], text
    assert JobState.COMPILED in [j.state for j in jobs]  # the jobs in flight were finished


def test_cpuconv_compiled_by_one_set_of_workers_is_evaluated_by_another(db, tmp_path):
    """Real kernels: compile workers build them into the kernel cache, separate eval workers
    load them from the database, verify and time them; every job ends with its results."""
    from tuna.db.models import FindDb, JobKernel, PerfDb

    lines = (
        "MIOpenDriver conv -n 1 -c 8 -H 10 -W 10 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1\n"
        "MIOpenDriver conv -n 1 -c 8 -H 10 -W 10 -k 16 -y 1 -x 1 -F 1"
    )
    import_configs(db, read_lines(lines), tag="small")
    sid = create_session(
        db,
        SessionSpec(
            arch="cpu", num_cu=2, backend="cpuconv", environment={"CPUCONV_MAX_CANDIDATES": "2"}
        ),
    ).id
    loaded = load_jobs(db, sid, step="perf", tag="small")
    url = db.url.render_as_string(hide_password=False)
    compiled = run_local(
        db, sid, Task.COMPILE, workers=2, log_dir=tmp_path, db_url=url, interval=0.3
    )
    assert compiled.drained and compiled.exit_codes == [0, 0]
    evaluated = run_local(
        db, sid, Task.RUN_PERF, workers=2, log_dir=tmp_path, db_url=url, interval=0.3
    )
    # a cpuconv evaluation owns the machine: one evaluation worker, the second would only wait
    assert evaluated.drained and evaluated.exit_codes == [0]
    assert any("1 evaluation worker(s), not 2" in e for e in evaluated.events), evaluated.events
    counts = job_counts(db, sid).by_state
    assert counts[JobState.EVALUATED] == loaded.inserted, counts
    with db.session() as s:
        jobs = s.scalars(select(Job).where(Job.session == sid)).all()
        find = s.scalars(select(FindDb).where(FindDb.session == sid)).all()
        perf = s.scalars(select(PerfDb).where(PerfDb.session == sid)).all()
        linked = set(s.scalars(select(JobKernel.job)))
    assert len(find) == len(jobs)  # one find row per (config, solver)
    assert all(f.time_ms > 0 and f.workspace >= 0 for f in find)
    assert perf and all(p.params for p in perf)  # tunable solvers got their best params
    assert {j.id for j in jobs} <= linked  # every job's kernels are in the cache


def test_one_evaluation_worker_per_device_an_evaluation_owns_and_compiles_side_by_side(
    db, tmp_path
):
    assert evaluation_workers(Owns.MACHINE, 8) == 1
    assert evaluation_workers(Owns.DEVICE, 8) == 1  # local workers name no GPU: one lock
    assert evaluation_workers(Owns.NOTHING, 8) == 8
    import_configs(db, read_lines(LINES), tag="net")
    cpu = make_session(db, arch="cpu", num_cu=2, backend="cpuconv")
    noop = make_session(db, arch="cpu", num_cu=2, backend="noop")

    def workers(session: int, task: Task) -> int:
        return len(
            LocalWorkers(db, [(session, task)], workers=4, log_dir=tmp_path, db_url="x").plans
        )

    assert workers(cpu, Task.COMPILE) == 4
    assert workers(cpu, Task.RUN_PERF) == workers(cpu, Task.RUN_FIND) == 1
    assert workers(noop, Task.RUN_PERF) == 4  # the noop backend's evaluations own nothing


def test_a_search_counts_its_builds_and_runs_as_done_this_run(sqlite_url, tmp_path):
    from tuna.cli.fish_progress import progress_line
    from tuna.db import open_database

    db = open_database(sqlite_url)
    session = bench_session(db)
    new_search(db, session)  # 2 builds, then 6 runs queued as the builds are stored
    report = run_local(
        db, session, Task.SEARCH, workers=1, log_dir=tmp_path / "logs", db_url=sqlite_url,
        interval=0.1,
    )  # fmt: skip
    assert report.drained and report.exit_codes == [0]
    assert report.final.finished == 8  # the runs were not there when the run started
    assert "; 8 done this run, 0 build(s) and 0 run(s) to go, " in progress_line(
        report.final, Task.SEARCH
    )
    db.dispose()


def test_local_workers_get_the_database_url_in_a_private_file_not_their_environment(
    db, tmp_path, monkeypatch
):
    """The URL with its password must not be readable in /proc/PID/environ (``ps eww``): it
    goes in a 0600 file named by TUNA_DB_URL_FILE, and MITuna's TUNA_DB_* variables stay
    out of the workers' environment."""
    import tuna.fleet.local as local

    sid = setup(db)
    url = "sqlite:///" + str(tmp_path / "x.db")
    monkeypatch.setenv("TUNA_DB_URL", "mysql+pymysql://u:s3cret-url@head/tuna")
    monkeypatch.setenv("TUNA_DB_USER_PASSWORD", "s3cret-var")
    # a stand-in for the worker program that lives long enough to be looked at
    monkeypatch.setattr(
        local, "LOCAL_PROGRAM", (sys.executable, "-c", "import time; time.sleep(60)")
    )
    workers = LocalWorkers(db, [(sid, Task.COMPILE)], workers=1, log_dir=tmp_path, db_url=url)
    try:
        workers.start(lambda _text: None)
        proc = Path(f"/proc/{workers.procs[0].pid}")
        # until the child has exec'd the stand-in, /proc shows the environment it forked with
        wait_until(lambda: b"time.sleep(60)" in (proc / "cmdline").read_bytes(), "the exec")
        environ = (proc / "environ").read_bytes().split(b"\0")
        env = dict(e.decode().partition("=")[::2] for e in environ if e)
        assert "TUNA_DB_URL" not in env and "TUNA_DB_USER_PASSWORD" not in env
        assert b"s3cret" not in b"\0".join(environ)
        handed = env["TUNA_DB_URL_FILE"]
        assert Path(handed).read_text().strip() == url
        assert os.stat(handed).st_mode & 0o777 == 0o600
    finally:
        workers.close()
    assert not os.path.exists(handed)
