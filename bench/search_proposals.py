"""The pure layer of a search, timed: what a driver pays per proposal before any queue work.

    .venv/bin/python bench/search_proposals.py

1. A static search: Proposer over a 20,000-point CartesianProduct (checking, merging and
   META_is_config_valid per point), and the schedule of those points.
2. A dynamic search: a Composer(Bisect, Step, Step) sent a Run per proposal.
3. Resume: replaying 10,000 recorded Runs into the 20,000-point product, and 2,000 into a
   dynamic searcher. Each figure is the best of three.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from tuna.searchers import (
    Bisect,
    Composer,
    ParameterSpace,
    Proposer,
    Run,
    Step,
    plan_schedule,
    replay,
)
from tuna.searchers.space import parse_python_space

STATIC = """
a = list(range(100))
b = list(range(50))
c = ["x", "y", "z", "w"]
def META_get_no_rebuild_params():
    return ["a"]
def META_is_config_valid(config):
    return config["b"] % 7 != 3
"""


def best_of(n: int, fn: Callable[[], int]) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(n):
        t = time.perf_counter()
        count = fn()
        times.append(time.perf_counter() - t)
    return min(times), count


def static_proposals() -> int:
    space = parse_python_space(STATIC, "bench.py")
    proposals = Proposer(space).proposals()
    plan_schedule(space, [p.config for p in proposals])
    return len(proposals)


def composer() -> Composer:
    return Composer(
        [
            Bisect("qps", 0, 10**9, 1, predicate=lambda r: r.stats["ok"]),
            Step("streams", 1, 10**6, lambda s: s + 1),
            Step("batch", 10**6, 1, lambda b: b - 1),
        ],
        timeout=20_000,
    )


DYN_SPACE = ParameterSpace({"qps": [], "streams": [], "batch": []})


def dynamic_proposals() -> int:
    proposer = Proposer(DYN_SPACE, composer())
    p, n = proposer.start(), 0
    while p is not None:
        n += 1
        p = proposer.send(Run(p.config, {"ok": n % 3 == 0}))
    return n


def main() -> None:
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    t, n = best_of(3, static_proposals)
    print(f"static: {n} proposals + schedule in {t:.3f} s = {n / t:,.0f} proposals/s")
    t, n = best_of(3, dynamic_proposals)
    print(f"dynamic (Composer): {n} proposals in {t:.3f} s = {n / t:,.0f} proposals/s")

    space = parse_python_space(STATIC, "bench.py")
    recorded = [p for i, p in enumerate(Proposer(space).proposals()) if i % 2 == 0]
    runs = [Run(p.config) for p in recorded]

    def resume_static() -> int:
        r = replay(space, runs)
        rest, p = 0, r.next
        while p is not None:
            rest, p = rest + 1, r.proposer.send(None)
        return len(runs)

    t, n = best_of(3, resume_static)
    print(f"resume static: {n} recorded runs replayed (and the rest listed) in {t:.3f} s")

    proposer = Proposer(DYN_SPACE, composer())
    dyn_runs: list[Run] = []
    p = proposer.start()
    while p is not None and len(dyn_runs) < 2000:
        dyn_runs.append(Run(p.config, {"ok": len(dyn_runs) % 3 == 2}))
        p = proposer.send(dyn_runs[-1])

    def resume_dynamic() -> int:
        replay(DYN_SPACE, dyn_runs, composer())
        return len(dyn_runs)

    t, n = best_of(3, resume_dynamic)
    print(f"resume dynamic: {n} recorded runs replayed in {t:.3f} s = {n / t:,.0f} runs/s")


if __name__ == "__main__":
    main()
