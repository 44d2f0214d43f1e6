"""``load_jobs --min-trials``: how long deciding skip/resume takes over 100,000 problems and
10^7 measurement rows on MariaDB, and the query plan it uses (issue #17).

::

    .venv/bin/python bench/library_min_trials.py --url mysql+pymysql://root@127.0.0.1:3306 \\
        --configs 100000 --rows 10000000          # builds tuna_bench_library once (minutes)
    .venv/bin/python bench/library_min_trials.py --url ... --reuse   # time again, no reload
    .venv/bin/python bench/library_min_trials.py --url ... --rows 1000000 --per-config 10 \\
        --min-trials 4                             # the same effort table from 10^6 rows

The database ``tuna_bench_library`` gets 100,000 configs tagged ``bench``, five noop
sessions of one target (the fifth retired) and ``--rows`` measurements generated on the
server (``INSERT ... SELECT`` from MariaDB's sequence engine, in 10^6-row statements):
``--per-config`` (110) per config for the first configs (half per solver of NoopDirect and
NoopTunable, spread over the five sessions, one in seven invalid), none for the rest. A
session measures a problem on one day (0-59 days ago, by config and session) with one
strategy (by session), as a session tuning a network does. The effort counts
(``measurement_effort``) are then built from the rows by migration 0014's backfill (the
same counts the record path keeps row by row). The decision reads the counts only: one row
per (session, config, solver, platform, day, strategy), 10^6 here whether the sessions
measured 10 or 110 candidates per problem, which is why 10^6 rows with ``--per-config 10``
(and ``--min-trials`` scaled to 4) time the same decision as 10^7 rows (the measurement
table is never read). Each timed run creates a fresh target session of the same
fingerprint and calls ``load_jobs`` with ``--min-trials`` under three rules: the default,
``--max-age 30d`` and a platform field. It prints the wall time of ``load_jobs``, of the
effort query alone, and EXPLAIN of one chunk.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy import insert, select, text

from tuna.db import open_database
from tuna.db.engine import make_engine
from tuna.db.migrate import migrations_dir, upgrade
from tuna.db.models import ConfigTag, ConvConfig, Platform, Tensor
from tuna.jobs.load import load_jobs
from tuna.library.effort import _ONE_PASS_FROM, tuned_enough, tuned_query
from tuna.sessions import SessionSpec, create_session, get_session
from tuna.sessions.history import eligibility, retire
from tuna.sessions.rules import HistoryRules, parse_max_age


def _migration_backfill() -> Any:
    """Migration 0014's function that counts the measurement rows already there."""
    path = migrations_dir() / "versions" / "0014_measurement_effort_counts.py"
    spec = importlib.util.spec_from_file_location("migration_0014", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.backfill


NAME = "tuna_bench_library"
SPEC = SessionSpec(arch="gfx90a", num_cu=104, backend="noop", library_version="3.3.0")
SOLVERS = ["NoopDirect", "NoopTunable"]


def _load(url: str, n_configs: int, n_rows: int, per_config: int) -> None:
    admin = sa.create_engine(url)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {NAME}")
        conn.exec_driver_sql(f"CREATE DATABASE {NAME} CHARACTER SET utf8mb4")
    admin.dispose()
    db_url = f"{url.rstrip('/')}/{NAME}"
    engine = make_engine(db_url)
    with engine.begin() as conn:
        upgrade(conn)
    engine.dispose()
    db = open_database(db_url)
    t0 = time.perf_counter()
    sessions = [create_session(db, SPEC).id for _ in range(5)]
    with db.session() as s:
        s.execute(insert(Platform).values(digest="0" * 64, info={"gpu": {"model": "bench"}}))
        tensors: dict[tuple[Any, ...], int] = {}
        rows = []
        for i in range(n_configs):
            batch, hw, chans = 1 + i % 64, 4 + (i // 64) % 64, 8 * (1 + i // 4096)
            fil = 1 if i % 2 else 3
            x = (4, batch, chans, hw, hw, 0, "NCHW", "FP32")
            w = (4, chans, chans, fil, fil, 0, "NCHW", "FP32")
            for t in (x, w):
                tensors.setdefault(t, 0)
            rows.append((i, x, w, fil))
        cols = ("num_dims", "dim0", "dim1", "dim2", "dim3", "dim4", "layout", "data_type")
        keys = list(tensors)
        for i in range(0, len(keys), 5000):
            s.execute(insert(Tensor), [dict(zip(cols, t, strict=True)) for t in keys[i : i + 5000]])
        ids = {
            tuple(r[1:]): r[0]
            for r in s.execute(select(Tensor.id, *[getattr(Tensor, c) for c in cols]))
        }
        for i in range(0, len(rows), 5000):
            s.execute(
                insert(ConvConfig),
                [
                    {
                        "fdb_key": f"bench-{n}", "spatial_dim": 2, "direction": "F",
                        "pad_h": fil // 2, "pad_w": fil // 2, "conv_stride_h": 1,
                        "conv_stride_w": 1, "dilation_h": 1, "dilation_w": 1,
                        "input_tensor": ids[x], "weight_tensor": ids[w], "out_layout": "NCHW",
                        "out_type": "FP32", "driver": f"bench config {n}",
                    }
                    for n, x, w, fil in rows[i : i + 5000]
                ],
            )  # fmt: skip
        config_ids = list(s.scalars(select(ConvConfig.id).order_by(ConvConfig.id)))
        for i in range(0, len(config_ids), 5000):
            s.execute(
                insert(ConfigTag), [{"config": c, "tag": "bench"} for c in config_ids[i : i + 5000]]
            )
        solver_ids = dict(
            s.execute(text("SELECT name, id FROM solver WHERE backend = 'noop'")).all()
        )
    print(f"configs, sessions: {time.perf_counter() - t0:.1f} s", flush=True)
    first = config_ids[0]
    direct, tunable = solver_ids["NoopDirect"], solver_ids["NoopTunable"]
    elt = ", ".join(map(str, sessions))
    chunk = 1_000_000
    t0 = time.perf_counter()
    with db.engine.connect() as conn:
        for start in range(0, n_rows, chunk):
            end = min(n_rows, start + chunk) - 1
            conn.exec_driver_sql(
                "INSERT INTO measurement (session, job, config, solver, params, platform, "
                "machine, strategy, time_ms, valid, reason, taken) "
                f"SELECT ELT(1 + MOD(seq, 5), {elt}), NULL, {first} + seq DIV {per_config}, "
                f"IF(MOD(seq DIV {per_config // 2}, 2) = 0, {direct}, {tunable}), "
                f"CONCAT('tile=', MOD(seq, {per_config // 2})), 1, NULL, "
                "ELT(1 + MOD(MOD(seq, 5), 3), 'exhaustive', 'random', 'model'), "
                "IF(MOD(seq, 7) = 0, NULL, 0.5 + (MOD(seq, 997)) / 100), MOD(seq, 7) <> 0, "
                "IF(MOD(seq, 7) = 0, 'wrong result', NULL), NOW() - INTERVAL "
                f"MOD((seq DIV {per_config}) * 7 + MOD(seq, 5) * 13, 60) DAY "
                f"FROM seq_{start}_to_{end}"
            )
            conn.commit()
            print(f"  {end + 1:,} rows: {time.perf_counter() - t0:.0f} s", flush=True)
        print(f"measurements: {n_rows:,} rows in {time.perf_counter() - t0:.0f} s", flush=True)
    db.dispose()
    _count(url)


def _count(url: str) -> None:
    """(Re)build the effort counts from the rows, as migration 0014 does; retire the fifth
    session."""
    db = open_database(f"{url.rstrip('/')}/{NAME}")
    t0 = time.perf_counter()
    with db.engine.connect() as conn:
        conn.exec_driver_sql("DELETE FROM measurement_effort")
        _migration_backfill()(conn)
        conn.commit()
        counts = conn.exec_driver_sql("SELECT COUNT(*) FROM measurement_effort").scalar()
        print(f"effort counts: {counts:,} rows in {time.perf_counter() - t0:.0f} s", flush=True)
        conn.exec_driver_sql("ANALYZE TABLE measurement, measurement_effort")
        fifth = conn.exec_driver_sql("SELECT MAX(id) FROM session WHERE id <= 5").scalar()
    if get_session(db, fifth).retired is None:
        retire(db, fifth, "bench: a retired session's rows never count")
    db.dispose()


def _explain(db: Any, history: Any, config_ids: list[int], min_trials: int) -> list[dict[str, Any]]:
    q = tuned_query(
        history, min_trials, None if len(config_ids) >= _ONE_PASS_FROM else config_ids[:900]
    )
    with db.engine.connect() as conn:
        sql = str(q.compile(conn, compile_kwargs={"literal_binds": True}))
        rows = conn.exec_driver_sql("EXPLAIN " + sql).mappings().all()
    return [dict(r) for r in rows]


def _time(url: str, repeats: int, min_trials: int) -> None:
    db = open_database(f"{url.rstrip('/')}/{NAME}")
    with db.session() as s:
        config_ids = list(s.scalars(select(ConfigTag.config).where(ConfigTag.tag == "bench")))
        n_rows = s.scalar(text("SELECT COUNT(*) FROM measurement"))
        n_counts = s.scalar(text("SELECT COUNT(*) FROM measurement_effort"))
        settings = dict(
            s.execute(
                text(
                    "SELECT variable_name, variable_value FROM information_schema.global_variables "
                    "WHERE variable_name IN ('innodb_buffer_pool_size', "
                    "'innodb_flush_log_at_trx_commit', 'version')"
                )
            ).all()
        )
    print(
        f"{len(config_ids):,} configs, {n_rows:,} measurements, {n_counts:,} effort counts; "
        f"{json.dumps(settings)}"
    )
    print(f"load average before: {os.getloadavg()}")
    variants = {
        "default rules (same fingerprint)": HistoryRules(),
        "--max-age 30d": HistoryRules(max_age=parse_max_age("30d")),
        "--platform gpu.model=bench": HistoryRules(platform={"gpu.model": "bench"}),
    }
    for label, rules in variants.items():
        walls, queries, report = [], [], None
        for _ in range(repeats):
            target = create_session(db, SpecWithRules(rules)).id
            t0 = time.perf_counter()
            report = load_jobs(
                db, target, step="perf", tag="bench", solvers=SOLVERS, min_trials=min_trials
            )
            walls.append(time.perf_counter() - t0)
            with db.session() as s:
                history = eligibility(s, get_session(db, target), include_target=False)
                t0 = time.perf_counter()
                found = tuned_enough(s, history, min_trials, config_ids)
                queries.append(time.perf_counter() - t0)
        assert report is not None
        print(f"\n## {label}")
        print(
            f"load_jobs --min-trials {min_trials}: median {statistics.median(walls):.2f} s "
            f"(runs {', '.join(f'{w:.2f}' for w in walls)}); skipped {report.tuned_enough:,} "
            f"pairs, queued {report.inserted:,}"
        )
        print(
            f"effort query alone: median {statistics.median(queries):.2f} s "
            f"(runs {', '.join(f'{q:.2f}' for q in queries)}); {len(found):,} pairs tuned enough"
        )
        with db.session() as s:
            history = eligibility(s, get_session(db, target), include_target=False)
        for row in _explain(db, history, config_ids, min_trials):
            print("  EXPLAIN", json.dumps(row, default=str))
    print(f"\nload average after: {os.getloadavg()}")
    db.dispose()


def SpecWithRules(rules: HistoryRules) -> SessionSpec:  # noqa: N802 - reads as a spec
    return SessionSpec(**{**SPEC.__dict__, "history_rules": rules.to_json()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="MariaDB server URL (no database)")
    parser.add_argument("--configs", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--per-config", type=int, default=110, help="rows per measured config")
    parser.add_argument("--min-trials", type=int, default=40)
    parser.add_argument(
        "--recount", action="store_true", help="rebuild the effort counts of the existing rows"
    )
    parser.add_argument("--reuse", action="store_true", help="time the existing database")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.recount:
        _count(args.url)
    elif not args.reuse:
        _load(args.url, args.configs, args.rows, args.per_config)
    _time(args.url, args.repeats, args.min_trials)


if __name__ == "__main__":
    main()
