"""go_fish on a fleet, without a fleet: what go_fish asks each machine to run."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.fleet.sshd import sshd_fixture  # noqa: F401  (the sshd fixture)
from tests.support.seed import seed
from tuna.backends.noop import NoopBackend
from tuna.errors import ConfigurationError, TunaError
from tuna.fleet.machines import MachineRow
from tuna.fleet.phase import Task
from tuna.fleet.remote import (
    FleetOptions,
    HostState,
    RemoteWorkers,
    pace_settings,
    run_fleet,
)
from tuna.fleet.ssh import Connections

SECRET = "mysql+pymysql://tuna:s3cret@10.77.0.1:3307/tuna"


@pytest.fixture
def options(tmp_path: Path) -> FleetOptions:
    return FleetOptions(image="tuna-worker:ci", worker_db_url=SECRET, log_dir=tmp_path / "logs")


def fleet_run(db, task, machines, options) -> RemoteWorkers:
    sd = seed(db, configs=2)
    return RemoteWorkers(db, Connections(Path("/nonexistent")), sd.session, task, machines, options)


def test_worker_containers_get_the_url_from_a_file_never_argv(lite, options, monkeypatch):
    monkeypatch.setattr(
        NoopBackend,
        "container_args",
        lambda self, phase, gpu: ["--device", "/dev/kfd"] if phase == "eval" else [],
    )
    monkeypatch.setattr(
        NoopBackend,
        "worker_environment",
        lambda self, session, phase, gpu, scratch: {"CACHE": f"{scratch}/cache", "GPU": str(gpu)},
    )
    m = MachineRow(1, "gpu-01", gpus=(0, 3), docker_settings={"run_args": ["--ipc", "host"]})
    run = fleet_run(lite, Task.RUN_PERF, [m], options)
    run._by_host[m.host].image_id = "sha256:1d"  # what `docker image inspect` said there
    slots = run._plan(HostState(m))
    assert [(s.worker, s.gpu) for s in slots] == [("eval-gpu0", 0), ("eval-gpu3", 3)]
    host_dir = options.log_dir / "eval" / "gfx-noop" / "gpu-01"
    assert slots[1].log == host_dir / f"session-{run.session.id}" / run.run_id / "eval-gpu3.log"
    slots[1].container = "tuna-x-eval-gpu3"
    argv = shlex.split(run._docker_run(slots[1]))
    assert "s3cret" not in " ".join(argv)
    assert argv[:2] == ["docker", "run"] and "--privileged" not in argv
    run_dir = f"/tmp/tuna-go_fish/{run.run_id}"
    assert f"{run_dir}/db_url:/run/tuna/db_url:ro" in argv
    assert f"{run_dir}/eval-gpu3:/scratch" in argv
    assert "/tmp/tuna-locks:/run/tuna/locks" in argv  # the machine's default lock directory
    env = {argv[i + 1] for i, a in enumerate(argv) if a == "-e"}
    assert {
        "TUNA_DB_URL_FILE=/run/tuna/db_url",
        "TUNA_LOCK_DIR=/run/tuna/locks",
        "TUNA_WORKER_NAME=gpu-01/eval-gpu3",
        "TUNA_IMAGE=tuna-worker:ci",  # the platform's container, as the worker records it
        "TUNA_IMAGE_ID=sha256:1d",
        "CACHE=/scratch/cache",
        "GPU=3",
    } <= env
    image_at = argv.index("tuna-worker:ci")
    assert argv[image_at - 4 : image_at] == ["--device", "/dev/kfd", "--ipc", "host"]
    assert argv[image_at + 1 :] == [
        "tuna", "worker", "-v", "--session", str(run.session.id), "--phase", "eval", "--burst",
        "--machine", "1", "--gpu", "3", "--step", "perf",  # --run_perf's step only (issue #24)
    ]  # fmt: skip


def test_compile_workers_per_machine(lite, options):
    fixed = MachineRow(1, "a", docker_settings={"compile_workers": 3, "docker": "sudo docker"})
    run = fleet_run(lite, Task.COMPILE, [fixed], options)
    slots = run._plan(HostState(fixed))
    assert [s.worker for s in slots] == ["compile-0", "compile-1", "compile-2"]
    slots[0].container = "c"
    assert shlex.split(run._docker_run(slots[0]))[:3] == ["sudo", "docker", "run"]
    locked = MachineRow(
        3, "c", docker_settings={"lock_dir": "/var/lock/tuna", "compile_workers": 1}
    )
    run_c = fleet_run(lite, Task.COMPILE, [locked], options)
    slot = run_c._plan(HostState(locked))[0]
    slot.container = "c"
    assert "/var/lock/tuna:/run/tuna/locks" in shlex.split(run_c._docker_run(slot))
    other = MachineRow(2, "b")
    run = RemoteWorkers(
        lite, Connections(Path("/x")), run.session.id, Task.COMPILE, [other],
        FleetOptions(image="i", worker_db_url=SECRET, log_dir=Path("/l"), compile_workers=2),
    )  # fmt: skip
    assert len(run._plan(HostState(other))) == 2


def test_eval_on_another_arch_is_refused(lite, options):
    sd = seed(lite, configs=1)
    m = MachineRow(1, "gpu-01", arch="gfx942")
    with pytest.raises(TunaError, match="targets gfx-noop, but gpu-01 is another arch"):
        run_fleet(lite, Connections(Path("/x")), sd.session, Task.RUN_PERF, [m], options)


def test_no_machine_is_an_error(lite, options):
    with pytest.raises(TunaError, match="no machine selected"):
        fleet_run(lite, Task.COMPILE, [], options)


def test_the_pace_over_ssh_is_read_from_tuna_fleet_settings_with_the_defaults_unset():
    """go_fish's pace: ``TUNA_FLEET_*`` seconds; unset, the defaults users always had."""
    assert pace_settings({}) == {
        "poll_every": 3.0,
        "poll_timeout": 10.0,
        "reap_every": 5.0,
        "drain_grace": 30.0,
    }
    env = {
        "TUNA_FLEET_POLL_EVERY": "0.5",
        "TUNA_FLEET_POLL_TIMEOUT": "4",
        "TUNA_FLEET_REAP_EVERY": "1",
        "TUNA_FLEET_DRAIN_GRACE": "2.5",
    }
    brisk = FleetOptions(image="i", worker_db_url=SECRET, log_dir=Path("/l"), **pace_settings(env))
    assert brisk.pace.poll_every == 0.5 and brisk.poll_timeout == 4
    assert brisk.pace.reap_every == 1 and brisk.pace.drain_grace == 2.5
    with pytest.raises(ConfigurationError, match=r"^TUNA_FLEET_REAP_EVERY='-1': .* e\.g\. 5$"):
        pace_settings({"TUNA_FLEET_REAP_EVERY": "-1"})


def test_no_more_compile_workers_start_than_there_are_jobs(lite, options):
    """-w 8 with 3 jobs started 8 workers: the machines together get at most one worker per
    compile job, each machine at least one."""
    from tuna.jobs import Phase, job_counts
    from tuna.jobs.status import search_work_waiting

    a, b = MachineRow(1, "a"), MachineRow(2, "b")
    wide = FleetOptions(image="i", worker_db_url=SECRET, log_dir=Path("/l"), compile_workers=50)
    run = fleet_run(lite, Task.COMPILE, [a, b], wide)
    jobs = job_counts(lite, run.session.id).by_state
    assert search_work_waiting(lite, run.session.id).active_searches == 0
    total = jobs[Phase.COMPILE.ready]
    assert 2 < total < 50
    first, second = run._plan(HostState(a)), run._plan(HostState(b))
    assert (len(first), len(second)) == (total, 1)


def test_the_run_counts_what_its_own_containers_reported(lite, options, sshd, tmp_path):
    """Two go_fish on one session both printed the session's growth as what their run did:
    each container's worker writes what it did (TUNA_WORKER_REPORT, in its folder), go_fish
    reads it as it collects the container. A real sshd on 127.0.0.1; docker is `true`."""
    import datetime as dt
    import getpass
    import json

    from tuna.fleet.phase import FishReport
    from tuna.jobs import job_counts
    from tuna.jobs.values import Phase

    m = MachineRow(
        1,
        "127.0.0.1",
        port=sshd.port,
        user=getpass.getuser(),
        key_file=str(sshd.client_key),
        docker_settings={
            "docker": "true",
            "scratch": str(tmp_path / "scratch"),
            "compile_workers": 1,
        },
    )
    sd = seed(lite, configs=2)
    with Connections(sshd.known_hosts) as conns:
        run = RemoteWorkers(lite, conns, sd.session, Task.COMPILE, [m], options)
        [slot] = run._plan(HostState(m))
        slot.container = "tuna-x-compile-0"
        argv = shlex.split(run._docker_run(slot))
        told = "/scratch/report-tuna-x-compile-0.json"
        assert f"TUNA_WORKER_REPORT={told}" in argv
        folder = tmp_path / "scratch" / run.run_id / slot.worker
        folder.mkdir(parents=True)
        did = {"session": sd.session, "phase": "compile", "done": 5, "errored": 1,
               "not_applicable": 2}  # fmt: skip
        (folder / "report-tuna-x-compile-0.json").write_text(json.dumps([did]))
        run._state(m.host).slots = [slot]
        run._collect(slot)
    final = job_counts(lite, sd.session)
    from tuna.fleet.phase import Progress

    report = FishReport(sd.session, Task.COMPILE, 1, [], Progress(final, 0, 0, 1.0, 0, final))
    run._per_host = lambda since: {}  # the per-machine table is not this test's
    run.fill(report, dt.datetime.now())
    from tuna.db.enums import JobState

    assert report.this_run() == {
        Phase.COMPILE.done: 5,
        JobState.ERRORED: 1,
        JobState.NOT_APPLICABLE: 2,
    }
