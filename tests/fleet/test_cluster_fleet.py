"""go_fish on the test cluster: three worker hosts, each with its own sshd and Docker engine.

End to end with real kernels (cpuconv, resnet50 at batch 1), then the faults the issue
names: a worker container killed mid-job, a host cut off for longer than the lease, and
the database restarted during a run. The fault tests use the ``noop`` backend, whose
jobs take a set time, so the fault lands while a job is in flight.
"""

from __future__ import annotations

import re
import signal
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.engine import make_url

from tests.fleet.fishing import (
    ARCH,
    go_fish,
    in_flight_on,
    register_hosts,
    ssh_host,
    start_go_fish,
    states,
    wait_for,
)
from tests.support.seed import UNIVERSAL, seed
from tuna.catalog.importer import import_configs
from tuna.catalog.parsing import read_lines
from tuna.db import Database
from tuna.db.enums import JobState
from tuna.db.models import FindDb, Job, JobKernel, PerfDb, TuningSession
from tuna.fleet.machines import list_machines
from tuna.fleet.ssh import Connections
from tuna.jobs.load import load_jobs
from tuna.sessions import SessionSpec, create_session

pytestmark = pytest.mark.cluster

S = JobState
NOOP_ARCH = "gfx-noop"  # tests.support.seed's session


def _count(db, model, session) -> int:
    with db.session() as s:
        return s.execute(
            select(func.count()).select_from(model).where(model.session == session)
        ).scalar_one()


def _duplicates(db, model, session) -> list[tuple[int, int]]:
    """(config, solver) pairs with more than one result row: must be none."""
    with db.session() as s:
        return list(
            s.execute(
                select(model.config, model.solver)
                .where(model.session == session)
                .group_by(model.config, model.solver)
                .having(func.count() > 1)
            ).all()
        )


def _worker_logs(log_dir: Path, phase: str, arch: str, address: str) -> str:
    logs = sorted((log_dir / phase / arch / address).glob("session-*/*/*.log"))
    assert logs, f"no {phase} log from {address} under {log_dir}"
    return "\n".join(p.read_text() for p in logs)


def _set_env(db, session: int, env: dict[str, str]) -> None:
    with db.session() as s:
        s.execute(update(TuningSession).where(TuningSession.id == session).values(environment=env))


def _shape(line: str) -> tuple[int, int]:
    """(filter size, multiply-adds) of a forward convolution line at batch 1."""
    f = {m[0]: int(m[1]) for m in re.findall(r"-([a-zA-Z]) (\d+)", line)}
    out = (f["H"] // f["u"]) * (f["W"] // f["v"])
    return f["y"], f["c"] * f["k"] * f["y"] * f["x"] * out


def resnet50_batch1() -> list[tuple[int, str]]:
    """12 of ResNet-50's 20 forward layers at batch 1: its four 3x3 layers and its eight cheapest
    1x1 ones. The point is the fleet (every host compiles and evaluates part of the session)
    and both filter shapes, not the kernels' size: half the work of all 20, same coverage."""
    text = resources.files("tuna.catalog.samples").joinpath("resnet50.txt").read_text()
    lines = [re.sub(r" -n \d+ ", " -n 1 ", line) for line in text.splitlines()]
    forward = [line for line in lines if line.rstrip().endswith("-F 1 -t 1")]
    one_by_one = sorted((x for x in forward if _shape(x)[0] == 1), key=lambda x: _shape(x)[1])
    three_by_three = [x for x in forward if _shape(x)[0] == 3]
    assert len(three_by_three) == 4, three_by_three  # the sample changed: pick again
    return read_lines("\n".join(one_by_one[:8] + three_by_three))


# -- end to end ------------------------------------------------------------------------------


def test_resnet50_is_compiled_and_tuned_across_all_three_hosts(cluster, cluster_db, tmp_path):
    db = cluster_db
    report = import_configs(db, resnet50_batch1(), tag="resnet50-n1", source="test")
    assert report.inserted >= 10
    session = create_session(
        db,
        SessionSpec(
            arch=ARCH,
            num_cu=2,
            backend="cpuconv",
            docker_image=cluster.image,
            label="cluster e2e",
            environment={"CPUCONV_MAX_CANDIDATES": "2"},
        ),
    )
    loaded = load_jobs(db, session.id, step="perf", tag="resnet50-n1", only_tunable=True)
    assert loaded.inserted >= 10
    register_hosts(db, cluster)
    logs = tmp_path / "logs"

    # Both phases in one go_fish, as a user runs them (--fin_steps compile,eval does the same).
    out = go_fish(cluster, logs, "--session", str(session.id), "--compile", "--run_perf")
    assert out.count("drained") == 2 and out.count("on 3 machine(s)") == 2, out

    assert states(db, session.id) == {S.EVALUATED: loaded.inserted}
    assert _count(db, PerfDb, session.id) == loaded.inserted
    assert _duplicates(db, PerfDb, session.id) == []
    assert all(m.last_seen is not None for m in list_machines(db))
    with db.session() as s:  # where each job ran, as people will query it
        per_machine = dict(
            s.execute(
                select(Job.machine, func.count())
                .where(Job.session == session.id)
                .group_by(Job.machine)
            ).all()
        )
    assert set(per_machine) == {m.id for m in list_machines(db)}, per_machine
    for h in cluster.hosts:  # every host did part of both phases
        compiled = _worker_logs(logs, "compile", ARCH, h.address)
        evaluated = _worker_logs(logs, "eval", ARCH, h.address)
        assert re.search(r"[1-9]\d* done", compiled), compiled[-2000:]
        assert re.search(r"[1-9]\d* done", evaluated), evaluated[-2000:]


def test_exec_and_status_report_every_host(cluster, cluster_db, tmp_path):
    """-e and --status on every host (--status with a host cut off: the cut-off test)."""
    register_hosts(cluster_db, cluster)
    out = go_fish(cluster, tmp_path, "-e", "hostname")
    for h in cluster.hosts:
        assert f"{h.address}: exit 0" in out and h.name in out
    assert "3 of 3 machine(s) succeeded" in out
    out = go_fish(cluster, tmp_path, "--status", "--image", cluster.image)
    assert out.count("yes,") == 3, out
    # --status with a host cut off: in the cut-off test below, while that host is off.


# -- faults ----------------------------------------------------------------------------------


def _noop_session(db, cluster, configs: int):
    """A noop session of ``configs`` x 2 jobs, its image the cluster's, the hosts registered."""
    sd = seed(db, configs=configs, solvers=UNIVERSAL)
    register_hosts(db, cluster, arch=NOOP_ARCH)
    with db.session() as s:
        s.execute(
            update(TuningSession)
            .where(TuningSession.id == sd.session)
            .values(docker_image=cluster.image)
        )
    return sd


def test_a_worker_container_killed_mid_job_loses_no_job(cluster, cluster_db, tmp_path):
    db = cluster_db
    sd = _noop_session(db, cluster, 8)
    # A job lasts 4 s: the SSH round trip of the kill took over the 1.5 s it was at load 20,
    # and the job seen held had finished before the kill landed (attempts {1: 1}).
    _set_env(db, sd.session, {"NOOP_SLEEP_S": "4"})
    victim_host = cluster.hosts[0]
    proc = start_go_fish(
        cluster, tmp_path, "--session", str(sd.session), "--compile", "--lease-seconds", "5"
    )
    try:
        before = wait_for(lambda: in_flight_on(db, sd.session, victim_host.address), "a job on w1")
        with Connections(Path(cluster.known_hosts)) as conns:
            killed = conns.check(
                ssh_host(cluster, victim_host),
                f"docker kill $(docker ps -q --filter label=tuna.session={sd.session})",
            )
        assert killed.strip()
        # The jobs the kill interrupted: held before it and still held (their lease not yet
        # run out) after it; one that finished in between is no evidence either way.
        held = set(before) & set(in_flight_on(db, sd.session, victim_host.address))
        assert held, f"every job held on w1 ({before}) had finished before the kill landed"
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "started tuna-" in out and "in its place" in out, out
    assert states(db, sd.session) == {S.COMPILED: len(sd.jobs)}
    with db.session() as s:
        attempts = dict(s.execute(select(Job.id, Job.attempt).where(Job.id.in_(held))).all())
        per_job = Counter(s.scalars(select(JobKernel.job).where(JobKernel.job.in_(sd.jobs))).all())
    assert all(a >= 2 for a in attempts.values()), attempts  # the killed attempt, then another
    assert set(per_job.values()) == {1}, per_job  # one kernel link per job: nothing twice


def _statements_running_from(db: Database, address: str) -> int:
    """Statements the server is running for connections from ``address`` (its processlist)."""
    with db.session() as s:
        return int(
            s.execute(
                text(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST"
                    " WHERE HOST LIKE :host AND COMMAND NOT IN ('Sleep', 'Daemon')"
                    " AND ID <> CONNECTION_ID()"
                ),
                {"host": f"{address}:%"},
            ).scalar_one()
        )


def test_a_host_cut_off_past_its_lease_is_reported_and_its_late_results_refused(
    cluster, cluster_db, tmp_path
):
    db = cluster_db
    # 24 jobs of 2 s: the other two hosts are still busy when the cut host's lease runs out
    # (6 s, reaped within 5 s more), so one of them takes its jobs over.
    sd = _noop_session(db, cluster, 12)
    go_fish(cluster, tmp_path, "--session", str(sd.session), "--compile", "-w", "2")
    _set_env(db, sd.session, {"NOOP_SLEEP_S": "2"})
    cut = cluster.hosts[0]
    out_path = tmp_path / "go_fish.out"
    out_file = out_path.open("w")
    proc = start_go_fish(
        cluster,
        tmp_path,
        "--session",
        str(sd.session),
        "--run_perf",
        "--lease-seconds",
        "6",
        output=out_file,
    )
    status = None
    try:
        wait_for(lambda: in_flight_on(db, sd.session, cut.address), "a job on w1")
        cluster.cut(cut.name)
        try:
            # Meanwhile --status, as someone looking at the fleet would: w1 does not answer
            # (its poll times out after 10 s, well within the time w1 stays cut off).
            status = start_go_fish(
                cluster, tmp_path / "status", "--status", "--image", cluster.image
            )
            # A statement w1 sent before the cut lands; nothing leaves w1 after that.
            wait_for(
                lambda: _statements_running_from(db, cut.address) == 0,
                "w1's last statements to finish on the server",
                timeout=60,  # a statement waiting on a row lock runs until its lock wait times out
            )
            with db.session() as s:
                stuck = dict(
                    s.execute(
                        select(Job.id, Job.attempt).where(
                            Job.id.in_(in_flight_on(db, sd.session, cut.address))
                        )
                    ).all()
                )
            assert stuck, "w1 held no job when it was cut off"

            def taken_over() -> bool:  # reaped after the lease, claimed again by another host
                with db.session() as s:
                    now = dict(
                        s.execute(select(Job.id, Job.attempt).where(Job.id.in_(stuck))).all()
                    )
                return all(now[i] > a for i, a in stuck.items())

            wait_for(taken_over, "the cut host's jobs to be taken over", timeout=120)
            wait_for(
                lambda: f"lost {cut.address}" in out_path.read_text(),
                "go_fish to report the cut host lost (a poll times out after 10 s)",
            )
            status_out, _ = status.communicate(timeout=120)
        finally:
            cluster.restore(cut.name)
        proc.wait(timeout=300)
    finally:
        for p in (proc, status):
            if p is not None and p.poll() is None:
                p.kill()
        out_file.close()
    assert status.returncode == 1, status_out
    assert status_out.count("yes,") == 2 and "no: " in status_out, status_out
    out = out_path.read_text()
    assert proc.returncode == 0, out
    assert f"lost {cut.address}" in out, out
    assert f"machine {cut.address} was lost" in out, out  # and in the summary
    # Piped, the per-machine table is plain columns: machine, workers, jobs finished[, lost].
    cells = [line.split() for line in out.splitlines()]
    per_machine = {
        c[0]: c[1:]
        for c in cells
        if len(c) in (3, 4) and c[0].startswith("10.77.0.") and c[1].isdigit() and c[2].isdigit()
    }
    assert per_machine[cut.address][2:] == ["yes"], out  # the per-machine table marks it lost
    assert per_machine[cluster.hosts[1].address][2:] == [], out
    assert sum(int(c[1]) for c in per_machine.values()) == len(sd.jobs), out
    assert states(db, sd.session) == {S.EVALUATED: len(sd.jobs)}
    assert _duplicates(db, FindDb, sd.session) == [] and _duplicates(db, PerfDb, sd.session) == []
    assert _count(db, FindDb, sd.session) == len(sd.jobs)
    late = _worker_logs(tmp_path, "eval", NOOP_ARCH, cut.address)
    lost = [int(n) for n in re.findall(r"(\d+) lost", late)]
    assert lost and max(lost) >= 1, late[-3000:]  # its late write was fenced out


def test_a_database_restart_during_a_run_loses_and_duplicates_nothing(
    cluster, cluster_db, tmp_path
):
    db = cluster_db
    sd = _noop_session(db, cluster, 15)
    _set_env(db, sd.session, {"NOOP_SLEEP_S": "0.5"})
    proc = start_go_fish(cluster, tmp_path, "--session", str(sd.session), "--compile", "-w", "2")
    try:
        wait_for(lambda: states(db, sd.session).get(S.COMPILED, 0) >= 6, "some jobs compiled")
        cluster.restart_db()
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert states(db, sd.session) == {S.COMPILED: len(sd.jobs)}
    with db.session() as s:
        per_job = Counter(s.scalars(select(JobKernel.job).where(JobKernel.job.in_(sd.jobs))).all())
    assert set(per_job.values()) == {1}, per_job
    assert len(per_job) == len(sd.jobs)


def test_ctrl_c_stops_the_containers_and_hands_the_jobs_back(cluster, cluster_db, tmp_path):
    db = cluster_db
    sd = _noop_session(db, cluster, 15)
    _set_env(db, sd.session, {"NOOP_SLEEP_S": "2"})
    proc = start_go_fish(cluster, tmp_path, "--session", str(sd.session), "--compile")
    try:
        wait_for(lambda: states(db, sd.session).get(S.COMPILED, 0) >= 3, "some jobs compiled")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    assert "interrupted" in out, out
    after = states(db, sd.session)
    assert after.get(S.COMPILE_START, 0) == 0, after  # nothing left claimed
    assert after.get(S.NEW, 0) > 0 and after[S.NEW] + after[S.COMPILED] == len(sd.jobs), after
    for h in cluster.hosts:  # every container stopped and removed, and the run's files too
        left = cluster.ssh_run(
            h.name, "docker ps -aq --filter label=tuna.session; ls /tmp/tuna-go_fish"
        )
        assert left.stdout.strip() == "", (h.name, left)
    password = make_url(cluster.worker_db_url).password
    assert password and all(password not in p.read_text() for p in tmp_path.rglob("*.log"))


def test_an_image_no_machine_has_fails_clearly_and_leaves_nothing(cluster, cluster_db, tmp_path):
    sd = _noop_session(cluster_db, cluster, 2)
    proc = start_go_fish(
        cluster, tmp_path, "--session", str(sd.session), "--compile", "--image", "tuna-worker:nope"
    )
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 1, out
    assert out.count("image tuna-worker:nope is not there; load it") == 3, out
    assert "no machine could start a worker" in out
    for h in cluster.hosts:  # no container, and no run directory holding the database URL
        left = cluster.ssh_run(h.name, "docker ps -aq; ls -A /tmp/tuna-go_fish 2>/dev/null")
        assert left.stdout.strip() == "", (h.name, left)
    assert states(cluster_db, sd.session) == {S.NEW: len(sd.jobs)}


def test_what_a_killed_go_fish_left_is_listed_then_cleaned_up_by_the_next_run(
    cluster, cluster_db, tmp_path
):
    """SIGKILL go_fish mid-run: its containers keep running and its run folder (with the
    database URL) stays. --status lists them; the next run stops them, collects their logs
    and removes them and the folder; --clean then finds nothing."""
    db = cluster_db
    sd = _noop_session(db, cluster, 12)
    _set_env(db, sd.session, {"NOOP_SLEEP_S": "1"})
    logs = tmp_path / "logs"
    proc = start_go_fish(cluster, logs, "--session", str(sd.session), "--compile", "-w", "1")
    try:
        wait_for(lambda: states(db, sd.session).get(S.COMPILE_START, 0) > 0, "jobs in flight")
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    left = {
        h.name: cluster.ssh_run(
            h.name, "docker ps -aq --filter label=tuna.session; ls -A /tmp/tuna-go_fish"
        ).stdout.split()
        for h in cluster.hosts
    }
    assert all(len(v) >= 2 for v in left.values()), left  # a container and the run folder

    out = go_fish(cluster, logs, "--status", "--image", cluster.image)
    assert "go_fish --clean stops and removes what killed go_fish runs left" in out, out

    out = go_fish(cluster, logs, "--session", str(sd.session), "--compile", "-w", "1")
    assert out.count("removed what an earlier go_fish left (1 container(s)") == 3, out
    assert states(db, sd.session) == {S.COMPILED: len(sd.jobs)}
    for h in cluster.hosts:
        rest = cluster.ssh_run(
            h.name, "docker ps -aq --filter label=tuna.session; ls -A /tmp/tuna-go_fish"
        )
        assert rest.stdout.strip() == "", (h.name, rest)
        log = _worker_logs(logs, "compile", NOOP_ARCH, h.address)
        assert "left over by run" in log, log[-2000:]  # the killed run's worker log, collected
    out = go_fish(cluster, logs, "--clean")
    assert out.count(": nothing left over") == 3, out
