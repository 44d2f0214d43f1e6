"""Measurements: what keeping every candidate costs, in bytes and in record time.

Not a test: figures go in bench/measurements.md. It creates a scratch database on the server
named by the URL (dropped at the end unless --keep) and measures:

1. **size**: bytes per ``measurement`` row (data and indexes, InnoDB's own figures after
   ANALYZE) with ``--rows`` rows shaped as a tuning fleet makes them (64 candidates a job,
   4 solvers a config, 8 platforms, 36-character params);
2. **record**: client CPU and wall time of one ``record_outcomes`` of one evaluated job
   carrying 0, 1, 16 and 64 measurements (batch 1, each its own transaction);
3. **checkpoint**: one ``save_progress`` of one measurement (the fenced save an evaluation
   makes while it runs);
4. **resume**: ``measured_before`` of one job's (session, config, solver) in the big table;
5. **platform**: ``collect()`` here and ``report_platform`` (stored before: a lookup).

    .venv/bin/python bench/measurements.py --url mysql+pymysql://root@127.0.0.1:3306/mysql
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from scratch import drop_database, scratch_database
from sqlalchemy import insert, text

from tuna.backends import CompileOutcome, EvalOutcome, FindResult
from tuna.backends.base import Measurement as M
from tuna.db import Database, open_database
from tuna.db.models import ConvConfig, Solver, Tensor, TuningSession
from tuna.jobs import Phase, claim_jobs, record_outcomes
from tuna.jobs.measurements import MeasuredOn, measured_before, save_progress
from tuna.platforms import report_platform
from tuna.platforms.collect import collect

N_CONFIGS = 2000
FIND = FindResult(0.5, 0, "direct", "1,2,16,2,1")


def base_rows(db: Database) -> int:
    """Configs, four solvers and a session; returns the session's id."""
    with db.session() as s:
        x, w = (
            s.execute(
                insert(Tensor).values(
                    num_dims=4, dim0=d0, dim1=64, dim2=d2, dim3=d2, dim4=0, layout="NCHW",
                    data_type="FP32",
                )
            ).inserted_primary_key[0]
            for d0, d2 in ((1, 56), (64, 3))
        )  # fmt: skip
        s.execute(
            insert(ConvConfig),
            [
                {
                    "fdb_key": f"bench-{i}", "spatial_dim": 2, "direction": "F", "pad_h": 1,
                    "pad_w": 1, "conv_stride_h": 1, "conv_stride_w": 1, "dilation_h": 1,
                    "dilation_w": 1, "input_tensor": x, "weight_tensor": w,
                    "out_layout": "NCHW", "out_type": "FP32", "driver": f"bench {i}",
                }
                for i in range(N_CONFIGS)
            ],
        )  # fmt: skip
        names = ["NoopDirect", "NoopTunable", "BenchA", "BenchB"]
        s.execute(insert(Solver), [{"backend": "noop", "name": n} for n in names])
        sid = s.execute(
            insert(TuningSession).values(arch="bench", num_cu=1, backend="noop", fingerprint="b")
        ).inserted_primary_key[0]
    return int(sid)


def fill(db: Database, session: int, rows: int) -> float:
    """``rows`` measurement rows by INSERT ... SELECT from MariaDB's sequence engine."""
    started = time.monotonic()
    step = 1_000_000
    with db.engine.begin() as conn:
        for lo in range(0, rows, step):
            hi = min(rows, lo + step) - 1
            conn.execute(
                text(
                    "INSERT INTO measurement (session, job, config, solver, params, platform, "
                    "machine, strategy, time_ms, valid) "
                    "SELECT :session, seq DIV 64, 1 + (seq DIV 256) MOD :configs, "
                    "1 + (seq DIV 64) MOD 4, CONCAT('tile_oh=', seq MOD 8, ',tile_ow=', "
                    "(seq DIV 8) MOD 16, ',tile_k=', (seq DIV 128) MOD 8, ',unroll=', seq MOD 3), "
                    "1 + (seq DIV 64) MOD 8, 1 + (seq DIV 64) MOD 8, 'random', RAND() * 10, 1 "
                    f"FROM seq_{lo}_to_{hi}"
                ),
                {"session": session, "configs": N_CONFIGS},
            )
        conn.exec_driver_sql("ANALYZE TABLE measurement")
    return time.monotonic() - started


def size(db: Database) -> tuple[int, float, float]:
    with db.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT COUNT(*) FROM measurement").scalar_one()
        data, index = conn.execute(
            text(
                "SELECT data_length, index_length FROM information_schema.tables "
                "WHERE table_schema = DATABASE() AND table_name = 'measurement'"
            )
        ).one()
    return int(rows), data / rows, index / rows


def timed(fn: Callable[[], object], n: int) -> tuple[float, float, float]:
    """(CPU ms per call, wall p50 ms, wall p95 ms) of ``n`` calls."""
    walls = []
    cpu0 = time.process_time()
    for _ in range(n):
        t = time.perf_counter()
        fn()
        walls.append((time.perf_counter() - t) * 1e3)
    cpu = (time.process_time() - cpu0) * 1e3 / n
    walls.sort()
    return cpu, statistics.median(walls), walls[int(0.95 * (n - 1))]


def record_cost(db: Database, session: int, on: MeasuredOn, k: int, n: int) -> tuple:
    """Record ``n`` evaluated jobs one by one, each with ``k`` measurements."""
    with db.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO job (session, config, solver, step, state, attempt) "
                "SELECT :s, c.id, 2, 'find', 'compiled', 1 FROM conv_config c "
                "WHERE NOT EXISTS (SELECT 1 FROM job j WHERE j.session = :s AND j.config = c.id "
                "AND j.step = 'find') ORDER BY c.id LIMIT :n"
            ),
            {"s": session, "n": n},
        )
    jobs = claim_jobs(db, session, Phase.EVAL, owner="bench", limit=n)
    assert len(jobs) == n, len(jobs)
    outcome = EvalOutcome(
        find=FIND, measurements=tuple(M(f"1,{i},16,2,1", 0.5 + i / 100, True) for i in range(k))
    )
    it = iter(jobs)
    return timed(lambda: record_outcomes(db, "bench", [(next(it), outcome)], measured_on=on), n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="server URL (a scratch database is made)")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the size part")
    ap.add_argument("--records", type=int, default=300, help="records per measurement count")
    ap.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at start")
    name, url = scratch_database(args.url)
    db = open_database(url)
    try:
        with db.engine.connect() as conn:
            flush = conn.exec_driver_sql("SELECT @@innodb_flush_log_at_trx_commit").scalar()
            version = conn.exec_driver_sql("SELECT VERSION()").scalar()
        print(f"server {version}, innodb_flush_log_at_trx_commit={flush}")
        session = base_rows(db)

        t = time.perf_counter()
        facts = collect()
        collect_ms = (time.perf_counter() - t) * 1e3
        pid = report_platform(db, facts)
        _, report_ms, _ = timed(lambda: report_platform(db, facts), 50)
        print(f"\n5. platform: collect() {collect_ms:.1f} ms; report_platform (stored) "
              f"p50 {report_ms:.2f} ms")  # fmt: skip
        on = MeasuredOn(pid)

        print("\n2. record of one evaluated job (batch 1), by measurements it carries")
        print("| measurements | client CPU ms | wall p50 ms | wall p95 ms |")
        print("|---|---|---|---|")
        for k in (0, 1, 16, 64):
            cpu, p50, p95 = record_cost(db, session, on, k, args.records)
            print(f"| {k} | {cpu:.3f} | {p50:.2f} | {p95:.2f} |")

        with db.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO job (session, config, solver, step, state, attempt) "
                    "VALUES (:s, 1, 3, 'perf', 'compiled', 1)"
                ),
                {"s": session},
            )
        (job,) = claim_jobs(db, session, Phase.EVAL, owner="bench", limit=1)
        one = [M("1,2,16,2,1", 0.5, True)]
        cpu, p50, p95 = timed(lambda: save_progress(db, "bench", job, one, on), args.records)
        print(f"\n3. checkpoint of one measurement: client CPU {cpu:.3f} ms, wall p50 "
              f"{p50:.2f} ms, p95 {p95:.2f} ms")  # fmt: skip
        record_outcomes(db, "bench", [(job, CompileOutcome.failed("done"))])

        print(f"\n1. size: filling {args.rows:,} rows ...")
        took = fill(db, session, args.rows)
        rows, data, index = size(db)
        print(f"{rows:,} rows in {took:.0f} s: data {data:.0f} B/row, indexes {index:.0f} B/row,"
              f" total {data + index:.0f} B/row")  # fmt: skip

        def resume() -> object:
            with db.transaction() as conn:
                return measured_before(conn, session, 2, [(17, 2)])

        with db.transaction() as conn:
            found = measured_before(conn, session, 2, [(17, 2)])
        cpu, p50, p95 = timed(resume, 200)
        n_found = sum(len(v) for v in found.values())
        print(f"\n4. resume: measured_before of one (session, config, solver) in {rows:,} rows "
              f"({n_found} rows found): wall p50 {p50:.2f} ms, p95 {p95:.2f} ms")  # fmt: skip
        with db.engine.connect() as conn:
            plan = (
                conn.execute(
                    text(
                        "EXPLAIN SELECT params, time_ms, valid FROM measurement WHERE session = :s "
                        "AND config IN (17) AND solver IN (2) AND platform = 2"
                    ),
                    {"s": session},
                )
                .mappings()
                .all()
            )
        for row in plan:
            print(f"   plan: key={row['key']} rows={row['rows']} extra={row['Extra']}")
    finally:
        db.dispose()
        if not args.keep:
            drop_database(args.url, name)
    print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
