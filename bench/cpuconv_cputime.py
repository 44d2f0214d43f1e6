"""Wall clock against thread CPU time of one-thread cpuconv candidates, timed in turns.

Not a test: figures go in bench/quickstart.md (issue #30, "Timings that repeat"). One quick
start layer, 512x28x28 -> 128 1x1 (CpuGemm1x1): its default parameters and the winner the
quick start picks there, both one thread, so the whole kernel runs on the calling thread
and ``time.thread_time_ns`` counts all of its work and none of anybody else's. Each turn
(the order alternating) runs each for a 10 ms warm-up and 5 timed runs, and keeps each
one's fastest run by the wall clock and by its thread's CPU time; then the default / winner
ratio of each turn, both ways, and how far the turns spread.

    .venv/bin/python bench/cpuconv_cputime.py --turns 8
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time

from tuna.backends.cpuconv import build, run
from tuna.backends.cpuconv import solvers as sv
from tuna.problems.conv import ConvProblem

LAYER = ConvProblem(
    spatial_dim=2,
    batchsize=1,
    in_channels=512,
    out_channels=128,
    in_size=(28, 28),
    fil_size=(1, 1),
)
SOLVER = "CpuGemm1x1"
WINNER = "16,1,16,256,1,1,0"  # the quick start's winner on this layer in every run of 2026-11-28


def fastest_runs(fn: run.KernelFn, args: tuple[object, ...], runs: int = 5) -> tuple[float, float]:
    """(wall, thread CPU) of the fastest of ``runs`` runs after a 10 ms warm-up, in ms."""
    spent = 0.0
    while spent < 10.0:
        t0 = time.perf_counter_ns()
        fn(*args)
        spent += (time.perf_counter_ns() - t0) / 1e6
    walls, cpus = [], []
    for _ in range(runs):
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        fn(*args)
        c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
        walls.append((w1 - w0) / 1e6)
        cpus.append((c1 - c0) / 1e6)
    return min(walls), min(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=8)
    args = ap.parse_args()
    default = sv.default_params(LAYER, SOLVER)
    units = build.plan_units(LAYER, SOLVER, [default, WINNER], march="native", opt="3")
    table = {prm: (u.name, sym) for u in units for prm, sym in u.symbols}
    ref = run.Reference.get()
    a, b, expected = ref.case(LAYER)
    out = run.aligned_floats(len(expected))
    print(f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.1f}")
    print(f"default {default}, winner {WINNER}: fastest run of each turn, ms")
    ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
    with run.loaded(build.build_units(units), "cputime-") as libs:
        cands = {c.params: c for c in run.candidates(LAYER, SOLVER, table, libs)}
        for turn in range(args.turns):
            timed = {}
            for prm in (default, WINNER) if turn % 2 == 0 else (WINNER, default):
                ws = run.workspace_for(cands[prm], b)
                timed[prm] = fastest_runs(cands[prm].fn, (a, b, out, ws))
            (dw, dc), (ww, wc) = timed[default], timed[WINNER]
            ratios["wall"].append(dw / ww)
            ratios["cpu"].append(dc / wc)
            print(
                f"turn {turn + 1}: default wall {dw:.3f} cpu {dc:.3f} | winner wall {ww:.3f} "
                f"cpu {wc:.3f} | ratio wall {dw / ww:.1f}x cpu {dc / wc:.1f}x",
                flush=True,
            )
    for name, r in ratios.items():
        print(f"{name}: ratio {min(r):.1f}x-{max(r):.1f}x, highest / lowest {max(r) / min(r):.2f}")
    print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
