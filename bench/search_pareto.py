"""Two objectives on the exhaustive cpuconv tables of ``bench/search.py`` (issue #28).

    .venv/bin/python bench/search_pareto.py                           # time vs threads
    .venv/bin/python bench/search_pareto.py --second workspace_bytes  # time vs workspace

Objectives ``time_ms`` and the candidate's threads (``NT``) or workspace, both to minimise;
the second is computed from the candidate's parameters (``cpuconv.solvers.candidate_stats``),
not measured. Each strategy gets a share of each space (``--budget``, default a quarter);
``nsga2``, ``tpe`` and ``predictive`` are told both objectives, ``hillclimb`` climbs the
front of what it measured, ``sliced`` shares the budget among the second objective's
values (one cost model ranking each slice), the others optimise time, and each is judged
by the Pareto front of what it measured against the layer's exhaustive front.
Figures go in bench/search.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass

from search import (
    DETERMINISTIC,
    LINEUP,
    NETWORKS,
    Table,
    candidate_stats,
    drive_table,
    history_of,
    load_tables,
    median,
)

from tuna.searchers import Objective, Run
from tuna.searchers.costmodel import HistoryEntry
from tuna.searchers.objective import make_objective

#: The strategies compare-pareto runs by default: the samplers that take several objectives
#: and the built-ins, which optimise the first (time) and are judged by the front of what
#: they measured.
PARETO_LINEUP = [
    "nsga2", "tpe", "predictive", "random", "grid", "hillclimb", "genetic", "model",
    "model --transfer", "sliced", "sliced --transfer",
]  # fmt: skip


@dataclass
class FrontFound:
    """One strategy on one layer with one seed: how much of the exhaustive front it found."""

    size: int  # points of the exhaustive front (distinct values)
    exact: int  # of those, measured (a candidate with the same values)
    near: int  # of those, covered within NEAR: a measured candidate no worse on the others
    seconds: float


#: A front point is "near" found when a candidate measured is within this of its time and
#: no worse on the other objective.
NEAR = 0.02


def front_values(table: Table, params: list[str], objective: Objective) -> set[tuple[float, ...]]:
    """The Pareto front of ``params`` (valid ones) as distinct value tuples."""
    runs = [Run({"params": p}, candidate_stats(table, p)) for p in params if table.times[p]]
    return {tuple(r.stats[t.stat] for t in objective.targets) for r in objective.front(runs)}


def pareto_one(
    table: Table, label: str, seed: int, history: list[HistoryEntry], args: argparse.Namespace,
    objective: Objective,
) -> FrontFound:  # fmt: skip
    measured, seconds, _ = drive_table(
        table, label, seed, history, args.round, args.budget, objective
    )
    every = front_values(table, list(table.times), objective)
    got = [p for p, ms in measured if ms is not None]
    found = front_values(table, got, objective)
    stats = [candidate_stats(table, p) for p in got]
    second = objective.targets[1]
    sign = 1 if second.goal == "min" else -1

    def near(point: tuple[float, ...]) -> bool:
        return any(
            s["time_ms"] <= (1 + NEAR) * point[0] and sign * s[second.stat] <= sign * point[1]
            for s in stats
        )

    return FrontFound(len(every), len(every & found), sum(near(p) for p in every), seconds)


def compare_pareto(args: argparse.Namespace) -> None:
    """Each strategy x seed on each table with ``args.budget`` of its space: how much of the
    exhaustive Pareto front (time_ms:min and ``args.second``:min) it found."""
    objective = make_objective({"time_ms": "min", args.second: "min"})
    tables = load_tables()
    started, load0 = time.process_time(), os.getloadavg()
    print(
        f"objectives time_ms:min, {args.second}:min; {args.budget:.0%} of each space, rounds of "
        f"{args.round}, {args.seeds} seeds; load average {load0[0]:.2f} {load0[1]:.2f} "
        f"{load0[2]:.2f} at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        flush=True,
    )
    train = tables["resnet50"]
    for network in args.networks:
        todo = tables[network]
        sizes = [len(front_values(t, list(t.times), objective)) for t in todo]
        distinct = [len({candidate_stats(t, p)[args.second] for p in t.times}) for t in todo]
        print(
            f"\n### {network}: {len(todo)} layers; exhaustive fronts of {min(sizes)}-"
            f"{max(sizes)} points ({sum(sizes)} in all; layers by front size: "
            f"{dict(sorted(Counter(sizes).items()))}); {args.second} takes "
            f"{min(distinct)}-{max(distinct)} value(s) on a layer\n"
        )
        print(
            "| strategy | front points found (median of seeds; min-max) | layers with the "
            f"whole front | found within {NEAR:.0%} of the time | strategy CPU s per search |"
        )
        print("|---|---|---|---|---|")
        for label in args.strategies:
            seeds = [0] if label in DETERMINISTIC else list(range(args.seeds))
            per_seed: list[list[FrontFound]] = []
            for seed in seeds:
                row = []
                for k, table in enumerate(todo):
                    history: list[HistoryEntry] = []
                    if LINEUP[label][1]:
                        others = [t for i, t in enumerate(train) if network != "resnet50" or i != k]
                        history = history_of(others)
                    row.append(pareto_one(table, label, seed, history, args, objective))
                per_seed.append(row)
            total = sum(sizes)
            exact = sorted(sum(f.exact for f in row) for row in per_seed)
            whole = median([float(sum(f.exact == f.size for f in row)) for row in per_seed])
            near = median([float(sum(f.near for f in row)) for row in per_seed])
            secs = median([f.seconds for row in per_seed for f in row])
            mid = median([float(e) for e in exact])
            print(
                f"| {label} | {mid:.0f} of {total} ({100 * mid / total:.0f} %; "
                f"{exact[0]}-{exact[-1]}) | {whole:.0f} of {len(todo)} | "
                f"{near:.0f} of {total} ({100 * near / total:.0f} %) | {secs:.3f} |",
                flush=True,
            )
    load1 = os.getloadavg()
    print(
        f"\nCPU {time.process_time() - started:.0f} s; load average {load1[0]:.2f} "
        f"{load1[1]:.2f} {load1[2]:.2f} at {time.strftime('%H:%M UTC', time.gmtime())}"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--second", default="threads", choices=["threads", "workspace_bytes"])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=0.25, help="share of each space")
    ap.add_argument("--round", type=int, default=8, help="candidates per round")
    ap.add_argument("--strategies", nargs="+", default=PARETO_LINEUP, choices=list(LINEUP))
    ap.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=list(NETWORKS))
    compare_pareto(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
