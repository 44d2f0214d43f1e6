"""Helpers for the cluster tests: register the cluster's hosts, run go_fish, read the results."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from sqlalchemy import func, select

from tests.support.wait import wait_until
from tuna.db import Database
from tuna.db.enums import JobState
from tuna.db.models import Job
from tuna.fleet.machines import MachineRow, add_machine
from tuna.fleet.ssh import Host

ARCH = "cpu-cluster"
BRISK_PACE = {
    "TUNA_FLEET_POLL_EVERY": "0.5",
    "TUNA_FLEET_REAP_EVERY": "1",
    "TUNA_FLEET_DRAIN_GRACE": "5",
}


def register_hosts(
    db: Database,
    cluster: Any,
    *,
    arch: str = ARCH,
    gpus: Sequence[int] = (0,),
    compile_workers: int = 1,
) -> list[MachineRow]:
    """Every cluster host as a machine (by address, as root, with the cluster's key)."""
    return [
        add_machine(
            db,
            h.address,
            port=h.port,
            user=h.user,
            arch=arch,
            num_cu=2,
            gpus=gpus,
            key_file=str(cluster.key_file),
            docker_settings={"compile_workers": compile_workers},
        )
        for h in cluster.hosts
    ]


def ssh_host(cluster: Any, h: Any) -> Host:
    return Host(h.name, h.address, h.port, h.user, str(cluster.key_file))


def fish_env(cluster: Any, log_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        TUNA_DB_URL=cluster.db_url,
        TUNA_WORKER_DB_URL=cluster.worker_db_url,
        TUNA_KNOWN_HOSTS=str(cluster.known_hosts),
        TUNA_LOG_DIR=str(log_dir),
        COLUMNS="200",
        PYTHONUNBUFFERED="1",  # a test may watch go_fish's output as it comes
    )
    if getattr(cluster, "slurm_conf", None):  # Slurm's commands find the cluster's Slurm
        env["SLURM_CONF"] = str(cluster.slurm_conf)
    # A brisk pace (the defaults: 3, 5 and 30 s) so that no test waits on go_fish's timers:
    # containers polled every 0.5 s, leases reaped every 1 s, 5 s for drained workers to exit.
    # The poll timeout stays 10 s: a loaded 2-core machine must not lose a host that answers.
    for name, seconds in BRISK_PACE.items():
        env.setdefault(name, seconds)
    return env


def start_go_fish(
    cluster: Any, log_dir: Path, *args: str, output: IO[str] | None = None
) -> subprocess.Popen[str]:
    """``go_fish ARGS`` against the cluster, as a user would run it on the head node; its
    output goes to ``output`` (a file the test can watch) or a pipe."""
    return subprocess.Popen(
        [sys.executable, "-m", "tuna.cli", "go_fish", *args],
        env=fish_env(cluster, log_dir),
        stdout=output or subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def go_fish(cluster: Any, log_dir: Path, *args: str, timeout: float = 600) -> str:
    """Run go_fish to the end; its output (the test fails with it if go_fish failed)."""
    proc = start_go_fish(cluster, log_dir, *args)
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"go_fish {' '.join(args)} exited {proc.returncode}:\n{out}"
    return out


def states(db: Database, session: int) -> dict[JobState, int]:
    with db.session() as s:
        rows = s.execute(
            select(Job.state, func.count()).where(Job.session == session).group_by(Job.state)
        ).all()
    return {JobState(st): n for st, n in rows}


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = 120.0) -> Any:
    """``wait_until`` with the cluster's patience: hosts, engines and SSH are slow to answer."""
    return wait_until(predicate, what, timeout=timeout, interval=0.2)


def in_flight_on(db: Database, session: int, address: str) -> list[int]:
    """Ids of the session's jobs a worker on ``address`` holds right now."""
    with db.session() as s:
        return list(
            s.scalars(
                select(Job.id).where(
                    Job.session == session,
                    Job.state.in_([JobState.COMPILE_START, JobState.EVAL_START]),
                    Job.lease_owner.like(f"{address}/%"),
                )
            )
        )
