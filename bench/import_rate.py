"""Import rate: distinct MIOpenDriver lines imported per second.

Generates N distinct conv lines, imports them with ``import_configs`` into a fresh
database, and reports parse and write time separately. Not a test: figures go in
bench/README.md.

    # against a throwaway MariaDB (bin/test-db start prints the URL)
    eval "$(bin/test-db start)"
    .venv/bin/python bench/import_rate.py --url "$TUNA_TEST_DB_URL" -n 100000
    .venv/bin/python bench/import_rate.py --url sqlite:////tmp/bench.db -n 100000
"""

from __future__ import annotations

import argparse
import itertools
import secrets
import time

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tuna.catalog.importer import import_configs
from tuna.catalog.parsing import parse_lines
from tuna.db import migrate, open_database
from tuna.db.engine import make_engine


def driver_lines(n: int) -> list[tuple[int, str]]:
    shapes = itertools.product(
        (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256),  # n
        (3, 16, 32, 64, 128, 256, 512, 1024),  # c
        (7, 13, 14, 27, 28, 56, 112, 224),  # H=W
        (16, 32, 64, 128, 256, 512, 1024, 2048),  # k
        ((1, 0, 1), (3, 1, 1), (3, 1, 2), (5, 2, 1), (7, 3, 2)),  # filter, pad, stride
        (1, 2, 4),  # direction
    )
    lines = []
    for no, (nb, c, hw, k, (f, p, u), d) in enumerate(itertools.islice(shapes, n), start=1):
        lines.append(
            (
                no,
                f"./bin/MIOpenDriver conv -n {nb} -c {c} -H {hw} -W {hw} -k {k} "
                f"-y {f} -x {f} -p {p} -q {p} -u {u} -v {u} -l 1 -j 1 -m conv "
                f"-g 1 -F {d} -t 1",
            )
        )
    if len(lines) < n:
        raise SystemExit(f"only {len(lines)} distinct shapes available")
    return lines


def fresh_database(url: str) -> str:
    u = make_url(url)
    if u.get_backend_name() == "sqlite":
        return url
    name = f"tuna_bench_{secrets.token_hex(3)}"
    server = create_engine(u.set(database=None))
    with server.begin() as conn:
        conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
    server.dispose()
    return u.set(database=name).render_as_string(hide_password=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("-n", type=int, default=100_000)
    args = ap.parse_args()
    url = fresh_database(args.url)
    engine = make_engine(url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
    engine.dispose()
    db = open_database(url)
    lines = driver_lines(args.n)

    t0 = time.perf_counter()
    parsed = parse_lines(lines)
    t_parse = time.perf_counter() - t0
    assert not parsed.bad and len(parsed.entries) == args.n

    t0 = time.perf_counter()
    report = import_configs(db, lines, tag="bench")
    t_total = time.perf_counter() - t0
    assert report.inserted == args.n, report

    t0 = time.perf_counter()
    again = import_configs(db, lines, tag="bench")
    t_again = time.perf_counter() - t0
    assert again.inserted == 0 and again.already_present == args.n

    backend = db.engine.dialect.name
    if backend != "sqlite":
        with db.engine.begin() as conn:
            conn.exec_driver_sql(f"DROP DATABASE {db.url.database}")
    print(f"backend {backend}: {args.n} distinct lines")
    print(f"  parse only          {t_parse:7.2f} s  ({args.n / t_parse:,.0f} lines/s)")
    print(f"  full import         {t_total:7.2f} s  ({args.n / t_total:,.0f} lines/s)")
    print(f"  re-import (no-op)   {t_again:7.2f} s  ({args.n / t_again:,.0f} lines/s)")
    db.dispose()


if __name__ == "__main__":
    main()
