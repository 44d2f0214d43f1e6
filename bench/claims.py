"""Claims: how fast workers claim and complete jobs on MySQL / MariaDB, and how that scales.

Not a test: figures go in bench/claims.md. It creates a scratch database on the server
named by the URL (dropped at the end unless --keep) and measures:

0. the commands one claim and one record send to the server (round trips);
1. the latency of one worker's claims when the claimed session holds 10^4 rows and when it
   holds 10^6 (generated with INSERT ... SELECT), with the EXPLAIN of the claim statement
   and its server-side time and pages touched (ANALYZE FORMAT=JSON);
2. saturation: claim + complete with 1, 4 and 16 worker processes in a tight loop (each
   claims a batch, records every job as compiled in one fenced transaction, repeats until
   the session is drained): throughput, claim latency p50 / p95 / p99 / max, bookkeeping
   per job, CPU per job, and how many processes were waiting for a CPU; beside each, the
   server's raw commit rate with as many connections, taken just before and just after
   (one-row UPDATE + COMMIT in a tight loop, raw PyMySQL), and the share of "two
   transactions a claim" (half that rate, times the batch) the claims and records reached;
3. paced: 16 workers whose backend takes a random 20 to 50 ms per job (a sleep, no CPU),
   as real compile and evaluate jobs take time: claim latency when the machine is not
   saturated, with one job per claim (the worker's default) and with the batch;
4. the same drain as 2 through the real worker loop (``run_worker``, noop backend).

What is timed: *claim latency* is the client-side wall time of one ``claim_jobs`` call
(one transaction: SELECT ... FOR UPDATE SKIP LOCKED, UPDATE, COMMIT, and the Python around
them). Every worker first claims and records one batch of a warm-up session, before the
start signal, so that connecting and compiling the statements are not timed.
*Bookkeeping/job* is the time a worker spends in claims and records divided by its jobs
(wall clock: it includes waiting for a CPU when processes outnumber cores); *CPU/job* is
the workers' CPU time and, when the server runs on this machine, the server's.
*Run queue* is the number of runnable processes (``/proc/loadavg``, sampled every 10 ms
during the run, the sampler itself excluded) and *CPU pressure* the share of the run
during which some process waited for a CPU (``/proc/pressure/cpu``).

``--server-profile`` repeats the saturation runs with ``SET profiling=1`` on every worker
connection and reports the server-side time of each statement (``SHOW PROFILES``, each
worker's last 100 statements); profiling costs some server CPU, so those figures come
from runs of their own.

    eval "$(bin/test-db start)"
    .venv/bin/python bench/claims.py --url "$TUNA_TEST_DB_URL"
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from scratch import drop_database, scratch_database
from sqlalchemy import event, func, insert, select, text
from sqlalchemy.engine import make_url

from tuna.backends import CompileOutcome
from tuna.backends.noop import NoopBackend
from tuna.db import Database, open_database
from tuna.db.models import ConvConfig, Job, Solver, Tensor, TuningSession
from tuna.jobs import Phase, claim_jobs, record_and_claim, record_outcomes
from tuna.jobs.claims import claim_query
from tuna.worker import run_worker

CTX = multiprocessing.get_context("fork")
N_CONFIGS = 1000
N_SOLVERS = 1000
SEPARATE = False  # --separate: record in a transaction of its own, as before record_and_claim


@dataclass
class Stats:
    jobs: int = 0
    claim_s: list[float] = field(default_factory=list)
    record_s: float = 0.0
    started: float = 0.0
    ended: float = 0.0
    cpu_s: float = 0.0
    server_ms: dict[str, list[float]] = field(default_factory=dict)


# --- data -----------------------------------------------------------------------------------------


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


def sized_session(db: Database, jobs: int) -> int:
    """A session of about ``jobs`` new jobs (whole configs of up to N_SOLVERS solvers)."""
    solvers = min(N_SOLVERS, max(1, jobs))
    return new_session(db, max(1, -(-jobs // solvers)), solvers)


def job_rows(db: Database) -> int:
    with db.session() as s:
        return int(s.execute(select(func.count()).select_from(Job)).scalar_one())


# --- one worker -----------------------------------------------------------------------------------


def claim_complete(
    db: Database,
    session: int,
    batch: int,
    limit_claims: int | None = None,
    work_ms: tuple[float, float] = (0.0, 0.0),
) -> Stats:
    """Claim a batch, record it compiled, repeat until drained (or ``limit_claims`` claims).

    As the worker does, a batch is recorded in the transaction of the next claim
    (``record_and_claim``); with ``--separate`` in one of its own, as before. Claim
    latency then includes the previous batch's record. ``work_ms`` is the range of the
    backend's time per job, drawn at random for each job (a sleep: it costs no CPU).
    """
    owner = f"bench:{os.getpid()}"
    st = Stats(started=time.perf_counter())
    cpu0 = time.process_time()
    done = CompileOutcome()
    pending: list[Any] = []  # recorded by the next claim, as the worker does
    while limit_claims is None or len(st.claim_s) < limit_claims:
        t0 = time.perf_counter()
        if pending:
            _rec, jobs = record_and_claim(db, owner, pending, session, Phase.COMPILE, limit=batch)
            pending = []
        else:
            jobs = claim_jobs(db, session, Phase.COMPILE, owner=owner, limit=batch)
        t1 = time.perf_counter()
        if not jobs:
            break
        st.claim_s.append(t1 - t0)
        if work_ms[1] > 0:
            time.sleep(sum(random.uniform(*work_ms) for _ in jobs) / 1000)
        if SEPARATE:
            t2 = time.perf_counter()
            record_outcomes(db, owner, [(j, done) for j in jobs])
            st.record_s += time.perf_counter() - t2
        else:
            pending = [(j, done) for j in jobs]
        st.jobs += len(jobs)
    if pending:
        record_outcomes(db, owner, pending)
    st.ended = time.perf_counter()
    st.cpu_s = time.process_time() - cpu0
    return st


class BenchBackend(NoopBackend):
    """The noop backend, for which every one of the bench's solvers applies."""

    def applicability(self, problem: Any, solver: str) -> str | None:
        return None


def worker_db(url: str, profile: bool = False) -> Database:
    """The workers' database; ``profile`` turns on SHOW PROFILES for its connections."""
    db = open_database(url, check_schema=False)
    if profile:

        @event.listens_for(db.engine, "connect")
        def _profiling(dbapi_conn: Any, _record: Any) -> None:
            with dbapi_conn.cursor() as cur:
                cur.execute("SET profiling = 1, profiling_history_size = 100")

    return db


def server_profile(db: Database) -> dict[str, list[float]]:
    """Server-side time (ms) of this process's last 100 statements, by statement kind."""
    out: dict[str, list[float]] = defaultdict(list)
    with db.engine.connect() as conn:
        for _qid, duration, query in conn.exec_driver_sql("SHOW PROFILES"):
            words = " ".join(str(query).split())
            kind = (
                "claim SELECT ... FOR UPDATE SKIP LOCKED"
                if "SKIP LOCKED" in words
                else "claim UPDATE (new -> compile_start)"
                if words.startswith("UPDATE job SET state='compile_start'")
                else "record UPDATE (compile_start -> compiled)"
                if words.startswith("UPDATE job SET state='compiled'")
                else words.split(" ")[0]
            )
            out[kind].append(float(duration) * 1000)
    return dict(out)


@dataclass(frozen=True)
class Run:
    """What one process of a run does: ``loop`` runs the worker loop instead of the bench's."""

    session: int
    warmup: int
    batch: int
    loop: bool = False
    work_ms: tuple[float, float] = (0.0, 0.0)
    stagger: bool = False
    profile: bool = False


def _worker(url: str, run: Run, ready: Any, go: Any, out: Any) -> None:
    random.seed()
    db = worker_db(url, run.profile)
    # Warm up: connect, compile the statements, take one batch of another session.
    claim_complete(db, run.warmup, run.batch, limit_claims=1)
    ready.release()
    go.wait()
    if run.stagger:  # real workers do not move in lock step: start somewhere in a cycle
        time.sleep(random.uniform(0, run.batch * sum(run.work_ms) / 2) / 1000)
    if run.loop:
        t0 = time.perf_counter()
        r = run_worker(
            db,
            run.session,
            "compile",
            backend=BenchBackend(),
            burst=True,
            claim_batch=run.batch,
            idle_sleep=0.01,
            handle_signals=False,
        )
        st = Stats(jobs=r.done, started=t0, ended=time.perf_counter())
    else:
        st = claim_complete(db, run.session, run.batch, work_ms=run.work_ms)
    if run.profile:
        st.server_ms = server_profile(db)
    out.put(st)
    db.dispose()


class CpuQueue:
    """Samples the run queue (/proc/loadavg) and CPU pressure (/proc/pressure/cpu), and
    InnoDB's purge backlog (history length) every 10th sample."""

    def __init__(self, db: Database, interval: float = 0.01) -> None:
        self.db, self.interval = db, interval
        self.samples: list[int] = []
        self.history: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        i = 0
        while not self._stop.wait(self.interval):
            with open("/proc/loadavg") as f:
                running = int(f.read().split()[3].split("/")[0])
            self.samples.append(running - 1)  # not counting this sampler
            i += 1
            if i % 10 == 0:
                self.history.append(history_length(self.db) or 0)

    @staticmethod
    def _pressure_us() -> int | None:
        try:
            with open("/proc/pressure/cpu") as f:
                some = f.readline().split()
        except OSError:
            return None
        return int(some[-1].split("=")[1])

    def __enter__(self) -> CpuQueue:
        self._t0, self._p0 = time.perf_counter(), self._pressure_us()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        p1, wall = self._pressure_us(), time.perf_counter() - self._t0
        self.pressure = None if p1 is None or self._p0 is None else (p1 - self._p0) / 1e6 / wall

    def describe(self) -> str:
        if not self.samples:
            return "run queue: no samples"
        q = sorted(self.samples)
        text = (
            f"run queue mean {sum(q) / len(q):.1f}, p50 {q[len(q) // 2]}, "
            f"p95 {q[int(0.95 * len(q))]}, max {q[-1]}"
        )
        if self.pressure is not None:
            text += f"; CPU pressure {self.pressure:.0%}"
        if self.history:
            h = sorted(self.history)
            text += f"; purge backlog median {h[len(h) // 2]}, max {h[-1]} transactions"
        return text


def history_length(db: Database) -> int | None:
    """Transactions whose undo InnoDB has not purged yet (their old index entries stay)."""
    with db.engine.connect() as conn:
        return conn.exec_driver_sql(
            "SELECT `count` FROM information_schema.INNODB_METRICS "
            "WHERE name = 'trx_rseg_history_len'"
        ).scalar()


def run_processes(url: str, n: int, run: Run) -> tuple[list[Stats], CpuQueue]:
    ready, go, out = CTX.Semaphore(0), CTX.Event(), CTX.Queue()
    procs = [CTX.Process(target=_worker, args=(url, run, ready, go, out)) for _ in range(n)]
    for p in procs:
        p.start()
    for _ in procs:  # every process connects and warms up first
        if not ready.acquire(timeout=120):
            raise SystemExit("a worker process did not start")
    # Start every run with the previous one's old index entries purged.
    db = worker_db(url)
    deadline = time.monotonic() + 20
    while (history_length(db) or 0) > 100 and time.monotonic() < deadline:
        time.sleep(0.2)
    with CpuQueue(db) as queue:
        go.set()
        stats = [out.get() for _ in procs]
    db.dispose()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a worker process failed (exit {p.exitcode})")
    return stats, queue


# --- the server's commit rate ---------------------------------------------------------------------


def _committer(url: str, slot: int, seconds: float, ready: Any, go: Any, out: Any) -> None:
    """One raw PyMySQL connection committing a one-row UPDATE of its own row in a tight loop."""
    import pymysql

    u = make_url(url)
    conn = pymysql.connect(
        host=u.host or "127.0.0.1",
        port=u.port or 3306,
        user=u.username or "",
        password=u.password or "",
        database=u.database,
        autocommit=False,
    )
    with conn.cursor() as cur:
        for _ in range(20):  # warm: the row in the buffer pool, the statement parsed
            cur.execute("UPDATE bench_commit SET n = n + 1 WHERE id = %s", (slot,))
            conn.commit()
        ready.release()
        go.wait()
        commits, t0 = 0, time.perf_counter()
        deadline = t0 + seconds
        while time.perf_counter() < deadline:
            cur.execute("UPDATE bench_commit SET n = n + 1 WHERE id = %s", (slot,))
            conn.commit()
            commits += 1
    out.put((commits, t0, time.perf_counter()))
    conn.close()


def raw_commits(db: Database, url: str, n: int, seconds: float) -> float:
    """Durable commits/s the server takes from ``n`` raw PyMySQL connections, each committing
    a one-row UPDATE (by primary key, its own row) in a tight loop: the most transactions a
    second that workers on this server could commit, the bar claims and records are held to
    (a batch-1 job of the worker's two transactions, a claim and a record, is half of it)."""
    with db.engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE IF NOT EXISTS bench_commit (id INT PRIMARY KEY, n BIGINT NOT NULL)"
        )
        conn.exec_driver_sql("DELETE FROM bench_commit")
        conn.exec_driver_sql(
            "INSERT INTO bench_commit VALUES " + ", ".join(f"({i}, 0)" for i in range(n))
        )
    ready, go, out = CTX.Semaphore(0), CTX.Event(), CTX.Queue()
    procs = [
        CTX.Process(target=_committer, args=(url, i, seconds, ready, go, out)) for i in range(n)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        if not ready.acquire(timeout=120):
            raise SystemExit("a committing process did not start")
    go.set()
    done = [out.get() for _ in procs]
    for p in procs:
        p.join()
    wall = max(e for _, _, e in done) - min(s for _, s, _ in done)
    return sum(c for c, _, _ in done) / wall


# --- figures --------------------------------------------------------------------------------------


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
            "p95_ms": pct(claims, 0.95),
            "p99_ms": pct(claims, 0.99),
            "max_ms": max(claims) * 1000,
            "claims": len(claims),
            "bookkeeping_ms": busy / jobs * 1000,
        }
    return out


def latencies(r: dict[str, float]) -> str:
    return (
        f"p50 {r['p50_ms']:.2f}, p95 {r['p95_ms']:.2f}, p99 {r['p99_ms']:.2f}, "
        f"max {r['max_ms']:.1f} ms ({int(r['claims']):,} claims)"
    )


def round_trips(db: Database, session: int, batch: int) -> None:
    """The commands one claim and one record send, seen through PyMySQL's connection methods
    (``query``, ``commit``, ``rollback``, ``ping``): what the pool adds shows up too."""
    import pymysql

    sent: list[str] = []
    cls = pymysql.connections.Connection
    saved = {name: getattr(cls, name) for name in ("query", "commit", "rollback", "ping")}

    def watch(name: str) -> Any:
        def watched(self: Any, *args: Any, **kwargs: Any) -> Any:
            sent.append(" ".join(str(args[0]).split())[:60] if name == "query" else name.upper())
            return saved[name](self, *args, **kwargs)

        return watched

    owner = "bench:round-trips"
    claim_jobs(db, session, Phase.COMPILE, owner=owner, limit=batch)  # a pooled connection
    try:
        for name in saved:
            setattr(cls, name, watch(name))
        jobs = claim_jobs(db, session, Phase.COMPILE, owner=owner, limit=batch)
        claim, sent[:] = list(sent), []
        record_outcomes(db, owner, [(j, CompileOutcome()) for j in jobs])
        record = list(sent)
    finally:
        for name, method in saved.items():
            setattr(cls, name, method)
    for what, cmds in (("claim", claim), ("record", record)):
        print(f"  one {what} of {len(jobs)}: {len(cmds)} round trips")
        for c in cmds:
            print(f"    {c}")


def record_cost(db: Database, batch: int, cycles: int) -> None:
    """Client CPU (``time.process_time``) and wall time of ``record_outcomes`` alone, per
    job, over ``cycles`` claim + record cycles of one process (the claims not counted)."""
    session = sized_session(db, (cycles + 20) * batch)
    owner = "bench:record-cost"
    done = CompileOutcome()
    for _ in range(20):  # connect, compile the statements
        jobs = claim_jobs(db, session, Phase.COMPILE, owner=owner, limit=batch)
        record_outcomes(db, owner, [(j, done) for j in jobs])
    cpu, wall = [], []
    for _ in range(cycles):
        jobs = claim_jobs(db, session, Phase.COMPILE, owner=owner, limit=batch)
        c0, w0 = time.process_time(), time.perf_counter()
        record_outcomes(db, owner, [(j, done) for j in jobs])
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    wall.sort()
    print(
        f"  record of {batch}: client CPU {1000 * sum(cpu) / cycles / batch:.3f} ms/job, "
        f"wall p50 {1000 * wall[len(wall) // 2]:.3f} ms per record ({cycles} records)"
    )


def explain(db: Database, session: int, batch: int) -> None:
    """EXPLAIN of the claim, and ANALYZE FORMAT=JSON: server time and pages it touched."""
    keys = [
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
    ]
    with db.engine.connect() as conn:
        sql = str(
            claim_query(session, Phase.COMPILE, batch).compile(
                conn, compile_kwargs={"literal_binds": True}
            )
        )
        sql = " ".join(sql.split())
        rows = conn.exec_driver_sql("EXPLAIN " + sql).mappings().all()
        analyzed = json.loads(str(conn.exec_driver_sql("ANALYZE FORMAT=JSON " + sql).scalar()))
        conn.rollback()  # ANALYZE ran the claim: release its locks
    print("  " + sql)
    for r in rows:
        print("  " + ", ".join(f"{k}={r[k]}" for k in keys))
    block = analyzed["query_block"]
    table = block.get("table") or block.get("nested_loop", [{}])[0].get("table", {})
    optimize = analyzed.get("query_optimization", {}).get("r_total_time_ms", 0)
    print(
        f"  ANALYZE: optimize {optimize:.3f} ms, execute {block.get('r_total_time_ms', 0):.3f} "
        f"ms, r_rows {table.get('r_rows')}, "
        f"pages accessed {table.get('r_engine_stats', {}).get('pages_accessed')}"
    )


def throughput_line(db: Database, url: str, n: int, run: Run) -> dict[str, float]:
    server0, waits0 = server_cpu_s(db), lock_waits(db)
    stats, queue = run_processes(url, n, run)
    r = summarize(stats)
    print(
        f"  {n:>2} workers: {r['jobs_per_s']:,.0f} jobs/s; claim {latencies(r)}; "
        f"bookkeeping {r['bookkeeping_ms']:.2f} ms/job; CPU/job {cpu_per_job(db, server0, stats)}"
        f"; {lock_waits(db) - waits0} row lock waits; {queue.describe()}"
    )
    if run.profile:
        merged: dict[str, list[float]] = defaultdict(list)
        for s in stats:
            for kind, ms in s.server_ms.items():
                merged[kind].extend(ms)
        for kind, ms in sorted(merged.items(), key=lambda kv: -len(kv[1])):
            ms.sort()
            print(
                f"      server {kind}: p50 {ms[len(ms) // 2]:.3f}, "
                f"p99 {ms[min(len(ms) - 1, int(0.99 * len(ms)))]:.3f} ms ({len(ms)} statements)"
            )
    return r


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
        default="20-50",
        help="range of the simulated backend time per job for the paced runs (default 20-50)",
    )
    ap.add_argument(
        "--paced-batches",
        default="1,16",
        help="jobs per claim in the paced runs (default 1,16; 1 is run_worker's default)",
    )
    ap.add_argument("--paced-jobs", type=int, default=8_000, help="jobs per paced run")
    ap.add_argument(
        "--server-profile",
        action="store_true",
        help="add a 16-worker run that reports server-side statement times (SHOW PROFILES)",
    )
    ap.add_argument("--skip-latency", action="store_true", help="skip the 10^4 / 10^6 part")
    ap.add_argument("--skip-paced", action="store_true", help="skip the paced runs")
    ap.add_argument("--skip-loop", action="store_true", help="skip the worker-loop runs")
    ap.add_argument(
        "--records-only",
        action="store_true",
        help="only 0., the client CPU of a record (batch 1 and --batch) and 2. (saturation)",
    )
    ap.add_argument(
        "--separate",
        action="store_true",
        help="record each batch in a transaction of its own (as workers did before "
        "record_and_claim) instead of in the next claim's",
    )
    ap.add_argument(
        "--raw-seconds",
        type=float,
        default=3.0,
        help="seconds of raw commits measured before and after each saturation run (default 3)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = ap.parse_args()
    global SEPARATE
    SEPARATE = args.separate
    if not args.url or make_url(args.url).get_backend_name() not in ("mysql", "mariadb"):
        sys.exit("give --url mysql+pymysql://user:pass@host:port/db (or set TUNA_TEST_DB_URL)")
    workers = [int(w) for w in args.workers.split(",")]
    lo, _, hi = args.work_ms.partition("-")
    work_ms = (float(lo), float(hi or lo))

    name, url = scratch_database(args.url)
    db = worker_db(url)
    try:
        with db.engine.connect() as conn:
            version = conn.exec_driver_sql("SELECT VERSION()").scalar()
            flush = conn.exec_driver_sql("SELECT @@innodb_flush_log_at_trx_commit").scalar()
        # 1: every COMMIT waits for its log flush (durable); the raw commit rate depends on it.
        print(
            f"server {version}, innodb_flush_log_at_trx_commit={flush} "
            f"({'durable' if str(flush) == '1' else 'NOT durable'}); "
            f"{os.cpu_count()} CPUs; batch {args.batch}; "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at start"
        )
        base_rows(db)
        print("\n0. what one claim and one record send to the server (one worker, warm pool)")
        round_trips(db, sized_session(db, 4 * args.batch), args.batch)

        def warmup(n: int, batch: int) -> int:
            return sized_session(db, n * batch)

        print("\n0b. what one record costs the client (one worker)")
        for batch in sorted({1, args.batch}):
            record_cost(db, batch, 1000 // batch)
        if args.records_only:
            args.skip_latency = args.skip_paced = args.skip_loop = True

        if not args.skip_latency:
            print(
                f"\n1. latency of one worker's claims vs rows in the claimed session "
                f"({args.latency_claims} claims of {args.batch}, each followed by its record)"
            )
            small = new_session(db, 10, 1000)
            claim_complete(db, small, args.batch, 20)  # connect, compile
            s_small = summarize([claim_complete(db, small, args.batch, args.latency_claims)])
            print(f"  10^4 rows (table {job_rows(db):,}): claim {latencies(s_small)}")
            explain(db, small, args.batch)
            t0 = time.perf_counter()
            big = new_session(db, args.big // N_SOLVERS, N_SOLVERS)
            print(f"  (generated {args.big:,} rows in {time.perf_counter() - t0:.1f} s)")
            with db.engine.connect() as conn:
                conn.exec_driver_sql("ANALYZE TABLE job")
            claim_complete(db, big, args.batch, 20)
            s_big = summarize([claim_complete(db, big, args.batch, args.latency_claims)])
            print(
                f"  10^6 rows (table {job_rows(db):,}): claim {latencies(s_big)}; ratio p50 "
                f"{s_big['p50_ms'] / s_small['p50_ms']:.2f}, "
                f"p99 {s_big['p99_ms'] / s_small['p99_ms']:.2f}"
            )
            explain(db, big, args.batch)

        print(
            f"\n2. saturation: claim + complete in a tight loop, {args.jobs:,} jobs, "
            f"batch {args.batch} (table {job_rows(db):,} rows)"
        )
        for n in workers:
            before = raw_commits(db, url, n, args.raw_seconds)
            session = sized_session(db, args.jobs)
            r = throughput_line(db, url, n, Run(session, warmup(n, args.batch), args.batch))
            after = raw_commits(db, url, n, args.raw_seconds)
            # Two transactions (a claim, a record) per claim of args.batch jobs.
            limit = (before + after) / 2 / 2 * args.batch
            print(
                f"      raw commits/s of {n} connection(s) just before / after: {before:,.0f} / "
                f"{after:,.0f}; at two transactions a claim of {args.batch} {limit:,.0f} jobs/s; "
                f"claim + record reached {r['jobs_per_s'] / limit:.0%} of it"
            )
        if args.server_profile:
            print("  again with SHOW PROFILES on (server-side time of each statement):")
            for n in workers:
                session = sized_session(db, args.jobs)
                run = Run(session, warmup(n, args.batch), args.batch, profile=True)
                throughput_line(db, url, n, run)

        if not args.skip_paced:
            n = max(workers)
            print(
                f"\n3. paced: {n} workers whose backend takes {work_ms[0]:g} to {work_ms[1]:g} ms "
                f"per job (a sleep, drawn per job), starts staggered, {args.paced_jobs:,} jobs"
            )
            for batch in (int(b) for b in args.paced_batches.split(",")):
                offered = n / (sum(work_ms) / 2) * 1000
                print(f"  batch {batch} (offered about {offered:,.0f} jobs/s):")
                session = sized_session(db, args.paced_jobs)
                run = Run(session, warmup(n, batch), batch, work_ms=work_ms, stagger=True)
                throughput_line(db, url, n, run)

        if not args.skip_loop:
            print(
                f"\n4. the worker loop (run_worker, noop backend), {args.jobs:,} jobs, "
                f"claim batch {args.batch}"
            )
            for n in workers:
                session = sized_session(db, args.jobs)
                stats, queue = run_processes(
                    url, n, Run(session, warmup(n, args.batch), args.batch, loop=True)
                )
                r = summarize(stats)
                print(
                    f"  {n:>2} workers: {r['jobs_per_s']:,.0f} jobs/s ({r['jobs']:,} in "
                    f"{r['wall_s']:.1f} s); {queue.describe()}"
                )
        print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    finally:
        db.dispose()
        if not args.keep:
            drop_database(args.url, name)


if __name__ == "__main__":
    main()
