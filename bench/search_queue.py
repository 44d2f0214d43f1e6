"""Searches through the queue (issue #15): builds saved, driver overhead, proposal delay.

Not a test: figures go in bench/search_queue.md. It creates a scratch database on the
server named by --url (dropped at the end), a ``bench`` session, and measures:

1. the reference's pathological example (examples/pathological.py) through the queue:
   builds made for its 6 runs (the naive order needs 6);
2. driver overhead: a static search of N points whose run command is a no-op
   (``echo t: 1``, no build step), drained by 4 local ``tuna worker --phase eval --burst``
   processes: runs/s from the workers' start to the last Run recorded;
3. proposal delay: a dynamic search (``Step`` with a predicate, one run in flight) drained
   by 1 worker, the driver polling every 20 ms: for each Run, the time from its record's
   commit (``search_run.finished``, the database clock) to the commit of the transaction
   that makes the next proposal's job claimable (the database clock read right after it).

    .venv/bin/python bench/search_queue.py --url mysql+pymysql://root@127.0.0.1:3306/x
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from scratch import drop_database, scratch_database
from sqlalchemy import func, select, text

from tuna.db import Database, open_database
from tuna.db.models import SearchBuild, SearchRun
from tuna.searches import SearchRequest, SessionSearches, create_search
from tuna.searches.drive import SearchDriver
from tuna.sessions.session import SessionSpec, create_session

REPO = Path(__file__).resolve().parents[1]
NOOP = {"run": "echo t: 1", "owns": "nothing", "stats": {"mode": "lines"}}


def workers(db_url: str, session: int, n: int, batch: int) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "TUNA_DB_URL": db_url}
    argv = [sys.executable, "-m", "tuna.cli", "worker", "-s", str(session), "--phase", "eval"]
    argv += ["--burst", "--claim-batch", str(batch)]
    return [subprocess.Popen(argv, env=env) for _ in range(n)]


def drive_in_thread(db: Database, session: int) -> tuple[threading.Event, threading.Thread]:
    searches = SessionSearches(db, session)
    stop = threading.Event()
    t = threading.Thread(target=searches.run, args=(stop,), kwargs={"poll_s": 0.02})
    t.start()
    return stop, t


def pathological(db: Database, session: int, db_url: str) -> str:
    path = REPO / "examples" / "pathological.py"
    search = create_search(
        db,
        SearchRequest(
            session=session, name="pathological", space_file=str(path),
            space_text=path.read_text(), objective_stat="t",
            spec={"build": "echo {gpu_batch_size} > built", "run": "echo t: {audio_batch_size}",
                  "owns": "nothing"},
        ),
    )  # fmt: skip
    stop, t = drive_in_thread(db, session)
    for p in workers(db_url, session, 2, 1):
        p.wait()
    stop.set()
    t.join()
    with db.session() as s:
        n_runs = s.execute(select(func.count()).where(SearchRun.search == search)).scalar_one()
        n_builds = s.execute(select(func.count()).where(SearchBuild.search == search)).scalar_one()
    return f"{n_builds} builds for {n_runs} runs (naive order: 6)"


def overhead(db: Database, session: int, db_url: str, points: int, n: int, batch: int) -> str:
    space = f"a = list(range({points}))\n"
    search = create_search(
        db,
        SearchRequest(
            session=session, name="noop", space_file="noop.py", space_text=space,
            objective_stat="t", spec=NOOP,
        ),
    )  # fmt: skip
    SearchDriver(db, search).start()  # every point enqueued up front (static)
    stop, t = drive_in_thread(db, session)
    started = time.monotonic()
    for p in workers(db_url, session, n, batch):
        p.wait()
    wall = time.monotonic() - started
    stop.set()
    t.join()
    with db.session() as s:
        done = s.execute(
            select(func.count()).where(SearchRun.search == search, SearchRun.valid.is_(True))
        ).scalar_one()
        first, last = s.execute(
            select(func.min(SearchRun.finished), func.max(SearchRun.finished)).where(
                SearchRun.search == search
            )
        ).one()
    span = (last - first).total_seconds()
    return (
        f"{done} no-op runs, {n} workers, claim batch {batch}: {done / wall:.0f} runs/s over "
        f"the workers' whole life ({wall:.1f} s, start-up included); {done / span:.0f} runs/s "
        f"between the first and the last Run recorded ({span:.1f} s)"
    )


def delay(db: Database, session: int, db_url: str, runs: int) -> str:
    search = create_search(
        db,
        SearchRequest(
            session=session, name="dynamic", space_file="dyn.py", space_text="a = []\n",
            objective_stat="t", spec=NOOP, budget=runs,
            searcher=f"Step('a', 0, {runs * 10}, lambda x: x + 1, lambda r: True)",
        ),
    )  # fmt: skip
    claimable: dict[int, object] = {}
    original = SearchDriver._enqueue

    def timed(self: SearchDriver, proposals: list[Any]) -> dict[int, int]:
        ids = original(self, proposals)
        with self.db.session() as s:
            now = s.execute(text("SELECT NOW(6)")).scalar_one()
        for seq, _ in proposals:
            claimable[seq] = now
        return ids

    SearchDriver._enqueue = timed  # type: ignore[method-assign]
    try:
        stop, t = drive_in_thread(db, session)
        for p in workers(db_url, session, 1, 1):
            p.wait()
        stop.set()
        t.join()
    finally:
        SearchDriver._enqueue = original  # type: ignore[method-assign]
    with db.session() as s:
        finished = dict(
            s.execute(
                select(SearchRun.seq, SearchRun.finished).where(SearchRun.search == search)
            ).all()
        )
    delays = [
        (claimable[k + 1] - finished[k]).total_seconds() * 1000  # type: ignore[operator]
        for k in sorted(finished)
        if k + 1 in claimable and finished[k] is not None
    ]
    delays.sort()
    q = statistics.quantiles(delays, n=100)
    return (
        f"{len(delays)} proposals: Run recorded -> next proposal claimable: p50 {q[49]:.1f} ms, "
        f"p95 {q[94]:.1f} ms, max {delays[-1]:.1f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--points", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--dynamic-runs", type=int, default=200)
    args = ap.parse_args()
    name, db_url = scratch_database(args.url, "tuna_bench_search")
    db = open_database(db_url)
    try:
        print(f"load average before: {os.getloadavg()}")
        session = create_session(db, SessionSpec(arch="cpu", num_cu=1, backend="bench")).id
        print("1. pathological:", pathological(db, session, db_url))
        session = create_session(
            db, SessionSpec(arch="cpu", num_cu=1, backend="bench", label="o")
        ).id
        print("2. overhead:", overhead(db, session, db_url, args.points, args.workers, args.batch))
        session = create_session(
            db, SessionSpec(arch="cpu", num_cu=1, backend="bench", label="d")
        ).id
        print("3. delay:", delay(db, session, db_url, args.dynamic_runs))
        print(f"load average after: {os.getloadavg()}")
    finally:
        db.dispose()
        drop_database(args.url, name)


if __name__ == "__main__":
    main()
