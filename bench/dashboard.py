"""How long the dashboard's pages take on big tables: 10^6 jobs and 10^6 find rows on MariaDB.

Not a test. It creates a scratch database on the server given by --url, fills it with
INSERT ... SELECT from MariaDB's sequence engine (seq_0_to_N), then renders every page
in-process (Starlette's test client) and reads the app's own time from the
``Server-Timing`` header of each response: the time from request to response start,
database round trips included, network excluded. It drops the database at the end
(--keep keeps it).

    eval "$(bin/test-db start)"
    .venv/bin/python bench/dashboard.py --url "$TUNA_TEST_DB_URL"
    .venv/bin/python bench/dashboard.py --url "$TUNA_TEST_DB_URL" --without-activity-indexes

The data: 20,000 configs (fwd/bwd/wrw, 1x1/3x3/5x5 filters), 50 solvers, 50 machines,
5 sessions. Session 1 holds 600,000 jobs (20,000 configs x 30 solvers) and all 10^6 find
rows (20,000 configs x 50 solvers); sessions 2-5 hold 100,000 jobs each. Jobs are spread
over the states as a long run leaves them (most evaluated, some new/compiled, a few
running, errored with a handful of reasons, not applicable), their phase ends over the
last two days, a few hundred in the last five minutes. Three errored jobs of session 1 have
a reason of their own (the rare reason's drill-down). Before timing, worker logs as go_fish
leaves them are written to a scratch folder the app reads (``--logs``): a line per job of
session 1 in one file per machine (about 57 MiB), so a job's page finds its line on its
machine's log, and a job of another session reads the 16 MiB cap of them in vain.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tuna.dashboard import create_app  # noqa: E402
from tuna.dashboard.app import DashboardSettings  # noqa: E402
from tuna.dashboard.readonly import open_readonly  # noqa: E402
from tuna.db import migrate  # noqa: E402
from tuna.db.engine import make_engine  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

CONFIGS = 20_000
SOLVERS = 50
MACHINES = 50
BIG_SESSION_SOLVERS = 30  # 20,000 x 30 = 600,000 jobs
SMALL_SESSION_SOLVERS = 5  # 20,000 x 5 = 100,000 jobs each, sessions 2-5
CHUNK = 100_000

PAGES = [
    ("sessions (all 5: 10^6 jobs counted)", "/"),
    ("session 1 (600k jobs)", "/sessions/1"),
    ("machines", "/machines"),
    ("results, session 1 (10^6 find rows)", "/results?session=1"),
    ("results, solver filter", "/results?session=1&solver=S07"),
    ("results, family filter", "/results?session=1&family=wrw+5x5"),
    ("results, key prefix", "/results?session=1&key=bench-01999"),
    ("results, time filter", "/results?session=1&max_ms=0.2"),
    ("results, time filter after config 12000", "/results?session=1&max_ms=0.2&after=12000-0"),
    (
        "results, family filter after config 12000",
        "/results?session=1&family=wrw+5x5&after=12000-0",
    ),
    ("results, page after config 10000", "/results?session=1&after=10000-0"),
    ("a job's page (its log lines found on its machine's log)", "/jobs/300000"),
    ("a job's page with no log line (16 MiB of logs read)", "/jobs/{session_2_job}"),
    ("session 1's errored jobs (a failure's drill-down)", "/sessions/1/failures?state=errored"),
    (
        "session 1's jobs of one failure reason",
        "/sessions/1/failures?state=errored&reason=timeout+%28gave+up+after+4+tries%29",
    ),
    (
        "session 1's jobs of a rare failure reason (3 jobs)",
        "/sessions/1/failures?state=errored&reason=rare%3A+one+machine+ran+out+of+disk",
    ),
]

STATE_SQL = """ELT(1 + (CRC32(seq) % 1000 >= 700) + (CRC32(seq) % 1000 >= 800)
    + (CRC32(seq) % 1000 >= 900) + (CRC32(seq) % 1000 >= 901) + (CRC32(seq) % 1000 >= 902)
    + (CRC32(seq) % 1000 >= 912),
    'evaluated', 'new', 'compiled', 'compile_start', 'eval_start', 'errored', 'not_applicable')"""


def seed(conn: sa.Connection) -> None:
    def x(sql: str) -> None:
        conn.exec_driver_sql(sql.replace("%", "%%"))  # no parameters: % is SQL's modulo

    tensors = [(1, 16, 64, 56, 56), (2, 64, 64, 1, 1), (3, 64, 64, 3, 3), (4, 64, 64, 5, 5)]
    x(
        "INSERT INTO tensor (id, num_dims, dim0, dim1, dim2, dim3, dim4, layout, data_type) VALUES "
        + ", ".join(f"({i}, 4, {a}, {b}, {c}, {d}, 0, 'NCHW', 'FP32')" for i, a, b, c, d in tensors)
    )
    x(f"""INSERT INTO conv_config (id, fdb_key, spatial_dim, direction, pad_h, pad_w,
        conv_stride_h, conv_stride_w, dilation_h, dilation_w, input_tensor, weight_tensor,
        out_layout, out_type, driver)
      SELECT seq, CONCAT('bench-', LPAD(seq, 5, '0'), '-', ELT(1 + seq % 3, 'F', 'B', 'W')),
        2, ELT(1 + seq % 3, 'F', 'B', 'W'), 0, 0, 1, 1, 1, 1, 1, 2 + (seq DIV 3) % 3,
        'NCHW', 'FP32', 'bench' FROM seq_1_to_{CONFIGS}""")
    x(f"""INSERT INTO solver (id, backend, name, tunable, valid)
      SELECT seq, 'bench', CONCAT('S', LPAD(seq - 1, 2, '0')), 1, 1 FROM seq_1_to_{SOLVERS}""")
    x(f"""INSERT INTO machine (id, hostname, port, arch, num_cu, available, last_seen)
      SELECT seq, CONCAT('node-', LPAD(seq, 2, '0')), 22, 'gfx90a', 104, 1,
        NOW(6) - INTERVAL seq SECOND FROM seq_1_to_{MACHINES}""")
    x("""INSERT INTO session (id, arch, num_cu, backend, label, fingerprint)
      SELECT seq, 'gfx90a', 104, 'bench', CONCAT('bench ', seq), CONCAT('fp', seq)
      FROM seq_1_to_5""")
    conn.commit()
    jobs = [(1, BIG_SESSION_SOLVERS)] + [(s, SMALL_SESSION_SOLVERS) for s in range(2, 6)]
    for session, per_config in jobs:
        total = CONFIGS * per_config
        for lo in range(0, total, CHUNK):
            hi = min(lo + CHUNK, total) - 1
            x(f"""INSERT INTO job (session, config, solver, step, state, attempt, retries,
                  machine, reason, lease_owner, lease_expires, compile_start, compile_end,
                  eval_start, eval_end)
              SELECT {session}, 1 + seq DIV {per_config}, 1 + seq % {per_config}, 'find', st,
                1, 0, 1 + seq % {MACHINES},
                CASE st WHEN 'errored' THEN ELT(1 + seq % 4, 'timeout (gave up after 4 tries)',
                    'verification failed: max error 0.31', 'lease expired; last owner w7',
                    'kernel build failed: exit 1')
                  WHEN 'not_applicable' THEN 'solver does not apply' END,
                IF(st IN ('compile_start', 'eval_start'), CONCAT('w', seq % 97), NULL),
                IF(st IN ('compile_start', 'eval_start'), NOW(6) + INTERVAL 60 SECOND, NULL),
                IF(st = 'new', NULL, ended - INTERVAL 3 SECOND),
                IF(st IN ('new', 'compile_start'), NULL, ended),
                IF(st = 'evaluated', ended, NULL),
                IF(st = 'evaluated', ended + INTERVAL 1 SECOND, NULL)
              FROM (SELECT seq, {STATE_SQL} AS st,
                      NOW(6) - INTERVAL (CRC32(seq * 7 + {session}) % 172800) SECOND AS ended
                    FROM seq_{lo}_to_{hi}) AS s""")
            conn.commit()
    # a reason only three jobs have: without an index on it, their drill-down reads every job
    x("""UPDATE job SET reason = 'rare: one machine ran out of disk' WHERE session = 1
      AND state = 'errored' ORDER BY id DESC LIMIT 3""")
    conn.commit()
    for lo in range(0, CONFIGS * SOLVERS, CHUNK):
        hi = min(lo + CHUNK, CONFIGS * SOLVERS) - 1
        x(f"""INSERT INTO find_db (session, config, solver, time_ms, workspace, algorithm)
          SELECT 1, 1 + seq DIV {SOLVERS}, 1 + seq % {SOLVERS},
            0.05 + (CRC32(seq) % 100000) / 10000.0, (CRC32(seq * 3) % 64) * 1048576, 'x'
          FROM seq_{lo}_to_{hi}""")
        conn.commit()
    x("ANALYZE TABLE job, find_db, conv_config")


def write_logs(conn: sa.Connection, root: Path) -> int:
    """Worker logs as go_fish's workers leave them for session 1's jobs: one eval worker's
    file per machine, a line per job (tuna.worker.hooks.JobLog's), in id order. Bytes
    written."""
    rows = conn.exec_driver_sql(
        "SELECT job.id, machine.hostname FROM job JOIN machine ON machine.id = job.machine "
        "WHERE job.session = 1 ORDER BY job.id"
    ).all()
    files: dict[str, list[str]] = {}
    for i, (job, host) in enumerate(rows):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() - 172800 + i / 4))
        files.setdefault(host, []).append(
            f"{stamp},123 INFO tuna.worker.hooks: job {job}: eval S07 attempt 1 ok in 0.204 s\n"
        )
    written = 0
    for host, lines in files.items():
        path = (
            root / "eval" / "gfx90a" / host / "session-1" / "20261125-000000-bench" / "eval-0.log"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(lines)
        path.write_text(text)
        written += len(text)
    return written


def measure(client: TestClient, path: str, runs: int) -> list[float]:
    client.get(path)  # warm-up: templates compiled, statements cached, pool connected
    out = []
    for _ in range(runs):
        r = client.get(path)
        if r.status_code != 200:
            raise SystemExit(f"{path}: HTTP {r.status_code}: {r.text[:500]}")
        out.append(float(r.headers["server-timing"].removeprefix("app;dur=")))
    return out


def server_settings(conn: sa.Connection) -> str:
    names = ("version", "innodb_buffer_pool_size", "innodb_flush_log_at_trx_commit")
    rows = dict(
        conn.exec_driver_sql(
            "SHOW VARIABLES WHERE Variable_name IN ('innodb_buffer_pool_size', "
            "'innodb_flush_log_at_trx_commit', 'version')"
        ).all()
    )
    return ", ".join(
        f"{n}={int(rows[n]) // 2**20} MiB" if n == "innodb_buffer_pool_size" else f"{n}={rows[n]}"
        for n in names
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=os.environ.get("TUNA_TEST_DB_URL"), required=False)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--keep", metavar="NAME", help="Use (and keep) this database: seeded once.")
    ap.add_argument(
        "--without-activity-indexes",
        action="store_true",
        help="Drop ix_job_session_compile_end / _eval_end first, to see what they buy.",
    )
    args = ap.parse_args()
    if not args.url:
        raise SystemExit("give --url or TUNA_TEST_DB_URL (a MariaDB server; eval bin/test-db)")
    server = make_url(args.url)
    name = args.keep or f"tuna_bench_dash_{secrets.token_hex(4)}"
    admin = sa.create_engine(server)
    url = server.set(database=name)
    fresh = True
    with admin.connect() as conn:
        exists = conn.exec_driver_sql("SHOW DATABASES LIKE %s", (name,)).first()
        if exists and args.keep:
            fresh = False
        else:
            conn.exec_driver_sql(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        settings = server_settings(conn)
    try:
        if fresh:
            engine = make_engine(url)
            with engine.connect() as conn:
                migrate.upgrade(conn)
                conn.commit()
                t0 = time.monotonic()
                seed(conn)
                print(f"seeded in {time.monotonic() - t0:.0f} s", flush=True)
            engine.dispose()
        if args.without_activity_indexes:
            with admin.connect() as conn:
                for ix in ("ix_job_session_compile_end", "ix_job_session_eval_end"):
                    conn.exec_driver_sql(f"DROP INDEX IF EXISTS {ix} ON `{name}`.job")
        with admin.connect() as conn:
            counts = {
                t: conn.exec_driver_sql(f"SELECT COUNT(*) FROM `{name}`.{t}").scalar_one()
                for t in ("job", "find_db")
            }
        logs = Path(tempfile.mkdtemp(prefix="tuna-bench-logs-"))
        with admin.connect() as conn:
            conn.exec_driver_sql(f"USE `{name}`")
            logged = write_logs(conn, logs)
            second = conn.exec_driver_sql("SELECT MIN(id) FROM job WHERE session = 2").scalar()
        db = open_readonly(url)
        client = TestClient(
            create_app(db, DashboardSettings(refresh_s=0, logs=logs)), base_url="http://localhost"
        )
        print(f"server: {settings}")
        print(f"worker logs: {logged / 2**20:.0f} MiB under {logs}")
        print(f"rows: job={counts['job']:,} find_db={counts['find_db']:,}")
        la = os.getloadavg()
        print(f"load average before: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
        print(f"{'page':40} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}")
        for title, path in PAGES:
            path = path.format(session_2_job=second)
            t = sorted(measure(client, path, args.runs))
            p90 = t[min(len(t) - 1, int(round(0.9 * (len(t) - 1))))]
            print(f"{title:40} {statistics.median(t):10.1f} {p90:8.1f} {t[-1]:8.1f}", flush=True)
        la = os.getloadavg()
        print(f"load average after: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
        db.dispose()
        shutil.rmtree(logs)
    finally:
        if not args.keep:
            with admin.connect() as conn:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
        admin.dispose()


if __name__ == "__main__":
    main()
