"""Claims that prefer held builds (issue #15): their latency against the ordinary claim.

Not a test: figures go in bench/claims.md ("Claims that prefer a held build"). It creates a
scratch database on the server named by --url (dropped at the end), a search of B builds x
R runs (runs stored as the builds are), finishes every run of the first build, and times
one worker's claims of one run, each recorded before the next claim (untimed), so that a
build's in-flight runs stay few as with real workers:

* no held builds: the ordinary claim (what every conv worker does);
* a held build with ready runs: the plain read of the build's runs not ended, the locking
  read of those still ready, the UPDATE, the COMMIT;
* a held build whose runs all ended: the read finds none, the ordinary claim follows.

It also prints the plan of the held read and its server-side time (ANALYZE FORMAT=JSON).

    .venv/bin/python bench/claims_held.py --url mysql+pymysql://root@127.0.0.1:3306/
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence

from scratch import drop_database, scratch_database
from sqlalchemy import select

from tuna.backends.base import BuildOutcome, RunOutcome
from tuna.db import Database, open_database
from tuna.db.models import SearchRun
from tuna.jobs import Phase, claim_jobs, record_outcomes
from tuna.searches import SearchRequest, create_search
from tuna.searches.drive import SearchDriver
from tuna.sessions.session import SessionSpec, create_session


def timed(db: Database, session: int, label: str, held: Sequence[int], n: int) -> None:
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        jobs = claim_jobs(db, session, Phase.EVAL, owner="w", limit=1, held=held)
        lat.append((time.perf_counter() - t) * 1000)
        assert jobs, "the queue ran dry: use more runs"
        record_outcomes(db, "w", [(j, RunOutcome(stats={"t": 1})) for j in jobs])
    lat.sort()
    print(
        f"  {label:<36} p50 {statistics.median(lat):6.2f} ms, "
        f"p95 {lat[int(0.95 * n)]:6.2f} ms ({n} claims of 1)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--builds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=1000, help="runs per build")
    ap.add_argument("--claims", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    name, url = scratch_database(args.url, "tuna_bench_held")
    db = open_database(url)
    try:
        session = create_session(db, SessionSpec(arch="cpu", num_cu=1, backend="bench")).id
        space = (
            f"a = list(range({args.runs}))\nb = list(range({args.builds}))\n\n"
            "def META_get_no_rebuild_params():\n    return ['a']\n"
        )
        search = create_search(
            db,
            SearchRequest(
                session=session, name="s", space_file="p.py", space_text=space,
                spec={"build": "true {b}", "run": "echo t: {a}", "owns": "nothing"},
                objective_stat="t",
            ),
        )  # fmt: skip
        SearchDriver(db, search).start()
        for b in claim_jobs(db, session, Phase.COMPILE, owner="b", limit=args.builds):
            record_outcomes(db, "b", [(b, BuildOutcome(artifact=f"{b.search_build}".encode()))])
        with db.session() as s:
            builds = sorted(
                set(s.scalars(select(SearchRun.build).where(SearchRun.search == search)))
            )
        done, busy = builds[0], builds[-1]
        while got := claim_jobs(db, session, Phase.EVAL, owner="f", limit=500, held=[done]):
            record_outcomes(db, "f", [(j, RunOutcome(stats={"t": 1})) for j in got])
            with db.session() as s:
                if (
                    s.scalar(
                        select(SearchRun.id).where(
                            SearchRun.build == done, SearchRun.valid.is_(None)
                        )
                    )
                    is None
                ):
                    break
        held_read = (
            "SELECT job.id FROM job JOIN search_run ON search_run.id = job.search_run "
            f"WHERE search_run.build IN ({busy}, {builds[-2]}) AND search_run.valid IS NULL "
            "ORDER BY search_run.build, search_run.id LIMIT 65"
        )
        with db.engine.connect() as conn:
            for row in conn.exec_driver_sql("EXPLAIN " + held_read):
                print("  EXPLAIN", tuple(row))
            plan = json.loads(conn.exec_driver_sql("ANALYZE FORMAT=JSON " + held_read).scalar())
            print(f"  held read, server time {plan['query_block']['r_total_time_ms']:.3f} ms")
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
        print(f"{args.builds} builds x {args.runs} runs, load average {load}")
        for _ in range(args.rounds):
            timed(db, session, "no held builds (the ordinary claim)", (), args.claims)
            timed(db, session, "a held build with ready runs", [busy], args.claims)
            timed(db, session, f"a held build, its {args.runs} runs ended", [done], args.claims)
    finally:
        db.dispose()
        drop_database(args.url, name)


if __name__ == "__main__":
    main()
