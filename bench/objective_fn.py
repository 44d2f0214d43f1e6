"""What a Python objective costs per run: in-process (tuna.tune) against go_fish's workers
(tuna search create --objective-fn), on a function that does nothing measurable.

    .venv/bin/python bench/objective_fn.py [--points 40] [--workers 1 2]

The function returns at once, so every figure is Tuna's own cost of one run: for tuna.tune a
stored search_run; for --objective-fn a job claimed, a child Python started in a fresh copy
of the sources, its JSON line parsed and the run recorded. Not a test; see objective_fn.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MODULE = "def measure(config):\n    return (config['x'] - 17) ** 2\n"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu() -> float:
    """CPU seconds (user + system) of the children waited for so far: less load-bound than
    wall time on a shared machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sh(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return done.stdout


def in_process(root: Path, points: int) -> float:
    env = {**os.environ, "TUNA_DATA_DIR": str(root / "inproc")}
    env.pop("TUNA_DB_URL", None)
    code = (
        "import time, tuna\n"
        f"space = {{'x': list(range({points}))}}\n"
        "t = time.perf_counter()\n"
        "tuna.tune('tuned:measure', space, name='bench')\n"
        "print(time.perf_counter() - t)\n"
    )
    return float(sh(env, sys.executable, "-c", code).strip())


def on_workers(root: Path, points: int, workers: int) -> float:
    env = {**os.environ, "TUNA_DATA_DIR": str(root / f"fleet{workers}"), "COLUMNS": "200"}
    env.pop("TUNA_DB_URL", None)
    tuna = str(BIN / "tuna")
    sh(env, tuna, "session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "bench")
    sh(
        env,
        tuna,
        "search",
        "create",
        str(root / "space.json"),
        "-s",
        "1",
        "--name",
        "b",
        "--objective-fn",
        "tuned:measure",
        "--source",
        str(root / "src"),
        "--owns",
        "nothing",
    )
    t = time.perf_counter()
    sh(env, str(BIN / "go_fish"), "-s", "1", "--search", "--local", "-w", str(workers))
    return time.perf_counter() - t


def one_child(root: Path, times: int) -> list[float]:
    config = root / "config.json"
    config.write_text(json.dumps({"x": 3}))
    env = {**os.environ, "TUNA_CONFIG": str(config)}
    out = []
    for _ in range(times):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "tuna.backends.bench.function", "tuned:measure"],
            cwd=root / "src",
            env=env,
            capture_output=True,
            check=True,
        )
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=40)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tuna-bench-fn-") as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        (root / "src" / "tuned.py").write_text(MODULE)
        (root / "space.json").write_text(json.dumps({"x": list(range(args.points))}))
        print(f"load average before: {load()}")
        c = cpu()
        child = one_child(root, 10)
        print(
            f"one child alone (python -m tuna.backends.bench.function), 10 starts: median "
            f"{statistics.median(child) * 1000:.0f} ms wall, min {min(child) * 1000:.0f} ms; "
            f"{(cpu() - c) / 10 * 1000:.0f} ms CPU each"
        )
        os.chdir(root / "src")
        c = cpu()
        took = in_process(root, args.points)
        print(
            f"tuna.tune in-process, {args.points} runs: {took:.2f} s wall "
            f"({took / args.points * 1000:.0f} ms a run); the whole process (start, import, "
            f"new database) {cpu() - c:.2f} s CPU"
        )
        for w in args.workers:
            c = cpu()
            took = on_workers(root, args.points, w)
            print(
                f"--objective-fn, go_fish --local -w {w}, {args.points} runs (+1 build): "
                f"{took:.2f} s wall ({took / args.points * 1000:.0f} ms a run); "
                f"{cpu() - c:.2f} s CPU of go_fish, its workers and their children"
            )
        print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
