"""Export rate: how long ``export_db --find_db`` takes for a session of 1,000,000 find rows.

Creates a fresh database (a new one on the server the URL names), imports N distinct conv
configs (1x1 and 3x3 stride-1 filters, all three directions), a noop session, and 3 find
rows per config (the noop solvers that apply to each), written with bulk inserts. Then it
times the export, which checks every row (key round trip, solver, applicability, values)
and writes the file. Not a test: figures go in bench/export.md.

    # against a throwaway MariaDB (bin/test-db start prints the URL)
    eval "$(bin/test-db start)"
    .venv/bin/python bench/export.py --url "$TUNA_TEST_DB_URL"            # 333,334 configs
    .venv/bin/python bench/export.py --url sqlite:////tmp/bench-export.db -n 10000
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import pstats
import secrets
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url

from tuna.catalog.importer import import_configs
from tuna.db import migrate, open_database
from tuna.db.bulk import insert_missing
from tuna.db.engine import make_engine
from tuna.db.models import ConvConfig, FindDb
from tuna.results.export import ExportSpec, export_db
from tuna.sessions import SessionSpec, create_session, sync_solvers

SOLVERS = {
    1: ("NoopDirect", "NoopGemm1x1", "NoopTunable"),
    3: ("NoopDirect", "NoopWinograd3x3", "NoopTunable"),
}
ALGORITHMS = {
    "NoopDirect": "direct",
    "NoopGemm1x1": "gemm",
    "NoopWinograd3x3": "winograd",
    "NoopTunable": "implicit_gemm",
}


def driver_lines(n: int) -> list[tuple[int, str]]:
    shapes = itertools.product(
        range(1, 40),  # n
        (3, 8, 16, 32, 48, 64, 96, 128, 192, 256, 512, 1024),  # c
        (7, 9, 13, 14, 17, 27, 28, 35, 56, 71, 112, 224),  # H = W
        (8, 16, 24, 32, 64, 96, 128, 256, 384, 512, 1024, 2048),  # k
        (1, 3),  # filter (3x3 with pad 1, stride 1)
        (1, 2, 4),  # direction
    )
    lines = []
    for no, (nb, c, hw, k, f, d) in enumerate(itertools.islice(shapes, n), start=1):
        p = f // 2
        lines.append(
            (
                no,
                f"./bin/MIOpenDriver conv -n {nb} -c {c} -H {hw} -W {hw} -k {k} -y {f} -x {f} "
                f"-p {p} -q {p} -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F {d} -t 1",
            )
        )
    if len(lines) < n:
        raise SystemExit(f"only {len(lines)} distinct shapes available")
    return lines


def fresh_database(url: str) -> tuple[str, str | None]:
    """A new, empty database on the server ``url`` names (its URL, and its name to drop)."""
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        return url, None
    name = f"tuna_bench_{secrets.token_hex(3)}"
    server = create_engine(u.set(database=None))
    with server.begin() as conn:
        conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
    server.dispose()
    return u.set(database=name).render_as_string(hide_password=False), name


def drop_database(url: str, name: str | None) -> None:
    if name is None:
        return
    server = create_engine(make_url(url).set(database=None))
    with server.begin() as conn:
        conn.execute(text(f"DROP DATABASE {name}"))
    server.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("-n", type=int, default=333_334, help="configs (3 find rows each)")
    ap.add_argument("--profile", action="store_true", help="print the export's top functions")
    args = ap.parse_args()
    url, name = fresh_database(args.url)
    try:
        run(url, args.n, args.profile)
    finally:
        drop_database(args.url, name)


def run(url: str, n: int, profile: bool) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
    engine.dispose()
    db = open_database(url)

    t0 = time.perf_counter()
    lines = driver_lines(n)
    import_configs(db, lines, tag="bench")
    sid = create_session(db, SessionSpec(arch="gfx90a", num_cu=104, backend="noop")).id
    with db.session() as s:
        solver_ids = sync_solvers(s, "noop")
        configs = s.execute(select(ConvConfig.id, ConvConfig.fdb_key)).all()
    rows = []
    for cid, key in configs:
        fil = 1 if key.split("-")[3] == "1x1" else 3  # a 2D key's 4th field is the filter
        for i, solver in enumerate(SOLVERS[fil]):
            rows.append(
                {
                    "session": sid,
                    "config": cid,
                    "solver": solver_ids[solver],
                    "time_ms": 0.01 + ((cid * 7919 + i * 104729) % 100_000) / 1000,
                    "workspace": 4096 * i,
                    "algorithm": ALGORITHMS[solver],
                }
            )
    for start in range(0, len(rows), 100_000):
        with db.session() as s:
            insert_missing(s, FindDb, rows[start : start + 100_000])
    t_seed = time.perf_counter() - t0
    print(f"backend {db.engine.dialect.name}: {len(configs)} configs, {len(rows)} find rows")
    print(f"  seeding             {t_seed:7.1f} s")

    with tempfile.TemporaryDirectory() as out:
        spec = ExportSpec(kind="find", session=sid, out_dir=Path(out))
        profiler = cProfile.Profile() if profile else None
        t0 = time.perf_counter()
        if profiler:
            profiler.enable()
        report = export_db(db, spec)
        if profiler:
            profiler.disable()
        t_export = time.perf_counter() - t0
        (f,) = report.files
        print(
            f"  export_db --find_db {t_export:7.2f} s  ({report.rows / t_export:,.0f} rows/s; "
            f"{report.rows} rows checked, {f.records} keys, {f.size / 1e6:.1f} MB)"
        )
    if profiler:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
    db.dispose()


if __name__ == "__main__":
    main()
