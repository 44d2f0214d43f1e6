"""Ranges and log scale (issue #28): what a log-scale range buys a random search over a
learning-rate-like parameter, and what the space operations cost.

Not a test: figures go in bench/spaces.md. Pure (no database, no processes): the searchers
of ``tuna.searchers`` driven in this process.

1. **Log scale.** The objective is ``(log10(lr) + 3.5)**2``, best at ``lr = 10**-3.5``,
   with ``lr`` in ``[1e-6, 1]``. ``Random(space, N, seed=s)`` over ``Float(1e-6, 1)``
   (uniform), ``Float(1e-6, 1, log=True)`` and the old way, a list of ``N`` evenly spaced
   values; reported: the median over ``--seeds`` seeds of the best objective found in
   ``--runs`` draws, and how often the best is within a factor 2 of the optimum's lr.
2. **Cost.** Listing every point of a conditional space (``CartesianProduct``), and
   drawing points from a space with a continuous and a conditional parameter
   (``Random``), per point.

    .venv/bin/python bench/spaces.py --runs 20 --seeds 101
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

from tuna.searchers import CartesianProduct, Categorical, Float, Int, ParameterSpace, Random

BEST_LOG = -3.5


def objective(lr: float) -> float:
    return (math.log10(lr) - BEST_LOG) ** 2


def best_of(space: ParameterSpace, runs: int, seed: int) -> float:
    points = list(Random(space, runs, seed=seed).generate())
    return min(objective(float(p["lr"])) for p in points)


def log_scale(runs: int, seeds: int) -> None:
    spaces = {
        "Float(1e-6, 1) uniform": ParameterSpace({"lr": Float(1e-6, 1.0)}),
        "Float(1e-6, 1, log=True)": ParameterSpace({"lr": Float(1e-6, 1.0, log=True)}),
        f"list of {runs} evenly spaced": ParameterSpace(
            {"lr": [1e-6 + i * (1 - 1e-6) / (runs - 1) for i in range(runs)]}
        ),
    }
    within = math.log10(2) ** 2  # the objective of an lr a factor 2 from the best
    print(f"{'space':32} {'median best':>12} {'within 2x':>10}")
    for name, space in spaces.items():
        bests = [best_of(space, runs, seed) for seed in range(seeds)]
        share = sum(1 for b in bests if b <= within) / seeds
        print(f"{name:32} {statistics.median(bests):12.4f} {share:10.0%}")


def cost() -> None:
    conditional = ParameterSpace(
        {
            "algo": ["naive", "tiled", "blocked"],
            "tile": Int(4, 256, step=4),
            "unroll": Categorical([1, 2, 4, 8], when={"algo": ["tiled", "blocked"]}),
            "vec": Int(1, 16),
            "opt": ["-O1", "-O2", "-O3"],
        },
        constraints=("tile * vec <= 2048",),  # type: ignore[arg-type]
    )
    start = time.perf_counter()
    n = sum(1 for _ in CartesianProduct(conditional).generate())
    listed = time.perf_counter() - start
    print(f"CartesianProduct of a conditional space: {n:,} points, "
          f"{listed / n * 1e6:.2f} us a point")  # fmt: skip
    sampled = ParameterSpace({**conditional.parameters, "lr": Float(1e-5, 1e-1, log=True)})
    start = time.perf_counter()
    n = sum(1 for _ in Random(sampled, 100_000, seed=1).generate())
    drawn = time.perf_counter() - start
    print(f"Random over it with a log-scale float: {n:,} points, {drawn / n * 1e6:.2f} us a point")
    start = time.perf_counter()
    points = refused = 0
    for p in CartesianProduct(conditional).generate():
        points += 1
        refused += conditional.refusal(p) is not None
    checked = time.perf_counter() - start
    print(f"its constraint checked on every point: {refused:,} refused, "
          f"{checked / points * 1e6:.2f} us a point (listing included)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=101)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    log_scale(args.runs, args.seeds)
    print()
    cost()
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
