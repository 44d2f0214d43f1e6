"""Pruning through the queue (issue #28): what the median and halving pruners save on a
search whose runs report a loss per epoch, and whether they still find the best.

Not a test: figures go in bench/pruning.md. It makes a scratch SQLite database in a
temporary directory, a ``bench`` session, and the same search three times (no pruner,
``median(warmup_runs=3)``, ``halving(min_step=1, factor=3)``): ``--runs`` learning rates
drawn by ``Random(space, N, seed=3)`` from a log grid, each run a Python "training" of
``--epochs`` epochs of ``--pause`` seconds that prints ``tuna:intermediate EPOCH LOSS``
after each (the loss is ``(log10(lr) + 2.5)**2 + 1 / (epoch + 1)``: best at lr = 10^-2.5,
every curve falling the same way), then ``loss: L``. Each search is driven in this process
(``SessionSearches``) and drained by ``--workers`` local ``tuna worker --burst``
processes. Reported per pruner: wall time, runs pruned, epochs run (of runs x epochs),
and the best lr found.

    .venv/bin/python bench/pruning.py --runs 16 --epochs 9 --pause 0.2 --workers 2
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from sqlalchemy import select

from tuna.db import Database, migrate, open_database
from tuna.db.engine import make_engine
from tuna.db.models import SearchRun
from tuna.searches import SearchRequest, SessionSearches, create_search
from tuna.sessions.session import SessionSpec, create_session

TRAIN = """\
import math, sys, time
lr, epochs, pause = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
floor = (math.log10(lr) + 2.5) ** 2
for epoch in range(epochs):
    loss = floor + 1.0 / (epoch + 1)
    print(f"tuna:intermediate {epoch} {loss:.6f}", flush=True)
    time.sleep(pause)
print(f"loss: {loss:.6f}")
"""


def drain(db: Database, db_url: str, session: int, workers: int) -> float:
    """Drive the session's searches here and drain them with local burst workers; seconds."""
    searches = SessionSearches(db, session)
    stop = threading.Event()
    driver = threading.Thread(target=searches.run, args=(stop,), kwargs={"poll_s": 0.02})
    env = {**os.environ, "TUNA_DB_URL": db_url}
    argv = [sys.executable, "-m", "tuna.cli", "worker", "-s", str(session), "--phase", "eval"]
    start = time.monotonic()
    driver.start()
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [subprocess.Popen([*argv, "--burst"], env=env, **quiet) for _ in range(workers)]
    for p in procs:
        p.wait()
    stop.set()
    driver.join()
    return time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=9)
    ap.add_argument("--pause", type=float, default=0.2)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    print("load average before:", tuple(round(x, 1) for x in os.getloadavg()))
    grid = [round(10 ** (-5 + 4 * i / 31), 7) for i in range(32)]  # 1e-5 .. 1e-1
    space = '{"lr": [' + ", ".join(repr(x) for x in grid) + "]}"
    with tempfile.TemporaryDirectory(prefix="tuna-bench-pruning-") as tmp:
        source = Path(tmp) / "src"
        source.mkdir()
        (source / "train.py").write_text(TRAIN)
        db_url = f"sqlite:///{tmp}/tuna.db"
        engine = make_engine(db_url)
        with engine.begin() as conn:
            migrate.upgrade(conn)
        engine.dispose()
        db = open_database(db_url)
        base = None
        for pruner in (None, "median(warmup_runs=3)", "halving(min_step=1, factor=3)"):
            session = create_session(
                db, SessionSpec(arch="cpu", num_cu=1, backend="bench", label=str(pruner))
            ).id
            spec = {
                "run": f"{sys.executable} {source / 'train.py'} {{lr}} {args.epochs} {args.pause}",
                "owns": "nothing",
                "run_timeout_s": 600,
            }
            search = create_search(
                db,
                SearchRequest(
                    session=session, name="lr", space_file="lr.json", space_text=space,
                    spec=spec, objective_stat="loss", searcher=f"Random(space, {args.runs}, seed=3)",  # noqa: E501
                    parallelism=args.workers, pruner=pruner,
                ),
            )  # fmt: skip
            wall = drain(db, db_url, session, args.workers)
            with db.session() as s:
                rows = list(
                    s.execute(select(SearchRun).where(SearchRun.search == search)).scalars()
                )
            epochs = sum(len(r.intermediate or []) for r in rows)
            pruned = sum(bool(r.pruned) for r in rows)
            valid = [r for r in rows if r.valid]
            best = min(valid, key=lambda r: r.value or math.inf)
            line = (
                f"{pruner or 'no pruner'}: {wall:.1f} s wall, {len(rows)} runs, {pruned} pruned, "
                f"{epochs} of {len(rows) * args.epochs} epochs run; best lr {best.config['lr']} "
                f"(loss {best.value:.4f})"
            )
            if base is None:
                base = best.config["lr"]
            else:
                line += "; same best as no pruner" if best.config["lr"] == base else "; best missed"
            print(line, flush=True)
        db.dispose()
    print("load average after:", tuple(round(x, 1) for x in os.getloadavg()))


if __name__ == "__main__":
    main()
