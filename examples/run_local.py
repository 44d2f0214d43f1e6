"""Run an example's search on this machine, one point at a time, and print what happened.

    .venv/bin/python examples/run_local.py examples/c_build_run [--budget N] [KEY=VALUE ...]

The example directory holds params.py (the parameter file), base.json (the base config) and
spec.py (the build and run commands, the stats format and the objective). This is the
local stand-in for ``tuna search`` until the job-queue driver lands.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

from tuna.backends.bench import LocalBench, run_search
from tuna.errors import TunaError
from tuna.search import Proposer, dry_run, load_base_config, load_parameter_file


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("example", type=Path)
    ap.add_argument("--budget", type=int, default=None, help="most runs")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("set", nargs="*", help="KEY=VALUE overrides of base.json")
    args = ap.parse_args()
    spec_file = args.example / "spec.py"
    module_spec = importlib.util.spec_from_file_location("example_spec", spec_file)
    assert module_spec is not None and module_spec.loader is not None
    example = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(example)
    try:
        space = load_parameter_file(args.example / "params.py")
        base = load_base_config(args.example / "base.json", args.set)
        print("\n".join(dry_run(space, base=base).render()))
        if args.dry_run:
            return 0
        with LocalBench(example.SPEC, space) as bench:
            start = time.monotonic()
            runs = run_search(Proposer(space, base=base), bench, budget=args.budget)
            wall = time.monotonic() - start
        print()
        for i, r in enumerate(runs):
            point = " ".join(f"{k}={r.config[k]}" for k in space.names)
            stats = " ".join(f"{k}={v}" for k, v in r.stats.items())
            print(f"run {i}: {point}  ->  {stats if r.valid else 'INVALID: ' + str(r.reason)}")
        best = example.OBJECTIVE.best(runs)
        best_point = " ".join(f"{k}={best.config[k]}" for k in space.names) if best else "none"
        print(f"best ({example.OBJECTIVE.goal} {example.OBJECTIVE.stat}): {best_point}")
        print(f"runs: {len(runs)}, builds: {len(bench.builds)}, wall: {wall:.1f} s")
    except TunaError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
