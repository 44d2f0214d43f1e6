"""import_db rate: a large find db of distinct keys in MIOpen's real formats, imported.

The 193,000-line shipped gfx90a file is not in the repo; this builds one as large from the
real sample (``tests/data/miopen/gfx90a68.HIP.fdb.sample.txt``, 612 records, v2.0 entries):
each record's key is parsed, its problem's batch size and channel counts varied (N over 16
values, C and K scaled by 20 factors, then H=W shifted), and written back with
``find_db_key``, so every key is distinct, canonical and of the sample's mix of 2D/3D,
directions, layouts, types and groups; each record keeps its real entries (solvers, times,
workspaces, algorithms). Then ``import_db`` reads it (``read_db_file``) and imports it into
a fresh session of a fresh database (``import_db_files``), timed apart, and again into a
second session (every config present).

    .venv/bin/python bench/import_db.py --url mysql+pymysql://root@127.0.0.1:3306/ -n 193000
    .venv/bin/python bench/import_db.py --url sqlite:////tmp/bench_import_db.db -n 193000

A MySQL URL names the server; the script creates (and drops) its own database on it.
``--file F`` imports F (a find db) instead of a generated one. The last line, ``SUMMARY``,
gives rows/s (find rows, i.e. entries) and lines/s of read + import for both imports, the
reading's wall and client CPU time and the load average.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import secrets
import tempfile
import time
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tuna.db import migrate, open_database
from tuna.db.engine import make_engine
from tuna.errors import TunaError
from tuna.problems.keys import find_db_key, parse_find_db_key
from tuna.results.importdb import import_db_files, read_db_file
from tuna.sessions import SessionSpec, create_session

SAMPLE = Path(__file__).resolve().parents[1] / "tests/data/miopen/gfx90a68.HIP.fdb.sample.txt"


def large_find_db(n: int, out: Path) -> int:
    """Write ``n`` distinct records built from the sample's; returns how many were written."""
    records = [line.split("=", 1) for line in SAMPLE.read_text().splitlines() if line.strip()]
    problems = [(parse_find_db_key(k), body) for k, body in records]
    seen: set[str] = set()
    written = 0
    variants = itertools.product(
        (0, 1, 2, 3, 4, 5, 6, 7),  # H=W shift
        (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20),  # C,K scale
        (1, 2, 4, 8, 16, 32, 64, 128, 3, 5, 6, 12, 24, 48, 96, 256),  # N
    )
    with out.open("w") as f:
        for shift, scale, batch in variants:
            for p, body in problems:
                g = p.group_count
                try:
                    q = dataclasses.replace(
                        p,
                        batchsize=batch,
                        in_channels=p.in_channels * scale if g == 1 else p.in_channels,
                        out_channels=p.out_channels * scale if g == 1 else p.out_channels,
                        in_size=(*p.in_size[:-2], p.in_size[-2] + shift, p.in_size[-1] + shift),
                    )
                    key = find_db_key(q)
                except TunaError:
                    continue
                if key in seen:
                    continue
                seen.add(key)
                f.write(f"{key}={body}\n")
                written += 1
                if written == n:
                    return written
    return written


def fresh_database(url: str) -> tuple[str, object]:
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        if u.database and os.path.exists(u.database):
            os.remove(u.database)
        return url, None
    name = f"bench_import_db_{secrets.token_hex(4)}"
    admin = create_engine(u.set(database=""))
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        durable = conn.scalar(text("SELECT @@innodb_flush_log_at_trx_commit"))
        version = conn.scalar(text("SELECT VERSION()"))
    print(f"server {version}, innodb_flush_log_at_trx_commit={durable}")
    return u.set(database=name).render_as_string(hide_password=False), (admin, name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("-n", type=int, default=193_000)
    ap.add_argument("--file", type=Path, help="import this find db instead of generating one")
    args = ap.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or Path(tmp) / "gfx90a68.HIP.fdb.txt"
        if args.file is None:
            t = time.perf_counter()
            lines = large_find_db(args.n, path)
            print(f"generated {lines} distinct records in {time.perf_counter() - t:.1f} s")
        url, cleanup = fresh_database(args.url)
        try:
            engine = make_engine(url)
            with engine.begin() as conn:
                migrate.upgrade(conn)
            engine.dispose()
            db = open_database(url)
            t, cpu = time.perf_counter(), time.process_time()
            parsed = read_db_file(path)
            read_s, read_cpu = time.perf_counter() - t, time.process_time() - cpu
            lines = parsed.records
            rows = sum(len(e) for e in parsed.find.values())
            print(
                f"read {lines} records ({rows} entries, {len(parsed.bad)} bad) in {read_s:.2f} s "
                f"(client CPU {read_cpu:.2f} s)"
            )
            summary = []
            for label in ("new configs", "configs present"):
                sid = create_session(
                    db, SessionSpec(arch="gfx90a", num_cu=104, backend="miopen")
                ).id
                t, cpu = time.perf_counter(), time.process_time()
                report = import_db_files(db, sid, [parsed])
                write_s, write_cpu = time.perf_counter() - t, time.process_time() - cpu
                total = read_s + write_s
                print(
                    f"import ({label}): {report.configs_inserted} configs inserted, "
                    f"{report.find_rows} find rows in {write_s:.2f} s (client CPU "
                    f"{write_cpu:.2f} s); with reading {total:.2f} s = {lines / total:,.0f} "
                    f"lines/s, {rows / total:,.0f} rows/s"
                )
                summary.append(
                    f"{label}: {total:.2f} s = {rows / total:,.0f} rows/s, "
                    f"{lines / total:,.0f} lines/s (import {write_s:.2f} s, client CPU "
                    f"{write_cpu:.2f} s)"
                )
            db.dispose()
        finally:
            if cleanup is not None:
                admin, name = cleanup  # type: ignore[misc]
                with admin.begin() as conn:
                    conn.exec_driver_sql(f"DROP DATABASE `{name}`")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"SUMMARY import_db {lines} lines, {rows} rows (read + import): "
        + "; ".join(summary)
        + f"; reading {read_s:.2f} s, client CPU {read_cpu:.2f} s; load average at end {load}"
    )


if __name__ == "__main__":
    main()
