"""The command lines go_fish starts workers with (tuna/fleet/commands.py): pure functions."""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from tuna.cli import main
from tuna.db.enums import JobStep
from tuna.fleet.commands import (
    CONTAINER_DB_URL,
    CONTAINER_LOCK_DIR,
    CONTAINER_SCRATCH,
    docker_run_argv,
    worker_argv,
)
from tuna.worker.settings import WorkerSettings


def test_a_worker_works_one_phase_in_burst_mode_with_a_line_per_job():
    assert worker_argv(3, "compile") == [
        "tuna", "worker", "-v", "--session", "3", "--phase", "compile", "--burst",
    ]  # fmt: skip
    argv = worker_argv(
        7, "eval", program=("py", "-m", "tuna.cli"), machine=2, gpu=1,
        settings=WorkerSettings(claim_batch=4, lease_seconds=30.0),
    )  # fmt: skip
    assert argv == [
        "py", "-m", "tuna.cli", "worker", "-v", "--session", "7", "--phase", "eval", "--burst",
        "--machine", "2", "--gpu", "1", "--claim-batch", "4", "--lease-seconds", "30",
    ]  # fmt: skip


def test_a_worker_can_be_given_later_stages_to_work_in_the_same_process():
    argv = worker_argv(3, "compile", then=[(4, "compile"), (3, "eval")])
    assert argv[-4:] == ["--then", "4:compile", "--then", "3:eval"]
    ctx = main.commands["worker"].make_context("worker", argv[2:])
    assert [(s, p.value) for s, p in ctx.params["then"]] == [(4, "compile"), (3, "eval")]


def test_an_evaluation_worker_is_told_its_step_and_takes_only_that_steps_jobs():
    """Issue #24: go_fish --run_find hands its step on; the worker command takes it."""
    argv = worker_argv(3, "compile", then=[(3, "eval")], step=JobStep.FIND)
    assert argv[-2:] == ["--step", "find"]
    ctx = main.commands["worker"].make_context("worker", argv[2:])
    assert ctx.params["step"] == "find"
    assert "--step" not in worker_argv(3, "compile")


@given(
    session=st.integers(1, 10**6),
    phase=st.sampled_from(["compile", "eval"]),
    machine=st.none() | st.integers(1, 1000),
    gpu=st.none() | st.integers(0, 15),
    batch=st.integers(1, 64),
    lease=st.floats(1, 10**5, allow_nan=False),
)
def test_every_worker_command_line_is_one_the_worker_command_accepts(
    session, phase, machine, gpu, batch, lease
):
    argv = worker_argv(
        session,
        phase,
        machine=machine,
        gpu=gpu,
        settings=WorkerSettings(claim_batch=batch, lease_seconds=lease),
    )
    assert argv[:2] == ["tuna", "worker"]
    ctx = main.commands["worker"].make_context("worker", argv[2:])
    p = ctx.params
    assert (p["session_id"], p["phase"], p["burst"], p["machine_id"], p["gpu"]) == (
        session, phase, True, machine, gpu,
    )  # fmt: skip
    assert p["claim_batch"] == batch
    assert abs(p["lease_seconds"] - lease) <= 1e-5 * lease


def run_argv(**kw):
    args = dict(
        docker=["sudo", "docker"],
        name="tuna-r1-eval-gpu3",
        labels={"run": "r1", "session": "5"},
        run_dir="/tmp/tuna-go_fish/r1",
        worker="eval-gpu3",
        lock_dir="/tmp/tuna-locks",
        env={"B": "2", "A": "1"},
        device_args=["--device", "/dev/kfd"],
        run_args=["--ipc", "host"],
        image="tuna-worker:ci",
        command=["tuna", "worker"],
    )
    args.update(kw)
    return docker_run_argv(**args)


def test_a_worker_container_gets_the_url_file_read_only_its_scratch_and_labels():
    argv = run_argv()
    assert argv == [
        "sudo", "docker", "run", "-d", "--name", "tuna-r1-eval-gpu3",
        "--label", "tuna.run=r1", "--label", "tuna.session=5",
        "--network", "host",
        "-v", f"/tmp/tuna-go_fish/r1/db_url:{CONTAINER_DB_URL}:ro",
        "-v", f"/tmp/tuna-go_fish/r1/eval-gpu3:{CONTAINER_SCRATCH}",
        "-v", f"/tmp/tuna-locks:{CONTAINER_LOCK_DIR}",
        "-e", "A=1", "-e", "B=2", "-e", f"TUNA_DB_URL_FILE={CONTAINER_DB_URL}",
        "-e", f"TUNA_LOCK_DIR={CONTAINER_LOCK_DIR}",
        "--device", "/dev/kfd", "--ipc", "host",
        "tuna-worker:ci", "tuna", "worker",
    ]  # fmt: skip
    assert "--privileged" not in argv


def test_every_container_on_a_host_takes_its_evaluation_locks_in_the_hosts_lock_dir():
    """Two containers timing at once on one machine disturb each other (issue #14): each
    gets the host's lock directory, and the worker inside is told where it is."""
    argv = run_argv(lock_dir="/var/lock/tuna")
    assert f"/var/lock/tuna:{CONTAINER_LOCK_DIR}" in argv
    env = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    assert f"TUNA_LOCK_DIR={CONTAINER_LOCK_DIR}" in env
    # the mount is read-write: flock needs the file, and the first worker creates it
    assert f"/var/lock/tuna:{CONTAINER_LOCK_DIR}:ro" not in argv


def test_odd_values_survive_the_shell_as_one_word_each():
    argv = run_argv(env={"X": "a b; rm -rf /", "Y": "$(id)"}, image="img:1 2")
    assert shlex.split(shlex.join(argv)) == argv
