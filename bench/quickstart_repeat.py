"""Does the quick start's figure repeat? ``tuna quickstart`` run back to back, its geomeans.

Not a test: figures go in bench/quickstart.md. Each run is ``python -m tuna.cli quickstart``
on a scratch SQLite database of its own (a temporary directory), as a user runs it; this
script reads the tuned / default geometric mean (and the range over the re-timing turns
where the quick start prints one) and each layer's "vs default params" from its output, and
takes the load average just before and just after. At the end: the median of the geomeans
and how far the runs stray from it (issue #30's target: five back-to-back runs within
+-15 % of their median, on a quiet machine).

``--code DIR`` adds runs of the Tuna found in DIR (an older commit unpacked there, for a
before/after): the runs then alternate, DIR first, so both meet the same stretch of load.

    .venv/bin/python bench/quickstart_repeat.py --runs 5
    .venv/bin/python bench/quickstart_repeat.py --runs 3 --code /tmp/qs-before --out /tmp/qs-out
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

_GEOMEAN = re.compile(
    r"^geometric mean speed-up of tuning over default parameters: ([\d.]+)x"
    r"(?:, ([\d.]+)x-([\d.]+)x over (\d+) turns)?",
    re.MULTILINE,
)
_LAYER = re.compile(r"^(\S+-NCHW-FP32-F)\s+(Cpu\w+)\s+\S+\s+([\d.]+)\s+\S+\s+([\d.]+)x\s*$", re.M)


@dataclass
class Run:
    code: str
    started: str
    load: tuple[float, float]  # one-minute load average before, after
    wall_s: float
    geomean: float
    turns: str  # "lo-hi over N turns" or ""
    layers: list[str]  # each layer's "vs default params", in the quick start's order
    unstable: bool


def quickstart(code: Path | None, keep: Path | None = None) -> Run:
    """One quick start of ``code`` (this checkout when None) on a scratch database; its
    output is written to ``keep`` when given."""
    env = dict(os.environ, TTY_COMPATIBLE="0", NO_COLOR="1", COLUMNS="250")
    if code:
        env["PYTHONPATH"] = str(code)
    with tempfile.TemporaryDirectory(prefix="tuna-qs-repeat-") as tmp:
        env["TUNA_DB_URL"] = f"sqlite:///{tmp}/tuna.db"
        env["TUNA_LOG_DIR"] = f"{tmp}/logs"
        started = dt.datetime.now(dt.UTC).strftime("%H:%M:%S")
        before = os.getloadavg()[0]
        t0 = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-m", "tuna.cli", "quickstart"],
            env=env,
            cwd=str(code) if code else None,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - t0
        after = os.getloadavg()[0]
    if keep:
        keep.write_text(out.stdout)
    m = _GEOMEAN.search(out.stdout)
    if out.returncode or not m:
        sys.exit(f"quickstart failed ({out.returncode}):\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    turns = f"{m[2]}-{m[3]}x over {m[4]}" if m[2] else ""
    layers = [f"{x[3]}x" for x in _LAYER.findall(out.stdout)]
    line = out.stdout[m.start() :].partition("\n")[0]
    name = str(code) if code else "this checkout"
    return Run(name, started, (before, after), wall, float(m[1]), turns, layers, "unstable" in line)


def summary(runs: list[Run]) -> str:
    values = [r.geomean for r in runs]
    median = statistics.median(values)
    lo, hi = min(values) / median - 1, max(values) / median - 1
    return (
        f"{runs[0].code}: {len(runs)} runs, median geomean {median:.2f}x, "
        f"range {min(values):.2f}x-{max(values):.2f}x ({lo:+.0%} / {hi:+.0%} of the median)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="quick starts of each code (5)")
    ap.add_argument("--code", type=Path, help="a Tuna tree to run, alternating with this one")
    ap.add_argument("--out", type=Path, help="a folder for each run's output (run-N-WHICH.txt)")
    args = ap.parse_args()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    codes: list[Path | None] = [args.code, None] if args.code else [None]
    done: dict[Path | None, list[Run]] = {c: [] for c in codes}
    print(f"{dt.date.today()}, {os.cpu_count()} CPUs; one-minute load average before -> after")
    print("| code | UTC | load | wall | geomean | turns | per layer vs default | unstable |")
    print("|---|---|---|---|---|---|---|---|")
    for n in range(1, args.runs + 1):
        for code in codes:
            which = "before" if code else "this"
            r = quickstart(code, args.out / f"run-{n}-{which}.txt" if args.out else None)
            done[code].append(r)
            print(
                f"| {r.code} | {r.started} | {r.load[0]:.1f} -> {r.load[1]:.1f} | "
                f"{r.wall_s:.0f} s | {r.geomean:.2f}x | {r.turns or '-'} | "
                f"{', '.join(r.layers)} | {'yes' if r.unstable else 'no'} |",
                flush=True,
            )
    for code in codes:
        print(summary(done[code]))


if __name__ == "__main__":
    main()
