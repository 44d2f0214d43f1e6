"""How long the dashboard's search pages take on a big search_run table (MariaDB).

Not a test. Like ``bench/dashboard.py``: a scratch database on the server given by --url,
filled with INSERT ... SELECT from MariaDB's sequence engine, every page rendered in-process
and timed by the app's own ``Server-Timing`` header; dropped at the end (--keep keeps it).

    .venv/bin/python bench/dashboard_searches.py --url "$TUNA_TEST_DB_URL"

The data: session 1 holds 5 searches: search 1 with 10^6 runs (1,000 builds of 1,000 runs,
95 % finished, a tenth of those invalid), searches 2-5 with 100,000 runs each; session 2
holds one small search. search_run then holds 1.4 million rows.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
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
from tuna.jobs.search_results import recount  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

BIG = 1_000_000
SMALL = 100_000
PER_BUILD = 1_000
CHUNK = 100_000
VALIDITY = 7  # the search whose objective has a validity stat

PAGES = [
    ("searches of session 1 (1.4M runs)", "/searches?session=1"),
    ("search 1 (10^6 runs)", "/searches/1"),
    ("search 1, importance block (page fetches)", "/searches/1/importance"),
    ("search 1, invalid runs", "/searches/1?status=invalid"),
    ("search 1, one build", "/searches/1?build=500"),
    ("search 1, best first", "/searches/1?order=best"),
    ("search 1, page after seq 900000", "/searches/1?after=900000"),
    ("search 2 (10^5 runs)", "/searches/2"),
    ("searches of session 2 (1 small search)", "/searches?session=2"),
    ("search 6 (small)", "/searches/6"),
    ("search 7 (10^6 runs, validity stat)", "/searches/7"),
]


def seed(conn: sa.Connection) -> None:
    def x(sql: str) -> None:
        conn.exec_driver_sql(sql.replace("%", "%%"))

    x("INSERT INTO machine (id, hostname, port) SELECT seq, CONCAT('node-', seq), 22 "
      "FROM seq_1_to_20")  # fmt: skip
    x("INSERT INTO session (id, arch, num_cu, backend, label, fingerprint) SELECT seq, "
      "'x86_64', 1, 'bench', CONCAT('s', seq), CONCAT('fp', seq) FROM seq_1_to_3")  # fmt: skip
    searches = [(1, 1, BIG), *((i, 1, SMALL) for i in range(2, 6)), (6, 2, 500), (7, 3, BIG)]
    for sid, session, _ in searches:
        valid = '"result_validity"' if sid == VALIDITY else "null"
        x(f"""INSERT INTO search (id, session, name, space_file, space_text, base, objective,
              budget, parallelism, backend, spec, state)
            VALUES ({sid}, {session}, 'search-{sid}', 'space.json', '{{}}', '{{}}',
              '{{"stat": "qps", "goal": "max", "valid": {valid}}}', NULL, 8, 'bench', '{{}}',
              'active')""")
    conn.commit()
    build_id = 0
    for sid, _, runs in searches:
        says = (
            ", \"result_validity\": \"', IF(CRC32(seq * 11) % 20 = 0, 'INVALID', 'VALID'), '\""
            if sid == VALIDITY
            else ""
        )
        builds = max(1, runs // PER_BUILD)
        x(f"""INSERT INTO search_build (id, search, build_key, params, artifact, valid)
            SELECT {build_id} + seq, {sid}, LPAD(seq, 64, '0'), CONCAT('{{"flags": ', seq, '}}'),
              NULL, 1 FROM seq_1_to_{builds}""")
        for lo in range(0, runs, CHUNK):
            hi = min(lo + CHUNK, runs) - 1
            # runs land in seq order (a second apart), so the n-th to land is seq n - 1
            x(f"""INSERT INTO search_run (search, seq, point, config, build, stats, value, valid,
                  reason, machine, finished, landed)
                SELECT {sid}, seq, CONCAT('{{"flags": ', 1 + seq DIV {PER_BUILD},
                  ', "threads": ', seq % {PER_BUILD}, '}}'), '{{}}',
                  {build_id} + 1 + seq DIV {PER_BUILD},
                  IF(done, CONCAT('{{"qps": ', q, ', "p95_ms": ', CRC32(seq) % 97,
                    '{says}}}'), NULL),
                  IF(done AND ok, q, NULL), IF(done, ok, NULL),
                  IF(done AND NOT ok, 'exit status 1', NULL),
                  IF(done, 1 + seq % 20, NULL),
                  IF(done, NOW(6) - INTERVAL ({runs} - seq) SECOND, NULL), IF(done, seq + 1, NULL)
                FROM (SELECT seq, seq < {runs} * 0.95 AS done, CRC32(seq * 7) % 10 > 0 AS ok,
                        (CRC32(seq * 3) % 100000) / 10.0 AS q FROM seq_{lo}_to_{hi}) AS s""")
            conn.commit()
        build_id += builds
    recount(conn, [sid for sid, _, _ in searches])
    conn.commit()
    x("ANALYZE TABLE search, search_build, search_run, search_tally")


def measure(client: TestClient, path: str, runs: int) -> list[float]:
    client.get(path)  # warm-up
    out = []
    for _ in range(runs):
        r = client.get(path)
        if r.status_code != 200:
            raise SystemExit(f"{path}: HTTP {r.status_code}: {r.text[:500]}")
        out.append(float(r.headers["server-timing"].removeprefix("app;dur=")))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default=os.environ.get("TUNA_TEST_DB_URL"))
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--keep", metavar="NAME", help="Use (and keep) this database: seeded once.")
    args = ap.parse_args()
    if not args.url:
        raise SystemExit("give --url or TUNA_TEST_DB_URL (a MariaDB server)")
    server = make_url(args.url)
    name = args.keep or f"tuna_bench_search_{secrets.token_hex(4)}"
    admin = sa.create_engine(server)
    url = server.set(database=name)
    fresh = True
    with admin.connect() as conn:
        exists = conn.exec_driver_sql("SHOW DATABASES LIKE %s", (name,)).first()
        if exists and args.keep:
            fresh = False
        else:
            conn.exec_driver_sql(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        version = conn.exec_driver_sql("SELECT VERSION()").scalar_one()
        flush = conn.exec_driver_sql(
            "SELECT @@innodb_flush_log_at_trx_commit, @@innodb_buffer_pool_size"
        ).one()
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
        with admin.connect() as conn:
            n = conn.exec_driver_sql(f"SELECT COUNT(*) FROM `{name}`.search_run").scalar_one()
        db = open_readonly(url)
        client = TestClient(
            create_app(db, DashboardSettings(refresh_s=0)), base_url="http://localhost"
        )
        print(f"server: MariaDB {version}, innodb_flush_log_at_trx_commit={flush[0]}, "
              f"buffer pool {int(flush[1]) // 2**20} MiB")  # fmt: skip
        print(f"rows: search_run={n:,}")
        la = os.getloadavg()
        print(f"load average before: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
        print(f"{'page':42} {'first ms':>9} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}")
        for title, path in PAGES:
            t0 = time.perf_counter()
            first = client.get(path)
            first_ms = (time.perf_counter() - t0) * 1000
            if first.status_code != 200:
                raise SystemExit(f"{path}: HTTP {first.status_code}: {first.text[:500]}")
            t = sorted(measure(client, path, args.runs))
            p90 = t[min(len(t) - 1, int(round(0.9 * (len(t) - 1))))]
            print(f"{title:42} {first_ms:9.1f} {statistics.median(t):10.1f} {p90:8.1f} "
                  f"{t[-1]:8.1f}", flush=True)  # fmt: skip
        la = os.getloadavg()
        print(f"load average after: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")
        db.dispose()
    finally:
        if not args.keep:
            with admin.connect() as conn:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
        admin.dispose()


if __name__ == "__main__":
    main()
