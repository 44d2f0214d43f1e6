"""Worker start-up: seconds from exec of ``tuna worker`` to its first claim.

Not a test: figures go in bench/quickstart.md. Each run execs ``python -m tuna.cli -vv worker
--max-jobs 1`` on an embedded SQLite database holding a noop session, and reads the
time of the claim from the worker's own log line ("... claimed 1 compile job(s)"), against
the wall clock taken just before the exec. ``--code DIR`` runs the Tuna found in DIR (a
worktree of an older commit, for before/after figures): the database is set up by that
code too.

On a shared machine the wall times follow the load; two figures follow it less: the whole
process's CPU time (user + system), and the import of the worker command as
``python -X importtime`` counts it (the least of ``--runs`` imports, in a fresh interpreter
each).

    .venv/bin/python bench/worker_start.py --runs 5
    .venv/bin/python bench/worker_start.py --runs 5 --code /tmp/old-7bea688
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETUP = """
import sys
from tuna.db import open_database
from tuna.catalog.importer import import_configs
from tuna.jobs.load import load_jobs
try:
    from tuna.sessions import SessionSpec, create_session
except ImportError:
    from tuna.sessions import SessionSpec, create_session
db = open_database(sys.argv[1])
lines = [(1, "./bin/MIOpenDriver conv -n 1 -c 64 -H 56 -W 56 -k 64 -y 1 -x 1 -p 0 -q 0 -F 1")]
import_configs(db, lines, tag="start")
for _ in range(int(sys.argv[2])):  # one session per run: each worker finds a job ready
    s = create_session(db, SessionSpec(arch="noop", num_cu=1, backend="noop"))
    load_jobs(db, s.id, step="perf", tag="start", force=True)
    print(s.id)
"""
_CLAIMED = re.compile(r"^(\S+ \S+) DEBUG .* claimed \d+ compile job", re.MULTILINE)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--code", type=Path, help="a Tuna checkout to run instead of this one")
    args = ap.parse_args()
    env = dict(os.environ)
    # Bytecode cached, as an installed Tuna has it: without it each worker compiles every module
    # it imports (tuna's own and, in a venv installed without .pyc files, its libraries').
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cwd = None
    if args.code:
        env["PYTHONPATH"] = str(args.code)
        cwd = str(args.code)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/start.db"
        env["TUNA_DB_URL"] = url
        sessions = subprocess.run(
            [sys.executable, "-c", SETUP, url, str(args.runs)], env=env, cwd=cwd, check=True,
            capture_output=True, text=True,
        ).stdout.split()  # fmt: skip
        _import_seconds(env, cwd)  # writes the bytecode caches
        starts, totals, cpus = [], [], []
        for session in sessions:
            cmd = [sys.executable, "-m", "tuna.cli", "-vv", "worker", "--session", session]
            cmd += ["--phase", "compile", "--max-jobs", "1"]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.time()
            out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
            total = time.time() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            m = _CLAIMED.search(out.stderr)
            if out.returncode or not m:
                sys.exit(f"worker failed ({out.returncode}):\n{out.stderr[-2000:]}")
            claimed = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            starts.append(claimed - t0)
            totals.append(total)
    imports = [_import_seconds(env, cwd) for _ in range(args.runs)]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{args.code or 'this checkout'}: exec -> first claim median "
        f"{statistics.median(starts):.3f} s (min {min(starts):.3f}, max {max(starts):.3f}); "
        f"whole process median {statistics.median(totals):.3f} s, CPU (user+sys) median "
        f"{statistics.median(cpus):.3f} s; importtime of tuna.cli.worker min "
        f"{min(imports):.3f} s (median {statistics.median(imports):.3f}); {args.runs} runs; "
        f"load average {load}"
    )


def _import_seconds(env: dict[str, str], cwd: str | None) -> float:
    """``tuna.cli.worker``'s cumulative import time, as ``python -X importtime`` reports it."""
    cmd = [sys.executable, "-X", "importtime", "-c", "import tuna.cli.worker"]
    err = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=True).stderr
    m = re.search(r"^import time:\s+\d+ \|\s+(\d+) \| tuna\.cli\.worker$", err, re.MULTILINE)
    if not m:
        sys.exit(f"no import time for tuna.cli.worker in:\n{err[-2000:]}")
    return int(m.group(1)) / 1e6


if __name__ == "__main__":
    main()
