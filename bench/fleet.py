"""go_fish on the test cluster: how fast a fleet drains a queue, and what a run costs to start.

Needs a running test cluster (``bin/test-cluster up DIR``, as root) and its directory in
``TUNA_TEST_CLUSTER_DIR``. Jobs are ``noop`` jobs (no kernel work; ``--sleep`` adds a fixed
time per job), so the figures are go_fish's and the job engine's own: containers started
over SSH on every host, claims and records over the network to the head's MariaDB, polling,
log collection and clean-up. Reported per run: jobs, workers, wall time from go_fish's start
to its exit, time to the first claim (container start-up), drain rate, and go_fish's
overhead over the pure job time. Not a test: figures go in bench/fleet.md.

    TUNA_TEST_CLUSTER_DIR=/tmp/tc.X .venv/bin/python bench/fleet.py --configs 300 --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import func, select

from tuna.catalog.importer import import_configs
from tuna.catalog.parsing import read_lines
from tuna.db import migrate, open_database
from tuna.db.clock import db_now
from tuna.db.engine import make_engine
from tuna.db.models import Job
from tuna.fleet.machines import add_machine
from tuna.jobs.load import load_jobs
from tuna.sessions import SessionSpec, create_session


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


def run_phase(cluster: dict, session: int, flag: str, workers: int, batch: int, logs: Path):
    env = dict(
        os.environ,
        TUNA_DB_URL=cluster["db_url"],
        TUNA_WORKER_DB_URL=cluster["worker_db_url"],
        TUNA_KNOWN_HOSTS=cluster["known_hosts"],
        TUNA_LOG_DIR=str(logs),
    )
    argv = [sys.executable, "-m", "tuna.cli", "go_fish", "--session", str(session), flag]
    argv += ["-w", str(workers), "--claim-batch", str(batch)]
    t0 = time.monotonic()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"go_fish failed:\n{proc.stdout}\n{proc.stderr}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2, help="compile workers per host")
    ap.add_argument("--batch", type=int, default=1, help="claim batch")
    ap.add_argument("--sleep", type=float, default=0.0, help="seconds per job (noop)")
    args = ap.parse_args()
    cdir = os.environ.get("TUNA_TEST_CLUSTER_DIR")
    if not cdir:
        raise SystemExit("set TUNA_TEST_CLUSTER_DIR to a running cluster (bin/test-cluster up DIR)")
    cluster = json.loads((Path(cdir) / "cluster.json").read_text())
    fresh_db(cluster["db_url"])
    db = open_database(cluster["db_url"])
    import_configs(db, driver_lines(args.configs), tag="bench", source="bench")
    session = create_session(
        db,
        SessionSpec(
            arch="gfx-bench",
            num_cu=1,
            backend="noop",
            docker_image=cluster["image"],
            environment={"NOOP_SLEEP_S": str(args.sleep)},
        ),
    )
    loaded = load_jobs(db, session.id, step="perf", tag="bench")
    for h in cluster["hosts"]:
        add_machine(
            db,
            h["address"],
            user=h["user"],
            arch="gfx-bench",
            gpus=[0],
            key_file=cluster["key_file"],
        )
    hosts = len(cluster["hosts"])
    logs = Path(cdir) / "bench-logs"
    print(f"{loaded.inserted} noop jobs, {hosts} hosts, sleep {args.sleep} s/job")
    print("| phase | workers | claim batch | wall s | first claim s | jobs/s | overhead s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for flag, per_host in (("--compile", args.workers), ("--run_perf", 1)):
        with db.session() as s:  # the database clock: job timestamps are on it
            t0 = s.execute(select(db_now())).scalar_one()
        wall = run_phase(cluster, session.id, flag, per_host, args.batch, logs)
        col = Job.compile_start if flag == "--compile" else Job.eval_start
        with db.session() as s:
            first = s.execute(select(func.min(col)).where(Job.session == session.id)).scalar_one()
        first_s = (first - t0).total_seconds() if first else float("nan")
        n = loaded.inserted
        workers = per_host * hosts
        ideal = n * args.sleep / workers
        print(
            f"| {flag[2:]} | {workers} | {args.batch} | {wall:.1f} | {first_s:.1f} | "
            f"{n / wall:.0f} | {wall - ideal:.1f} |"
        )
    db.dispose()


if __name__ == "__main__":
    main()
