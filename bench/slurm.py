"""go_fish through Slurm against go_fish over SSH + Docker: the same noop queue on the same hosts.

Needs a running test cluster (``bin/test-cluster up DIR``, as root: three hosts, each with
sshd, a Docker engine and a slurmd) and its directory in ``TUNA_TEST_CLUSTER_DIR``. For each
launcher it loads a fresh noop session of ``--jobs`` jobs and runs ``go_fish --compile`` then
``go_fish --run_perf`` with the same number of workers: ``--workers`` per host for compile and
one per host for evaluation (SSH: containers from the cluster's image; Slurm: arrays on the
``all`` partition, evaluation tasks with a stand-in GPU each, workers from this checkout).

Reported per phase: wall time of go_fish (start to exit, as a user sees it), jobs/s, time from
go_fish's start to the first claim, and for Slurm the fixed cost of the array: from its
submission (Slurm's SubmitTime) to the first claim (the database clock; both clocks are this
machine's). Not a test: figures go in bench/slurm.md.

    TUNA_TEST_CLUSTER_DIR=/tmp/tc.X .venv/bin/python bench/slurm.py --jobs 1000 --workers 2
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import delete, func, select

from tuna.catalog.importer import import_configs
from tuna.catalog.parsing import read_lines
from tuna.db import Database, migrate, open_database
from tuna.db.clock import db_now
from tuna.db.engine import make_engine
from tuna.db.models import Job
from tuna.fleet.machines import add_machine
from tuna.jobs.load import load_jobs
from tuna.sessions import SessionSpec, create_session

ARCH = "gfx-bench"


def driver_lines(n: int) -> list[tuple[int, str]]:
    lines = [
        f"./bin/MIOpenDriver conv -n {1 + i % 32} -c {8 * (1 + i // 32)} -H 14 -W 14 -k 64 "
        f"-y {1 if i % 2 else 3} -x {1 if i % 2 else 3} -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -F 1"
        for i in range(n)
    ]
    return read_lines("\n".join(lines))


def fresh_db(url: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        name = conn.exec_driver_sql("SELECT DATABASE()").scalar_one()
        conn.exec_driver_sql(f"DROP DATABASE `{name}`")
        conn.exec_driver_sql(f"CREATE DATABASE `{name}`")
        conn.exec_driver_sql(f"USE `{name}`")
        migrate.upgrade(conn)
    engine.dispose()


def noop_session(db: Database, cluster: dict, jobs: int, sleep: float, tag: str) -> int:
    """A noop session of exactly ``jobs`` jobs (3 noop solvers apply to each config)."""
    import_configs(db, driver_lines(jobs // 3 + 1), tag=tag, source="bench")
    session = create_session(
        db,
        SessionSpec(
            arch=ARCH,
            num_cu=1,
            backend="noop",
            docker_image=cluster["image"],
            label=tag,
            environment={"NOOP_SLEEP_S": str(sleep)},
        ),
    )
    load_jobs(db, session.id, step="perf", tag=tag)
    with db.session() as s:
        ids = s.scalars(select(Job.id).where(Job.session == session.id).order_by(Job.id)).all()
        s.execute(delete(Job).where(Job.id.in_(ids[jobs:])))
    return session.id


def go_fish(cluster: dict, logs: Path, *args: str) -> tuple[float, str]:
    env = dict(
        os.environ,
        TUNA_DB_URL=cluster["db_url"],
        TUNA_WORKER_DB_URL=cluster["worker_db_url"],
        TUNA_KNOWN_HOSTS=cluster["known_hosts"],
        TUNA_LOG_DIR=str(logs),
        SLURM_CONF=cluster["slurm_conf"],
    )
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "tuna.cli", "go_fish", *args],
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"go_fish {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return wall, proc.stdout


def submit_time(cluster: dict, out: str) -> dt.datetime | None:
    """SubmitTime of the first array go_fish's output names."""
    m = re.search(r"Slurm array (\d+):", out)
    if not m:
        return None
    shown = subprocess.run(
        ["scontrol", "show", "job", m.group(1)],
        env=dict(os.environ, SLURM_CONF=cluster["slurm_conf"]),
        capture_output=True,
        text=True,
    ).stdout
    t = re.search(r"SubmitTime=(\S+)", shown)
    return dt.datetime.fromisoformat(t.group(1)) if t else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2, help="compile workers per host")
    ap.add_argument("--sleep", type=float, default=0.0, help="seconds per job (noop)")
    ap.add_argument("--only", choices=("ssh", "slurm"), help="one launcher only")
    args = ap.parse_args()
    cdir = os.environ.get("TUNA_TEST_CLUSTER_DIR")
    if not cdir:
        raise SystemExit("set TUNA_TEST_CLUSTER_DIR to a running cluster (bin/test-cluster up DIR)")
    cluster = json.loads((Path(cdir) / "cluster.json").read_text())
    fresh_db(cluster["db_url"])
    db = open_database(cluster["db_url"])
    for h in cluster["hosts"]:
        add_machine(
            db, h["address"], user=h["user"], arch=ARCH, gpus=[0], key_file=cluster["key_file"]
        )
    hosts = len(cluster["hosts"])
    logs = Path(cdir) / "bench-logs"
    load = os.getloadavg()[0]
    print(f"{args.jobs} noop jobs, {hosts} hosts, sleep {args.sleep} s/job, load {load:.1f}")
    print(
        "| launcher | phase | workers | wall s | jobs/s | go_fish start to first claim s "
        "| submission to first claim s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for launcher in ("ssh", "slurm"):
        if args.only and launcher != args.only:
            continue
        session = noop_session(db, cluster, args.jobs, args.sleep, f"bench-{launcher}")
        for flag, per_host in (("--compile", args.workers), ("--run_perf", 1)):
            workers = per_host * hosts
            extra = ["-w", str(per_host)]
            if launcher == "slurm":
                extra = ["--slurm", "--partition", "all", "-w", str(workers)]
            with db.session() as s:  # the database clock: job timestamps are on it
                t0 = s.execute(select(db_now())).scalar_one()
            wall, out = go_fish(cluster, logs, "--session", str(session), flag, *extra)
            col = Job.compile_start if flag == "--compile" else Job.eval_start
            with db.session() as s:
                first = s.execute(select(func.min(col)).where(Job.session == session)).scalar_one()
            first_s = (first - t0).total_seconds() if first else float("nan")
            submitted = submit_time(cluster, out) if launcher == "slurm" else None
            fixed = f"{(first - submitted).total_seconds():.1f}" if submitted and first else "-"
            print(
                f"| {launcher} | {flag[2:]} | {workers} | {wall:.1f} | {args.jobs / wall:.0f} | "
                f"{first_s:.1f} | {fixed} |",
                flush=True,
            )
    db.dispose()


if __name__ == "__main__":
    main()
