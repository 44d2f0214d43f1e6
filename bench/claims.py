"""Claims: how fast workers claim and complete jobs on MySQL / MariaDB, and how that scales.

Not a test: figures go in bench/claims.md. It creates a scratch database on the server
named by the URL (dropped at the end unless --keep) and measures:

1. claim + complete throughput with 1, 4 and 16 worker processes (each claims a batch,
   records every job as compiled in one fenced transaction, repeats until the session is
   drained), with the latency of each claim (p50 / p99) and the bookkeeping time per job
   (time in claim + record, divided by the jobs);
2. the same with a backend that takes a fixed time per job (a sleep), so the workers offer
   about 1,300 jobs/s instead of saturating the machine: claim latency under load;
3. the same drain through the real worker loop (``run_worker``, noop backend);
4. the latency of one worker's claims when the claimed session holds 10^4 rows and when it
   holds 10^6 (generated with INSERT ... SELECT);
5. the EXPLAIN of the claim statement.

Bookkeeping per job is the time a worker spends in claims and records divided by its
jobs (wall clock: it includes waiting for a CPU when workers outnumber cores); CPU per job
is the workers' CPU time and, when the server runs on this machine, the server's.

    eval "$(bin/test-db start)"
    .venv/bin/python bench/claims.py --url "$TUNA_TEST_DB_URL"
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import secrets
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import create_engine, func, insert, select, text
from sqlalchemy.engine import make_url

from tuna.backends import CompileOutcome
from tuna.backends.noop import NoopBackend
from tuna.db import Database, migrate, open_database
from tuna.db.engine import make_engine
from tuna.db.models import ConvConfig, Job, Solver, Tensor, TuningSession
from tuna.jobs import Phase, claim_jobs, record_outcomes
from tuna.jobs.states import claim_query
from tuna.worker import run_worker

CTX = multiprocessing.get_context("fork")
N_CONFIGS = 1000
N_SOLVERS = 1000


@dataclass
class Stats:
    jobs: int = 0
    claim_s: list[float] = field(default_factory=list)
    record_s: float = 0.0
    started: float = 0.0
    ended: float = 0.0
    cpu_s: float = 0.0


# --- data -----------------------------------------------------------------------------------------


def make_database(server_url: str) -> str:
    name = f"tuna_bench_{secrets.token_hex(4)}"
    admin = create_engine(server_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    admin.dispose()
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    engine = make_engine(url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
    engine.dispose()
    return url


def drop_database(server_url: str, url: str) -> None:
    admin = create_engine(server_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{make_url(url).database}`")
    admin.dispose()


def base_rows(db: Database) -> None:
    """1000 configs (3x3, 56x56, batch 1..1000) and 1000 solvers of a 'noop' backend."""
    with db.session() as s:
        x = s.execute(
            insert(Tensor).values(
                num_dims=4,
                dim0=1,
                dim1=64,
                dim2=56,
                dim3=56,
                dim4=0,
                layout="NCHW",
                data_type="FP32",
            )
        ).inserted_primary_key[0]
        w = s.execute(
            insert(Tensor).values(
                num_dims=4,
                dim0=64,
                dim1=64,
                dim2=3,
                dim3=3,
                dim4=0,
                layout="NCHW",
                data_type="FP32",
            )
        ).inserted_primary_key[0]
        s.execute(
            insert(ConvConfig),
            [
                {
                    "fdb_key": f"bench-{i}",
                    "spatial_dim": 2,
                    "direction": "F",
                    "pad_h": 1,
                    "pad_w": 1,
                    "conv_stride_h": 1,
                    "conv_stride_w": 1,
                    "dilation_h": 1,
                    "dilation_w": 1,
                    "input_tensor": x,
                    "weight_tensor": w,
                    "out_layout": "NCHW",
                    "out_type": "FP32",
                    "driver": f"bench {i}",
                }
                for i in range(N_CONFIGS)
            ],
        )
        # Solver 0 is a real noop solver, so the worker loop can run the noop backend.
        names = ["NoopDirect"] + [f"BenchSolver{i}" for i in range(1, N_SOLVERS)]
        s.execute(insert(Solver), [{"backend": "noop", "name": n} for n in names])


def new_session(db: Database, configs: int, solvers: int) -> int:
    """A session with configs x solvers new jobs, generated by INSERT ... SELECT."""
    with db.session() as s:
        sid = s.execute(
            insert(TuningSession).values(
                arch="bench", num_cu=1, backend="noop", fingerprint="bench"
            )
        ).inserted_primary_key[0]
        s.execute(
            text(
                "INSERT INTO job (session, config, solver, step, state) "
                "SELECT :sid, c.id, v.id, 'perf', 'new' FROM "
                "(SELECT id FROM conv_config ORDER BY id LIMIT :nc) c CROSS JOIN "
                "(SELECT id FROM solver ORDER BY id LIMIT :ns) v"
            ),
            {"sid": sid, "nc": configs, "ns": solvers},
        )
    return int(sid)


def job_rows(db: Database) -> int:
    with db.session() as s:
        return int(s.execute(select(func.count()).select_from(Job)).scalar_one())


# --- measurements ---------------------------------------------------------------------------------


def claim_complete(
    db: Database,
    session: int,
    batch: int,
    limit_claims: int | None = None,
    work_s: float = 0.0,
) -> Stats:
    """Claim a batch, record it compiled, repeat until drained (or ``limit_claims`` claims).

    ``work_s`` stands in for the backend's time per job (a sleep: it costs no CPU).
    """
    owner = f"bench:{os.getpid()}"
    st = Stats(started=time.perf_counter())
    cpu0 = time.process_time()
    done = CompileOutcome()
    while limit_claims is None or len(st.claim_s) < limit_claims:
        t0 = time.perf_counter()
        jobs = claim_jobs(db, session, Phase.COMPILE, owner=owner, limit=batch)
        t1 = time.perf_counter()
        if not jobs:
            break
        st.claim_s.append(t1 - t0)
        if work_s:
            time.sleep(work_s * len(jobs))
        t2 = time.perf_counter()
        record_outcomes(db, owner, [(j, done) for j in jobs])
        st.record_s += time.perf_counter() - t2
        st.jobs += len(jobs)
    st.ended = time.perf_counter()
    st.cpu_s = time.process_time() - cpu0
    return st


class BenchBackend(NoopBackend):
    """The noop backend, for which every one of the bench's solvers applies."""

    def applicability(self, problem: Any, solver: str) -> str | None:
        return None


def worker_db(url: str) -> Database:
    """The workers' database; ``--lean-pool`` drops the pool's per-transaction round trips
    (the ping on checkout and the ROLLBACK on return) to show what they cost."""
    if os.environ.get("BENCH_LEAN_POOL"):
        return Database(url, make_engine(url, pool_pre_ping=False, pool_reset_on_return=None))
    return open_database(url)


def _worker(
    url: str, session: int, batch: int, loop: bool, work_s: float, go: Any, out: Any
) -> None:
    db = worker_db(url)
    go.wait()
    if loop:
        t0 = time.perf_counter()
        r = run_worker(
            db,
            session,
            "compile",
            backend=BenchBackend(sleep_s=work_s),
            burst=True,
            claim_batch=batch,
            idle_sleep=0.01,
            handle_signals=False,
        )
        out.put(Stats(jobs=r.done, started=t0, ended=time.perf_counter()))
    else:
        out.put(claim_complete(db, session, batch, work_s=work_s))
    db.dispose()


def run_processes(
    url: str, session: int, n: int, batch: int, loop: bool, work_s: float = 0.0
) -> list[Stats]:
    go, out = CTX.Event(), CTX.Queue()
    procs = [
        CTX.Process(target=_worker, args=(url, session, batch, loop, work_s, go, out))
        for _ in range(n)
    ]
    for p in procs:
        p.start()
    time.sleep(1.0)  # let every process import and connect before the start signal
    go.set()
    stats = [out.get() for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a worker process failed (exit {p.exitcode})")
    return stats


def server_cpu_s(db: Database) -> float | None:
    """CPU seconds the database server used so far, when it runs on this machine."""
    with db.engine.connect() as conn:
        pid_file = conn.exec_driver_sql("SELECT @@pid_file").scalar()
    try:
        with open(str(pid_file)) as f:
            pid = int(f.read().strip())
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_per_job(db: Database, server0: float | None, stats: list[Stats]) -> str:
    """Client (workers) and server CPU per job, in ms."""
    jobs = sum(s.jobs for s in stats)
    client = sum(s.cpu_s for s in stats) / jobs * 1000
    server1 = server_cpu_s(db)
    if server0 is None or server1 is None:
        return f"client {client:.2f} ms"
    return f"client {client:.2f} + server {(server1 - server0) / jobs * 1000:.2f} ms"


def lock_waits(db: Database) -> int:
    """InnoDB row lock waits since the server started (all databases)."""
    with db.engine.connect() as conn:
        row = conn.exec_driver_sql("SHOW GLOBAL STATUS LIKE 'Innodb_row_lock_waits'").first()
    return int(row[1]) if row else 0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def summarize(stats: list[Stats]) -> dict[str, float]:
    jobs = sum(s.jobs for s in stats)
    wall = max(s.ended for s in stats) - min(s.started for s in stats)
    claims = [c for s in stats for c in s.claim_s]
    out = {"jobs": jobs, "wall_s": wall, "jobs_per_s": jobs / wall}
    if claims:
        busy = sum(sum(s.claim_s) + s.record_s for s in stats)
        out |= {
            "p50_ms": pct(claims, 0.5),
            "p99_ms": pct(claims, 0.99),
            "claims": len(claims),
            "bookkeeping_ms": busy / jobs * 1000,
        }
    return out


def explain(db: Database, session: int, batch: int) -> list[Any]:
    with db.engine.connect() as conn:
        sql = str(
            claim_query(session, Phase.COMPILE, batch).compile(
                conn, compile_kwargs={"literal_binds": True}
            )
        )
        rows = conn.exec_driver_sql("EXPLAIN " + sql.replace("\n", " ")).mappings().all()
    print("  " + " ".join(sql.split()))
    for r in rows:
        print(
            "  "
            + ", ".join(
                f"{k}={r[k]}"
                for k in (
                    "id",
                    "select_type",
                    "table",
                    "type",
                    "possible_keys",
                    "key",
                    "key_len",
                    "ref",
                    "rows",
                    "Extra",
                )
            )
        )
    return list(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--url",
        default=os.environ.get("TUNA_TEST_DB_URL"),
        help="MariaDB/MySQL server URL (default: $TUNA_TEST_DB_URL)",
    )
    ap.add_argument("--workers", default="1,4,16", help="process counts (default 1,4,16)")
    ap.add_argument("--jobs", type=int, default=20_000, help="jobs per throughput run")
    ap.add_argument("--batch", type=int, default=16, help="jobs per claim (default 16)")
    ap.add_argument(
        "--latency-claims",
        type=int,
        default=300,
        help="claims timed for the 10^4 / 10^6 comparison",
    )
    ap.add_argument("--big", type=int, default=1_000_000, help="rows of the big session")
    ap.add_argument(
        "--work-ms",
        type=float,
        default=12.0,
        help="simulated backend time per job for the paced run (default 12 ms)",
    )
    ap.add_argument(
        "--lean-pool",
        action="store_true",
        help="workers' engines without pre-ping and reset-on-return (for comparison)",
    )
    ap.add_argument("--skip-latency", action="store_true", help="skip the 10^4 / 10^6 part")
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = ap.parse_args()
    if not args.url or make_url(args.url).get_backend_name() not in ("mysql", "mariadb"):
        sys.exit("give --url mysql+pymysql://user:pass@host:port/db (or set TUNA_TEST_DB_URL)")

    if args.lean_pool:
        os.environ["BENCH_LEAN_POOL"] = "1"
    url = make_database(args.url)
    db = worker_db(url)
    try:
        with db.engine.connect() as conn:
            version = conn.exec_driver_sql("SELECT VERSION()").scalar()
        print(
            f"server {version}; {os.cpu_count()} CPUs; batch {args.batch}; "
            f"load average {os.getloadavg()[0]:.2f}" + ("; lean pool" if args.lean_pool else "")
        )
        base_rows(db)

        if not args.skip_latency:
            print(
                f"\n1. latency of one worker's claims vs rows in the claimed session "
                f"({args.latency_claims} claims of {args.batch})"
            )
            small = new_session(db, 10, 1000)
            st = claim_complete(db, small, args.batch, args.latency_claims)
            s_small = summarize([st])
            print(
                f"  10^4 rows (table {job_rows(db):,}): p50 {s_small['p50_ms']:.2f} ms, "
                f"p99 {s_small['p99_ms']:.2f} ms"
            )
            explain(db, small, args.batch)
            t0 = time.perf_counter()
            big = new_session(db, args.big // N_SOLVERS, N_SOLVERS)
            print(f"  (generated {args.big:,} rows in {time.perf_counter() - t0:.1f} s)")
            with db.engine.connect() as conn:
                conn.exec_driver_sql("ANALYZE TABLE job")
            st = claim_complete(db, big, args.batch, args.latency_claims)
            s_big = summarize([st])
            print(
                f"  10^6 rows (table {job_rows(db):,}): p50 {s_big['p50_ms']:.2f} ms, "
                f"p99 {s_big['p99_ms']:.2f} ms; ratio p50 {s_big['p50_ms'] / s_small['p50_ms']:.2f}"
                f", p99 {s_big['p99_ms'] / s_small['p99_ms']:.2f}"
            )
            explain(db, big, args.batch)

        print(
            f"\n2. claim + complete, {args.jobs:,} jobs, batch {args.batch} "
            f"(table {job_rows(db):,} rows)"
        )
        print("  workers   jobs/s   claim p50   claim p99   bookkeeping/job   CPU/job")
        for n in (int(w) for w in args.workers.split(",")):
            session = new_session(db, args.jobs // N_SOLVERS, N_SOLVERS)
            server0, waits0 = server_cpu_s(db), lock_waits(db)
            stats = run_processes(url, session, n, args.batch, loop=False)
            r = summarize(stats)
            print(
                f"  {n:>7} {r['jobs_per_s']:>8.0f} {r['p50_ms']:>8.2f} ms {r['p99_ms']:>8.2f} ms"
                f" {r['bookkeeping_ms']:>12.2f} ms   {cpu_per_job(db, server0, stats)}"
                f" ({lock_waits(db) - waits0} row lock waits)"
            )

        n = max(int(w) for w in args.workers.split(","))
        print(
            f"\n3. paced: {n} workers whose backend takes {args.work_ms:g} ms per job "
            f"(a sleep), so the offered load is about {n / args.work_ms * 1000:,.0f} jobs/s"
        )
        session = new_session(db, args.jobs // N_SOLVERS, N_SOLVERS)
        server0, waits0 = server_cpu_s(db), lock_waits(db)
        stats = run_processes(url, session, n, args.batch, False, args.work_ms / 1000)
        r = summarize(stats)
        print(
            f"  {r['jobs_per_s']:.0f} jobs/s, claim p50 {r['p50_ms']:.2f} ms, "
            f"p99 {r['p99_ms']:.2f} ms, bookkeeping {r['bookkeeping_ms']:.2f} ms/job, "
            f"CPU/job {cpu_per_job(db, server0, stats)} ({lock_waits(db) - waits0} row lock waits)"
        )

        print(
            f"\n4. the worker loop (run_worker, noop backend), {args.jobs:,} jobs, "
            f"claim batch {args.batch}"
        )
        for n in (int(w) for w in args.workers.split(",")):
            session = new_session(db, args.jobs // N_SOLVERS, N_SOLVERS)
            r = summarize(run_processes(url, session, n, args.batch, loop=True))
            print(
                f"  {n:>7} workers: {r['jobs_per_s']:.0f} jobs/s ({r['jobs']:,} in "
                f"{r['wall_s']:.1f} s)"
            )
    finally:
        db.dispose()
        if not args.keep:
            drop_database(args.url, url)


if __name__ == "__main__":
    main()
