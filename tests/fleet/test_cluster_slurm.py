"""go_fish --slurm on the test cluster's Slurm: slurmctld on the head, a slurmd per host.

Workers run from this checkout's install (no Docker), one job array per phase. End to end
with the noop and cpuconv backends, then Ctrl-C and the faults the issue names, each with no
job lost and none done twice: one task scancelled mid-job, a node set DOWN under its tasks,
slurmctld restarted, go_fish SIGKILLed and run again.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.engine import make_url

from tests.fleet.fishing import fish_env, go_fish, start_go_fish, states, wait_for
from tests.support.seed import UNIVERSAL, seed
from tuna.catalog.importer import import_configs
from tuna.catalog.parsing import read_lines
from tuna.db.enums import JobState
from tuna.db.models import FindDb, JobKernel, PerfDb, TuningSession
from tuna.jobs.load import load_jobs
from tuna.sessions import SessionSpec, create_session

pytestmark = [pytest.mark.cluster, pytest.mark.slurm]

S = JobState
NOOP_ARCH = "gfx-noop"
PARTITIONS = ("--partition", "compile=cpu", "--partition", "eval=gpu")


@pytest.fixture
def slurm(slurm_cluster):
    """The cluster's Slurm (the tests' own database in its URLs); after the test, its nodes
    back in service (a test may set one DOWN) and no job of the test left in the queue."""
    yield slurm_cluster
    for h in slurm_cluster.hosts:
        scontrol(slurm_cluster, "update", f"nodename={h.name}", "state=resume", check=False)
    # A task that ended is listed COMPLETING while Slurm cleans up after it (seen once in CI,
    # '2 COMPLETING tuna-w3', right after a test): give that up to 30 s to clear; a task
    # still pending or running, or completing past that, is left behind.
    left, deadline = squeue(slurm_cluster), time.monotonic() + 30
    while (
        left
        and time.monotonic() < deadline
        and all(line.split()[1] == "COMPLETING" for line in left.splitlines())
    ):
        time.sleep(0.5)
        left = squeue(slurm_cluster)
    if left:
        slurm_run(slurm_cluster, "scancel", "--me", check=False)
    assert not left, f"the test left Slurm jobs behind:\n{left}"


def slurm_run(cluster, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        env=fish_env(cluster, Path("/tmp")),
        capture_output=True,
        text=True,
        timeout=60,
        check=check,
    )


def scontrol(cluster, *args: str, check: bool = True) -> str:
    return slurm_run(cluster, "scontrol", *args, check=check).stdout


def squeue(cluster) -> str:
    """Tasks of Tuna's arrays still pending or running: ``array_task state node`` lines."""
    return slurm_run(cluster, "squeue", "-h", "-r", "--me", "-o", "%i %T %N").stdout.strip()


def running_tasks(cluster) -> list[tuple[str, str]]:
    """(task id, node) of every running task."""
    return [
        (cells[0], cells[2])
        for line in squeue(cluster).splitlines()
        if len(cells := line.split()) == 3 and cells[1] == "RUNNING"
    ]


def noop_session(db, configs: int, sleep_s: float | None = None) -> object:
    sd = seed(db, configs=configs, solvers=UNIVERSAL)
    if sleep_s is not None:
        with db.session() as s:
            s.execute(
                update(TuningSession)
                .where(TuningSession.id == sd.session)
                .values(environment={"NOOP_SLEEP_S": str(sleep_s)})
            )
    return sd


def kernels_per_job(db, jobs) -> Counter[int]:
    with db.session() as s:
        return Counter(s.scalars(select(JobKernel.job).where(JobKernel.job.in_(jobs))).all())


def duplicates(db, model, session) -> list:
    with db.session() as s:
        return list(
            s.execute(
                select(model.config, model.solver)
                .where(model.session == session)
                .group_by(model.config, model.solver)
                .having(func.count() > 1)
            ).all()
        )


def results(db, model, session) -> int:
    with db.session() as s:
        return s.execute(
            select(func.count()).select_from(model).where(model.session == session)
        ).scalar_one()


def worker_secrets_seen(password: str) -> tuple[int, list[str]]:
    """How many workers of Slurm tasks run, and where one shows the database password (argv,
    environment). Other workers on the machine (other tests' local ones) are not looked at."""
    seen, workers = [], 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes()
            if b"tuna.cli" not in argv or b"worker" not in argv:
                continue
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if not re.search(rb"(^|\0)TUNA_WORKER_NAME=tuna-w\d+/slurm-", environ):
            continue
        workers += 1
        for what, blob in (("argv", argv), ("environment", environ)):
            if password.encode() in blob:
                seen.append(f"pid {proc.name} {what}")
    return workers, seen


# -- the cluster's Slurm (bin/test-cluster) ------------------------------------------------------


def test_every_node_runs_a_task_as_itself_and_hands_out_its_gpus(slurm):
    hosts = slurm_run(slurm, "srun", "-p", "all", "-N", str(len(slurm.hosts)), "hostname")
    assert sorted(hosts.stdout.split()) == sorted(h.name for h in slurm.hosts)
    gpus = slurm_run(
        slurm, "srun", "-p", "gpu", "-n", "2", "--gpus-per-task=1", "-w", slurm.hosts[-1].name,
        "printenv", "CUDA_VISIBLE_DEVICES",
    )  # fmt: skip
    assert sorted(gpus.stdout.split()) == ["0", "1"]  # one stand-in GPU each


# -- end to end ------------------------------------------------------------------------------


def test_a_noop_session_is_compiled_and_evaluated_by_two_chained_arrays(slurm, slurm_db, tmp_path):
    db = slurm_db
    sd = noop_session(db, 8, sleep_s=0.6)
    logs = tmp_path / "logs"
    password = make_url(slurm.worker_db_url).password
    assert password
    out_path = tmp_path / "go_fish.out"
    with out_path.open("w") as out_file:
        proc = start_go_fish(
            slurm,
            logs,
            "--session",
            str(sd.session),
            "--compile",
            "--run_perf",
            "--slurm",
            *PARTITIONS,
            "-w",
            "3",
            output=out_file,
        )
        try:
            # While it runs: no worker shows the password, and --status shows the arrays.
            workers, seen = wait_for(
                lambda: (found := worker_secrets_seen(password))[0] and found,
                "a running worker",
            )
            assert workers and seen == []
            status = go_fish(slurm, tmp_path, "--status", "--slurm")
            status += "\n" + squeue(slurm)
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    out = out_path.read_text()
    assert proc.returncode == 0, out
    assert "Tuna's arrays" in status and re.search(rf"tuna-{sd.session}-(compile|eval)", status)
    assert re.search(r"\d+ (running|pending)", status), status
    arrays = re.findall(r"Slurm array (\d+): 3 (compile|eval) task\(s\) \(([^)]*)\)", out)
    assert [a[1] for a in arrays] == ["compile", "eval"], out
    assert "--cpus-per-task=1" in arrays[0][2] and "--gpus-per-task=1" in arrays[1][2], out
    assert f"after array {arrays[0][0]}" in out, out  # the evaluation chained to the compile
    assert out.count("drained") == 2, out
    assert states(db, sd.session) == {S.EVALUATED: len(sd.jobs)}
    assert duplicates(db, PerfDb, sd.session) == [] and duplicates(db, FindDb, sd.session) == []
    assert results(db, FindDb, sd.session) == len(sd.jobs)
    # Logs where go_fish collects every worker's: <log dir>/<phase>/<arch>/<node>/session-<S>/
    # <run>/slurm-<array>_<task>.log
    for phase, (array, _, _) in zip(("compile", "eval"), arrays, strict=True):
        found = sorted(
            (logs / phase / NOOP_ARCH).glob(f"tuna-w*/session-{sd.session}/*/slurm-{array}_*.log")
        )
        assert len(found) == 3, found
        text = "\n".join(p.read_text() for p in found)
        assert re.search(r"[1-9]\d* done", text), text[-2000:]
        assert password not in text
    assert not (logs / "slurm-runs").exists() or not any((logs / "slurm-runs").iterdir())


def test_a_cpuconv_session_is_tuned_with_exclusive_evaluations(slurm, slurm_db, tmp_path):
    db = slurm_db
    lines = read_lines(
        "./bin/MIOpenDriver conv -n 1 -c 8 -H 8 -W 8 -k 8 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 "
        "-l 1 -j 1 -m conv -g 1 -F 1 -t 1\n"
        "./bin/MIOpenDriver conv -n 1 -c 8 -H 8 -W 8 -k 8 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 "
        "-l 1 -j 1 -m conv -g 1 -F 1 -t 1"
    )
    import_configs(db, lines, tag="slurm", source="test")
    session = create_session(
        db,
        SessionSpec(
            arch="cpu-slurm",
            num_cu=2,
            backend="cpuconv",
            label="slurm e2e",
            environment={"CPUCONV_MAX_CANDIDATES": "2"},
        ),
    )
    loaded = load_jobs(db, session.id, step="perf", tag="slurm", only_tunable=True)
    assert loaded.inserted >= 2
    out = go_fish(
        slurm,
        tmp_path,
        "--session",
        str(session.id),
        "--compile",
        "--run_perf",
        "--slurm",
        "--partition",
        "cpu",
        "-w",
        "2",
    )
    assert re.search(r"2 eval task\(s\) \(--partition=cpu --exclusive\)", out), out
    assert states(db, session.id) == {S.EVALUATED: loaded.inserted}
    assert results(db, PerfDb, session.id) == loaded.inserted


# -- stopping and faults ---------------------------------------------------------------------


def test_ctrl_c_cancels_the_arrays_and_a_rerun_finishes_the_work(slurm, slurm_db, tmp_path):
    db = slurm_db
    sd = noop_session(db, 8, sleep_s=1)
    args = ("--session", str(sd.session), "--compile", "--run_perf", "--slurm", *PARTITIONS)
    proc = start_go_fish(slurm, tmp_path, *args, "-w", "3")
    try:
        wait_for(lambda: states(db, sd.session).get(S.COMPILED, 0) >= 3, "some jobs compiled")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "interrupted" in out, out
    assert squeue(slurm) == ""  # both arrays cancelled, the evaluation's too
    after = states(db, sd.session)
    assert after.get(S.COMPILE_START, 0) == 0, after  # every worker handed its job back
    assert after.get(S.NEW, 0) > 0 and after[S.NEW] + after[S.COMPILED] == len(sd.jobs), after
    out = go_fish(slurm, tmp_path, *args, "-w", "3")
    assert states(db, sd.session) == {S.EVALUATED: len(sd.jobs)}, out
    assert set(kernels_per_job(db, sd.jobs).values()) == {1}


def test_a_task_scancelled_and_a_node_set_down_mid_job_lose_and_duplicate_nothing(
    slurm, slurm_db, tmp_path
):
    db = slurm_db
    sd = noop_session(db, 12, sleep_s=1)
    proc = start_go_fish(
        slurm,
        tmp_path,
        "--session",
        str(sd.session),
        "--compile",
        "--slurm",
        "-w",
        "3",
        "--lease-seconds",
        "5",
    )
    try:
        running = wait_for(
            lambda: (
                states(db, sd.session).get(S.COMPILE_START, 0) >= 2
                and len(tasks := running_tasks(slurm)) >= 2
                and tasks
            ),
            "jobs in flight on two nodes",
        )
        (task, _), (_, node) = running[0], running[1]
        slurm_run(slurm, "scancel", task)
        scontrol(slurm, "update", f"nodename={node}", "state=down", "reason=tuna-test")
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert f"Slurm task {task} ended CANCELLED" in out, out
    assert f"Slurm node {node} is down (tuna-test)" in out, out
    assert f"scontrol update nodename={node} state=resume" in out, out
    assert states(db, sd.session) == {S.COMPILED: len(sd.jobs)}
    per_job = kernels_per_job(db, sd.jobs)
    assert len(per_job) == len(sd.jobs) and set(per_job.values()) == {1}, per_job


def test_slurmctld_restarted_mid_run_loses_and_duplicates_nothing(slurm, slurm_db, tmp_path):
    db = slurm_db
    sd = noop_session(db, 8, sleep_s=0.5)
    proc = start_go_fish(
        slurm,
        tmp_path,
        "--session",
        str(sd.session),
        "--compile",
        "--run_perf",
        "--slurm",
        *PARTITIONS,
        "-w",
        "3",
    )
    try:
        wait_for(lambda: states(db, sd.session).get(S.COMPILED, 0) >= 3, "some jobs compiled")
        slurm.restart_slurmctld()
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert states(db, sd.session) == {S.EVALUATED: len(sd.jobs)}, out
    assert duplicates(db, PerfDb, sd.session) == [] and duplicates(db, FindDb, sd.session) == []
    assert results(db, FindDb, sd.session) == len(sd.jobs)


def test_a_killed_go_fish_leaves_arrays_the_next_run_cancels_then_finishes(
    slurm, slurm_db, tmp_path
):
    db = slurm_db
    sd = noop_session(db, 8, sleep_s=3)  # the killed run's array still works at the rerun
    args = ("--session", str(sd.session), "--compile", "--slurm", "-w", "2")
    proc = start_go_fish(slurm, tmp_path, *args)
    try:
        wait_for(lambda: states(db, sd.session).get(S.COMPILE_START, 0) > 0, "jobs in flight")
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    assert running_tasks(slurm), "the killed go_fish's array should still run"
    run_dirs = list((tmp_path / "slurm-runs").iterdir())
    assert len(run_dirs) == 1 and (run_dirs[0] / "db_url").stat().st_mode & 0o777 == 0o600

    status = go_fish(slurm, tmp_path, "--status", "--slurm")
    assert "gone (left over)" in status and "go_fish --slurm --clean" in status, status

    out = go_fish(slurm, tmp_path, *args)
    assert re.search(r"cancelling Slurm array \d+ \(session \d+ compile", out), out
    assert states(db, sd.session) == {S.COMPILED: len(sd.jobs)}, out
    per_job = kernels_per_job(db, sd.jobs)
    assert len(per_job) == len(sd.jobs) and set(per_job.values()) == {1}, per_job
    assert not run_dirs[0].exists()  # its database URL is gone with it
    out = go_fish(slurm, tmp_path, "--clean", "--slurm")
    assert "Slurm: nothing left over" in out, out


def test_a_partition_slurm_does_not_have_and_an_array_it_refuses_are_one_line_each(
    slurm, slurm_db, tmp_path
):
    sd = noop_session(slurm_db, 2)
    proc = start_go_fish(
        slurm, tmp_path, "--session", str(sd.session), "--compile", "--slurm", "--partition", "nope"
    )
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out
    assert (
        "Error: Slurm partition 'nope' does not exist (partitions: all, cpu, gpu); name one of "
        "them with --partition or TUNA_SLURM_PARTITION" in out
    ), out
    # An array Slurm refuses (MaxArraySize is 1001 by default): one line, and no run folder
    # (with its database URL) left behind.
    proc = start_go_fish(
        slurm, tmp_path, "--session", str(sd.session), "--compile", "--slurm", "-w", "1024"
    )
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out
    assert re.search(
        rf"Error: Slurm refused the session {sd.session} compile array of 1024 task\(s\) "
        r"\(--partition=cpu --cpus-per-task=1\): .*Invalid job array specification; check the "
        r"partition, account, QoS and time limit, or ask for fewer workers \(-w\)",
        out,
    ), out
    assert not any((tmp_path / "slurm-runs").iterdir())
    assert states(slurm_db, sd.session) == {S.NEW: len(sd.jobs)}
