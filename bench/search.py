"""Search strategies side by side, the way the loop-tuning paper reports them (issue #16).

Two phases (not a test; figures go in bench/search.md):

    .venv/bin/python bench/search.py measure     # exhaustive tables of real kernels (slow)
    .venv/bin/python bench/search.py compare     # every strategy x 5 seeds on the tables
    .venv/bin/python bench/search.py check       # pass/fail: the model on the frozen tables

**measure**: for each distinct forward 1x1 and 3x3 layer at batch 1 of ResNet-50 (19 layers,
the training set) and of Inception-v3 (held out: the model never trains on it), every
candidate of CpuIm2colGemm's space (the solver that applies to every such layer, and wins
most: bench/cpuconv.md) is built with ``cc -O3 -march=native`` and verified and timed with
``tuna.backends.cpuconv.run.build_and_measure``: one exhaustive table per layer under
``bench/out/search/`` (not in git). A layer whose table exists is not measured again. The
tables bench/search.md reports are kept in one file, ``bench/data/search_tables.json``
(137 KB), which ``compare`` reads when nothing was measured here.

**compare**: each strategy runs against the tables (a measurement is a table lookup) with
5 seeds, a budget of the whole space and no early stopping, so that every curve runs to
the end. ``model --transfer`` on a ResNet-50 layer learns from the other 18 layers' tables
(leave one out); on an Inception-v3 layer, from all 19 ResNet-50 tables.

**check**: ``random`` and ``model --transfer`` as ``compare`` runs them, on the frozen tables
only, held to issue #30's targets (``model --transfer`` within 5 % with at most 0.20 of
random's measurements on each network, within 2 % having measured at most 15 % of every
layer's space); it prints the figures and exits 1 when one is missed. A change to cpuconv's
candidate features or to the cost model runs it before it lands (bench/search.md).

Two objectives on the same tables: ``bench/search_pareto.py``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import pickle
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuna.backends.cpuconv import build, run
from tuna.backends.cpuconv import solvers as sv
from tuna.backends.cpuconv.features import candidate_features, problem_features
from tuna.problems.conv import ConvProblem
from tuna.problems.driver import is_conv_line, parse_driver_line
from tuna.searchers import Objective, Run
from tuna.searchers.costmodel import HistoryEntry
from tuna.searchers.strategies import CandidateSpace, make_strategy

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
OUT = HERE / "out" / "search"
FROZEN = DATA / "search_tables.json"
SOLVER = sv.IM2COL
NETWORKS = {"resnet50": DATA / "resnet50.txt", "inception3": DATA / "inception3.txt"}
#: Held-out layers: every other one of Inception-v3's of at most 0.06 GFLOP (8 layers, 1x1
#: and 3x3/2). Exhaustive tables cost: a 0.2-GFLOP layer took 206 s on 2 busy cores, and
#: Inception-v3 has 3x3 layers of 0.4-1.4 GFLOP.
HELD_OUT_MAX_GFLOP = 0.06


def layers(path: Path) -> list[ConvProblem]:
    seen: dict[ConvProblem, None] = {}
    for line in path.read_text().splitlines():
        if not is_conv_line(line):
            continue
        for p in parse_driver_line(line):
            if p.direction == "F" and p.fil_size in ((1, 1), (3, 3)):
                seen.setdefault(p.with_batchsize(1), None)
    return list(seen)


def network_layers(network: str) -> list[ConvProblem]:
    todo = layers(NETWORKS[network])
    todo = [p for p in todo if sv.applicability(p, SOLVER) is None]
    if network != "resnet50":
        todo = [p for p in todo if sv.flops(p) / 1e9 <= HELD_OUT_MAX_GFLOP][::2]
    return todo


def layer_name(p: ConvProblem) -> str:
    (hi, wi), (fy, fx) = p.in_size, p.fil_size
    return f"{p.in_channels}x{hi}x{wi}->{p.out_channels} {fy}x{fx}/{p.stride[0]}"


def table_path(network: str, i: int) -> Path:
    return OUT / f"{network}-{i:02d}.json"


#: Re-timing (see measure_layer): the contenders are the CONTEND_TOP fastest candidates of
#: the screening and any others within CONTEND x of its best; each gets ``passes``
#: interleaved passes of ``runs`` timed runs.
CONTEND = 2.0
CONTEND_TOP = 40


def measure_layer(
    p: ConvProblem, jobs: int, repeats: int, passes: int, runs: int, only: list[str] | None = None
) -> dict[str, Any]:
    """One layer's exhaustive table, timed to resist a loaded machine.

    1. Screening: every candidate built, verified and timed by ``run.measure`` (median of
       ``repeats``, racing and 4x pruning, as a perf job times them).
    2. Re-timing: the *contenders* (the :data:`CONTEND_TOP` fastest of the screening and
       any others within :data:`CONTEND` x of its best: under load 10 a median of 3 can be
       2.4x a candidate's fastest run, so a threshold alone would keep too few) are timed
       again in ``passes`` passes; each pass visits every
       contender once, in a fresh seeded random order, and times it ``runs`` times. A
       contender's time is the **minimum of all its re-timed runs** (``passes`` x ``runs``).
       Load only ever adds time, so the minimum is the least loaded estimate, and spreading
       each candidate's runs over the whole re-timing (not back to back) gives every
       contender the same chance of a quiet moment. Others keep their screening time.
    """
    import random

    params = sv.tuning_space(p, SOLVER)
    if only is not None:  # the candidates of an earlier table: the same space, re-measured
        # (a table of before LO and PB names them with 5 fields: LO = PB = 0)
        only = [sv.format_params(sv.parse_params(SOLVER, prm)) for prm in only]
        params = [prm for prm in only if prm in set(params)]
    started = time.monotonic()
    load = os.getloadavg()[0]
    units = build.plan_units(p, SOLVER, params, march="native")
    kernels = build.build_units(units, jobs=jobs)
    built = time.monotonic()
    table = {prm: (u.name, sym) for u in units for prm, sym in u.symbols}
    ref = run.Reference.get()
    a, b, expected = ref.case(p)
    with run.loaded(kernels, "cpuconv-search-") as libs:
        cands = run.candidates(p, SOLVER, table, libs)
        screened = run.measure(p, cands, tolerance=run.tolerance(SOLVER), repeats=repeats)
        times: dict[str, float | None] = {m.params: m.time_ms for m in screened}
        best = min(t for t in times.values() if t is not None)
        ranked = sorted((t, c.params) for c in cands if (t := times[c.params]) is not None)
        chosen = {
            prm for i, (t, prm) in enumerate(ranked) if i < CONTEND_TOP or t <= CONTEND * best
        }
        contenders = [c for c in cands if c.params in chosen]
        out = (ctypes.c_float * len(expected))()
        ws = {c.params: run.workspace_for(c, b) for c in contenders}  # each its own weights
        samples: dict[str, list[float]] = {c.params: [] for c in contenders}
        rng = random.Random(f"{layer_name(p)}-retime")
        loads = [os.getloadavg()[0]]
        for _ in range(passes):
            rng.shuffle(contenders)
            for c in contenders:
                for _ in range(runs):
                    samples[c.params].append(run._time_ms(c.fn, a, b, out, ws[c.params]))
            loads.append(os.getloadavg()[0])
    for prm, ts in samples.items():
        times[prm] = min(ts)
    spread = [statistics.median(ts) / min(ts) for ts in samples.values()]
    return {
        "layer": layer_name(p),
        "solver": SOLVER,
        "names": list(sv.SPECS[SOLVER].names),
        "features": problem_features(p, SOLVER),
        "times": {prm: None if t is None else round(t, 5) for prm, t in times.items()},
        "rule": f"screen median of {repeats}; contenders ({CONTEND_TOP} fastest or <= {CONTEND}x "
        f"best) min of "
        f"{passes} interleaved passes x {runs} runs",
        "contenders": len(contenders),
        "median_over_min": round(statistics.median(spread), 3),
        "seconds": round(time.monotonic() - started, 1),
        "build_seconds": round(built - started, 1),
        "load": [round(load, 2), round(os.getloadavg()[0], 2)],
        "load_retime": [round(min(loads), 2), round(max(loads), 2)],
    }


def measure(args: argparse.Namespace) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    frozen = json.loads(FROZEN.read_text()) if FROZEN.exists() else {}
    for network in args.networks:
        for i, p in enumerate(network_layers(network)):
            path = table_path(network, i)
            if path.exists():
                continue
            earlier = frozen.get(path.stem) if args.same_space else None
            only = list(earlier["times"]) if earlier else None
            table = measure_layer(p, args.jobs, args.repeats, args.passes, args.runs, only)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(table, indent=1))
            tmp.replace(path)
            ok = [t for t in table["times"].values() if t is not None]
            print(
                f"{network} {i:2d} {table['layer']:28s} {len(table['times']):4d} candidates, "
                f"best {min(ok):.3f} ms, median {statistics.median(ok):.3f} ms, "
                f"{table['contenders']} re-timed (median/min {table['median_over_min']}), "
                f"{table['seconds']:.0f} s (build {table['build_seconds']:.0f} s), "
                f"load {table['load']} re-timing {table['load_retime']}",
                flush=True,
            )


# -- compare --------------------------------------------------------------------------------

#: Strategy label -> (strategy name, transfer).
LINEUP: dict[str, tuple[str, bool]] = {
    "exhaustive": ("exhaustive", False),
    "random": ("random", False),
    "grid": ("grid", False),
    "hillclimb": ("hillclimb", False),
    "genetic": ("genetic", False),
    "model": ("model", False),
    "model --transfer": ("model", True),
    # Optuna's samplers (issue #28): tuna[optuna]; gp needs tuna[gp] (PyTorch)
    "tpe": ("tpe", False),
    "cmaes": ("cmaes", False),
    "gp": ("gp", False),
    "nsga2": ("nsga2", False),
    # A model per objective, only the predicted front measured (issue #28): tuna[model]
    "predictive": ("predictive", False),
    # The space split by the objectives known before measuring (threads), the cost model
    # searching each slice for time (issue #28): tuna[model]
    "sliced": ("sliced", False),
    "sliced --transfer": ("sliced", True),
}
DETERMINISTIC = {"exhaustive", "grid"}  # the same with every seed: run once
#: Give the model cpuconv's candidate features (features.candidate_features); --no-derive: not.
DERIVE = True
#: Random candidates in each of the model's rounds (ModelSearch's ``explore``).
EXPLORE = 1


@dataclass
class Table:
    network: str
    layer: str
    names: tuple[str, ...]
    features: dict[str, float]
    times: dict[str, float | None]
    problem: ConvProblem | None = None  # the layer (for stats known from the parameters)

    @property
    def best(self) -> float:
        return min(t for t in self.times.values() if t is not None)


@dataclass
class Outcome:
    """One strategy on one layer with one seed: the best so far after each measurement."""

    curve: list[float]  # best time so far / exhaustive best, after 1, 2, ... measurements
    seconds: float  # the strategy's own time (proposing, training), measurements excluded
    notes: list[str]

    def to_reach(self, within: float) -> int | None:
        for n, ratio in enumerate(self.curve, 1):
            if ratio <= 1 + within:
                return n
        return None

    def at_share(self, share: float) -> float:
        n = max(1, math.ceil(share * self.size))
        return self.curve[min(n, len(self.curve)) - 1]

    size: int = 0


def load_tables(frozen_only: bool = False) -> dict[str, list[Table]]:
    """The tables bench/search.md reports (bench/data/search_tables.json: every layer's
    table in one file), each replaced by the one measured here (bench/out/search/) if any
    and not ``frozen_only``."""
    found = json.loads(FROZEN.read_text())
    here = {} if frozen_only else {p.stem: json.loads(p.read_text()) for p in OUT.glob("*-*.json")}
    found.update(here)
    print(
        f"{len(found) - len(here)} tables from {FROZEN.relative_to(HERE.parent)}, "
        f"{len(here)} from {OUT.relative_to(HERE.parent)}"
    )
    tables: dict[str, list[Table]] = {n: [] for n in NETWORKS}
    problems = {n: {layer_name(p): p for p in network_layers(n)} for n in NETWORKS}
    for name, d in sorted(found.items()):
        network = name.rsplit("-", 1)[0]
        tables[network].append(
            Table(
                network,
                d["layer"],
                tuple(d["names"]),
                d["features"],
                d["times"],
                problems[network].get(d["layer"]),
            )  # fmt: skip
        )
    return tables


def candidate_stats(table: Table, params: str) -> dict[str, float]:
    """A measured candidate's stats: its time, and (where the layer is known) the threads
    and workspace cpuconv computes from its parameters (``solvers.candidate_stats``)."""
    ms = table.times[params]
    assert ms is not None
    out = {"time_ms": ms}
    if table.problem is not None:
        values = dict(zip(table.names, (int(v) for v in params.split(",")), strict=True))
        out |= sv.candidate_stats(table.problem, SOLVER, values)
    return out


def freeze(args: argparse.Namespace) -> None:
    """bench/out/search/*.json -> bench/data/search_tables.json (times to 0.1 us)."""
    found = json.loads(FROZEN.read_text()) if FROZEN.exists() else {}
    for path in sorted(OUT.glob("*-*.json")):
        d = json.loads(path.read_text())
        d["times"] = {k: None if t is None else round(t, 4) for k, t in d["times"].items()}
        found[path.stem] = d
    FROZEN.write_text(json.dumps(dict(sorted(found.items())), separators=(",", ":")))
    print(f"wrote {len(found)} tables to {FROZEN.relative_to(HERE.parent)}")


def history_of(tables: list[Table]) -> list[HistoryEntry]:
    out: list[HistoryEntry] = []
    for t in tables:
        for params, ms in t.times.items():
            if ms is not None:
                point = dict(zip(t.names, (int(v) for v in params.split(",")), strict=True))
                out.append((t.features, point, ms))
    return out


def run_strategy(
    table: Table,
    label: str,
    seed: int,
    history: list[HistoryEntry],
    round_size: int,
    budget: float = 1.0,
) -> Outcome:
    best, curve = math.inf, []
    measured, seconds, notes = drive_table(table, label, seed, history, round_size, budget)
    for _params, ms in measured:
        if ms is not None:
            best = min(best, ms)
        curve.append(best / table.best)
    return Outcome(curve, seconds, notes, size=len(table.times))


def drive_table(
    table: Table,
    label: str,
    seed: int,
    history: list[HistoryEntry],
    round_size: int,
    budget: float = 1.0,
    objective: Objective | None = None,
) -> tuple[list[tuple[str, float | None]], float, list[str]]:
    """Strategy ``label`` over ``table`` (a measurement is a lookup; a run's stats are
    :func:`candidate_stats`): the candidates it measured in order with their times, the
    strategy's own CPU seconds (lookups excluded) and its notes."""
    name, transfer = LINEUP[label]
    space = CandidateSpace.from_strings(table.names, list(table.times), source=table.layer)
    extra: dict[str, Any] = {}
    if name in ("model", "sliced"):
        extra = {
            "features": table.features,
            "history": history,
            "transfer": transfer,
            "derive": candidate_features if DERIVE else None,
            "explore": EXPLORE,
        }
    if name == "sliced":
        problem = table.problem
        if problem is None:
            raise SystemExit(f"{table.layer}: not a layer of {table.network}; sliced needs it")
        extra["known"] = lambda point: sv.candidate_stats(problem, SOLVER, point)
    started = time.process_time()
    searcher = make_strategy(
        name, space, seed=seed, round_size=round_size, budget=budget, objective=objective, **extra
    )
    rounds = searcher.rounds()
    measured: list[tuple[str, float | None]] = []
    lookup = 0.0
    try:
        batch = next(rounds)
        while True:
            t0 = time.process_time()
            runs = []
            for point in batch:
                params = ",".join(str(point[n]) for n in table.names)
                ms = table.times[params]
                measured.append((params, ms))
                if ms is None:
                    runs.append(Run.invalid(point, "verification failed"))
                else:
                    runs.append(Run(point, candidate_stats(table, params)))
            lookup += time.process_time() - t0
            batch = rounds.send(runs)
    except StopIteration:
        pass
    seconds = time.process_time() - started - lookup
    return measured, seconds, list(getattr(searcher, "notes", []))


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def reach_medians(per_layer: list[list[Outcome]], within: float) -> list[float]:
    """Each layer's median over seeds of the measurements to within ``within`` of its best
    (inf for a seed that never got there)."""
    return [median([o.to_reach(within) or math.inf for o in outs]) for outs in per_layer]


def run_lineup(
    tables: dict[str, list[Table]],
    labels: list[str],
    networks: list[str],
    seeds: int,
    round_size: int,
    budget: float,
) -> dict[str, dict[str, list[list[Outcome]]]]:
    """Each strategy of ``labels`` on every layer of ``networks`` with ``seeds`` seeds: per
    network and label, each layer's outcomes. ``--transfer`` learns from ResNet-50's tables
    (leaving a ResNet-50 layer's own out)."""
    train = tables["resnet50"]
    results: dict[str, dict[str, list[list[Outcome]]]] = {}
    print(
        f"{len(train)} resnet50 tables, {len(tables['inception3'])} inception3 tables; "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    for network, todo in tables.items():
        if network not in networks:
            continue
        results[network] = {}
        for label in labels:
            per_layer: list[list[Outcome]] = []
            for k, table in enumerate(todo):
                history: list[HistoryEntry] = []
                if LINEUP[label][1]:
                    others = [t for i, t in enumerate(train) if network != "resnet50" or i != k]
                    history = history_of(others)
                runs = [0] if label in DETERMINISTIC else list(range(seeds))
                outs = [run_strategy(table, label, s, history, round_size, budget) for s in runs]
                per_layer.append(outs * (seeds if label in DETERMINISTIC else 1))
            results[network][label] = per_layer
            print(f"{network} {label}: done", flush=True)
    return results


def compare(args: argparse.Namespace) -> None:
    global DERIVE, EXPLORE
    DERIVE, EXPLORE = not args.no_derive, args.explore
    tables = load_tables()
    labels = args.strategies or list(LINEUP)
    results = run_lineup(tables, labels, args.networks, args.seeds, args.round, args.budget)
    if args.save:  # a part of the comparison, for `merge` (CPU-bound: parts run side by side)
        args.save.write_bytes(pickle.dumps(results))
        print(f"saved {args.save}")
        return
    report(tables, results, labels)
    plot(results, labels)


#: Issue #30's targets, which ``check`` holds every change of the features or the model to:
#: ``model --transfer`` within 5 % of a layer's best with at most this share of random's
#: measurements (medians over layers of the medians over seeds), on each network ...
TARGET_VS_RANDOM = 0.20
#: ... and within 2 % on every layer having measured at most this share of its space.
TARGET_SHARE_TO_2 = 0.15


def check(args: argparse.Namespace) -> None:
    """``random`` and ``model --transfer`` on the frozen tables only (bench/data), the
    figures against issue #30's targets; exit 1 when one is missed."""
    tables = load_tables(frozen_only=True)
    labels = ["random", "model --transfer"]
    results = run_lineup(tables, labels, args.networks, args.seeds, args.round, 1.0)
    missed: list[str] = []
    print()
    for network, by_label in results.items():
        sizes = [len(t.times) for t in tables[network]]
        rnd = median(reach_medians(by_label["random"], 0.05))
        mdl = median(reach_medians(by_label["model --transfer"], 0.05))
        to2 = reach_medians(by_label["model --transfer"], 0.02)
        slow = [
            f"{t.layer} ({n:.0f} of {s})"
            for t, n, s in zip(tables[network], to2, sizes, strict=True)
            if n / s > TARGET_SHARE_TO_2
        ]
        ratio = mdl / rnd
        ok = ratio <= TARGET_VS_RANDOM and not slow
        print(
            f"{network}: model --transfer {mdl:g} measurements to within 5 % against random's "
            f"{rnd:g} = {ratio:.2f} (target <= {TARGET_VS_RANDOM:.2f}); within 2 % by "
            f"{100 * TARGET_SHARE_TO_2:.0f} % of the space on {len(sizes) - len(slow)} of "
            f"{len(sizes)} layers (target: all): {'pass' if ok else 'FAIL'}"
        )
        if ratio > TARGET_VS_RANDOM:
            missed.append(f"{network}: {ratio:.2f} of random's measurements to 5 %")
        if slow:
            missed.append(f"{network}: not within 2 % by 15 % of the space: {', '.join(slow)}")
    print(f"load average {os.getloadavg()[0]:.2f} (the tables are frozen: figures do not move)")
    if missed:
        raise SystemExit(
            "search check: FAIL (" + "; ".join(missed) + "); the features or the model "
            "changed how the search ranks: see bench/search.md, 'The check'"
        )
    print("search check: pass")


def merge(args: argparse.Namespace) -> None:
    """The parts saved by ``compare --save``, reported and drawn as one comparison."""
    tables = load_tables()
    results: dict[str, dict[str, list[list[Outcome]]]] = {}
    for path in args.parts:
        for network, by_label in pickle.loads(path.read_bytes()).items():
            results.setdefault(network, {}).update(by_label)
    labels = [label for label in LINEUP if any(label in r for r in results.values())]
    for by_label in results.values():
        for label in labels:
            by_label.setdefault(label, [])
    report(tables, results, labels)
    plot(results, labels, args.png)


def report(
    tables: dict[str, list[Table]],
    results: dict[str, dict[str, list[list[Outcome]]]],
    labels: list[str],
) -> None:
    for network, by_label in results.items():
        sizes = [len(t.times) for t in tables[network]]
        if not sizes:
            continue
        print()
        print(
            f"### {network}: {len(sizes)} layers, {min(sizes)}-{max(sizes)} candidates each "
            f"(median {median([float(s) for s in sizes]):.0f})"
        )
        print()
        print(
            "| strategy | to 5 % (median, % of space) | to 2 % (median, % of space) | "
            "best at 10 % of space | best at 25 % | layers within 2 % by 15 % of space | "
            "strategy CPU s per search |"
        )
        print("|---|---|---|---|---|---|---|")
        for label in labels:
            per_layer = by_label[label]
            if not per_layer:  # not run on this network (merge of parts)
                continue
            n5, n2 = reach_medians(per_layer, 0.05), reach_medians(per_layer, 0.02)
            s5 = [n / s for n, s in zip(n5, sizes, strict=True)]
            s2 = [n / s for n, s in zip(n2, sizes, strict=True)]
            b10 = [median([o.at_share(0.10) for o in outs]) for outs in per_layer]
            b25 = [median([o.at_share(0.25) for o in outs]) for outs in per_layer]
            by15 = sum(1 for v in s2 if v <= 0.15)
            secs = median([o.seconds for outs in per_layer for o in outs])
            print(
                f"| {label} | {median(n5):.0f} ({100 * median(s5):.1f} %) "
                f"| {median(n2):.0f} ({100 * median(s2):.1f} %) "
                f"| {100 * (median(b10) - 1):+.1f} % | {100 * (median(b25) - 1):+.1f} % "
                f"| {by15} of {len(sizes)} | {secs:.3f} |"
            )
            notes = {n for outs in per_layer for o in outs for n in o.notes}
            for note in sorted(notes)[:3]:
                print(f"  note ({label}): {note}")
        if "random" in by_label and "model --transfer" in by_label:
            rnd = median(reach_medians(by_label["random"], 0.05))
            mdl = median(reach_medians(by_label["model --transfer"], 0.05))
            print(
                f"\nmodel --transfer / random, measurements to 5 %: {mdl:g} / {rnd:g} = "
                f"{mdl / rnd:.2f} (target <= {TARGET_VS_RANDOM:.2f})"
            )


def plot(
    results: dict[str, dict[str, list[list[Outcome]]]], labels: list[str], name: str = "search.png"
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    networks = [n for n in results if any(results[n][label] for label in labels)]
    fig, axes = plt.subplots(1, len(networks), figsize=(6.5 * len(networks), 4.6), squeeze=False)
    for ax, network in zip(axes[0], networks, strict=True):
        for label in labels:
            outs = [o for per in results[network][label] for o in per]
            if not outs:
                continue
            length = max(len(o.curve) for o in outs)
            xs = list(range(1, length + 1))
            ys = []
            for n in xs:
                vals = [math.log(o.curve[min(n, len(o.curve)) - 1]) for o in outs]
                ys.append(100 * (math.exp(sum(vals) / len(vals)) - 1))
            ax.plot(xs, ys, label=label, linestyle="--" if label in DETERMINISTIC else "-")
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(bottom=0)
        ax.axhline(5, color="grey", linewidth=0.6)
        ax.axhline(2, color="grey", linewidth=0.6, linestyle=":")
        held = " (held out)" if network != "resnet50" else " (leave one layer out)"
        ax.set_title(f"{network}{held}: CpuIm2colGemm, batch 1")
        ax.set_xlabel("measurements")
        ax.set_ylabel("best so far, % slower than the exhaustive best (geomean)")
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    out = HERE / name
    fig.savefig(out, dpi=110)
    print(f"\nwrote {out.relative_to(HERE.parent)}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="phase", required=True)
    m = sub.add_parser("measure", help="exhaustive tables of real kernels")
    m.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=list(NETWORKS))
    m.add_argument("--jobs", type=int, default=2, help="parallel compiler processes")
    m.add_argument("--repeats", type=int, default=3, help="screening: timed runs per candidate")
    m.add_argument("--passes", type=int, default=5, help="re-timing: interleaved passes")
    m.add_argument("--runs", type=int, default=3, help="re-timing: runs per contender a pass")
    m.add_argument(
        "--same-space",
        action="store_true",
        help="only the candidates of the layer's table in bench/data (the space it was of)",
    )
    c = sub.add_parser("compare", help="every strategy x seeds on the tables")
    c.add_argument("--seeds", type=int, default=5)
    c.add_argument("--strategies", nargs="+", default=None, choices=list(LINEUP))
    c.add_argument("--round", type=int, default=8, help="candidates per round (one .so)")
    c.add_argument(
        "--budget",
        type=float,
        default=1.0,
        help="share of each space a search may measure (gp's Gaussian process is too slow "
        "for whole spaces: its figures are of 0.25)",
    )
    c.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=list(NETWORKS))
    c.add_argument("--no-derive", action="store_true", help="the model without derived features")
    c.add_argument("--explore", type=int, default=1, help="the model's random picks a round")
    c.add_argument("--save", type=Path, default=None, help="save the results for merge, no report")
    g = sub.add_parser("merge", help="report the parts saved by compare --save as one")
    g.add_argument("parts", nargs="+", type=Path)
    g.add_argument("--png", default="search.png", help="the figure's name in bench/")
    k = sub.add_parser(
        "check",
        help="random and model --transfer on the frozen tables against issue #30's targets: "
        "pass, or exit 1 (run before a change of the features or the model lands)",
    )
    k.add_argument("--seeds", type=int, default=5)
    k.add_argument("--round", type=int, default=8, help="candidates per round (one .so)")
    k.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=list(NETWORKS))
    sub.add_parser("freeze", help="keep the tables measured here in bench/data (for git)")
    args = ap.parse_args(argv)
    if args.phase == "measure":
        measure(args)
    elif args.phase == "freeze":
        freeze(args)
    elif args.phase == "merge":
        merge(args)
    elif args.phase == "check":
        check(args)
    else:
        compare(args)


if __name__ == "__main__":
    sys.exit(main())
