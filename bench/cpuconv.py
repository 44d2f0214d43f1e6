"""cpuconv: tuned vs default parameters vs the naive solver on ResNet-50's 1x1 and 3x3 layers.

For each distinct forward 1x1 and 3x3 layer of resnet50.txt at batch 1, every applicable
tunable solver is tuned as a perf job would be (the backend's deterministic sample of at most
``--candidates`` parameters, the default among them; verified; median of 5 runs) and the
naive solver is timed. Reported per layer: the naive time, the best solver's default and
tuned times, GFLOP/s against the machine's peak, and torch's CPU convolution where torch is
installed. Not a test: figures go in bench/cpuconv.md.

    .venv/bin/python bench/cpuconv.py --candidates 24
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import subprocess
import time
import warnings
from pathlib import Path

from tuna.backends.cpuconv import CpuConvBackend, run
from tuna.backends.cpuconv import solvers as sv
from tuna.problems.conv import ConvProblem
from tuna.problems.driver import is_conv_line, parse_driver_line

DRIVER = Path("/work/shared/data/driver/resnet50.txt")


def layers(path: Path) -> list[ConvProblem]:
    seen: dict[ConvProblem, None] = {}
    for line in path.read_text().splitlines():
        if not is_conv_line(line):
            continue
        for p in parse_driver_line(line):
            if p.direction == "F" and p.fil_size in ((1, 1), (3, 3)):
                seen.setdefault(p.with_batchsize(1), None)
    return list(seen)


def peak_gflops() -> tuple[float, str]:
    """cores x GHz x FP32 FLOPs per cycle, from lscpu; the assumption spelled out."""
    text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    info = dict(
        (k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in text.splitlines())
    )
    cores = int(info.get("CPU(s)", "1"))
    if "CPU max MHz" in info:
        ghz, source = float(info["CPU max MHz"]) / 1000, "max MHz"
    else:
        ghz, source = float(info["BogoMIPS"]) / 2000, "BogoMIPS / 2"
    flags = set(info.get("Flags", "").split())
    if "avx512f" in flags:
        per_cycle, isa = 64, "AVX-512: 2 FMA x 16 lanes x 2"
    elif {"avx2", "fma"} <= flags:
        per_cycle, isa = 32, "AVX2: 2 FMA x 8 lanes x 2"
    elif "avx" in flags:
        per_cycle, isa = 16, "AVX: 8-lane add + mul"
    else:
        per_cycle, isa = 8, "SSE: 4-lane add + mul"
    peak = cores * ghz * per_cycle
    return peak, f"{cores} cores x {ghz:.3f} GHz ({source}) x {per_cycle} FLOP/cycle ({isa})"


RACING = {"candidates": 0, "raced": 0, "timed_ms": 0.0, "saved_ms": 0.0}


def count_racing(measured: list[run.Measured]) -> None:
    """Racing's account: candidates stopped early, and the timed runs' time with and without."""
    for m in measured:
        RACING["candidates"] += 1
        RACING["raced"] += m.raced
        RACING["timed_ms"] += (m.time_ms or 0.0) * m.runs
        RACING["saved_ms"] += m.saved_ms


def tune(p: ConvProblem, solver: str, backend: CpuConvBackend, jobs: int) -> list[run.Measured]:
    knobs = backend.knobs()
    params = backend.candidates(p, solver, "perf", knobs)
    measured = run.build_and_measure(
        p,
        solver,
        params,
        march=knobs.march,
        per_unit=knobs.per_unit,
        jobs=jobs,
        prefix="cpuconv-bench-",
        repeats=5,
    )
    count_racing(measured)
    return measured


def torch_ms(p: ConvProblem, threads: int) -> float | None:
    """torch's conv2d: median of 11 runs, the better of 1 and ``threads`` threads (a busy
    machine punishes the threads' waits)."""
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    try:
        import torch
    except ImportError:
        return None
    (hi, wi), (fy, fx) = p.in_size, p.fil_size
    x = torch.rand(p.batchsize, p.in_channels, hi, wi)
    w = torch.rand(p.out_channels, p.in_channels // p.group_count, fy, fx)

    def once() -> float:
        start = time.perf_counter_ns()
        torch.nn.functional.conv2d(x, w, None, p.stride, p.pad, p.dilation, p.group_count)
        return (time.perf_counter_ns() - start) / 1e6

    medians = []
    with torch.no_grad():
        for n in sorted({1, threads}):
            torch.set_num_threads(n)
            once()
            once()
            medians.append(statistics.median(once() for _ in range(11)))
    return min(medians)


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=24, help="max candidates per solver")
    ap.add_argument("--jobs", type=int, default=1, help="parallel compiler processes")
    ap.add_argument("--threads", type=int, default=2, help="most threads for torch")
    ap.add_argument("--limit", type=int, default=0, help="only the first N layers")
    args = ap.parse_args()
    backend = CpuConvBackend(max_candidates=args.candidates)
    peak, how = peak_gflops()
    print(f"peak {peak:.1f} GFLOP/s = {how}; load average {os.getloadavg()[0]:.2f}")
    started = time.monotonic()
    todo = layers(DRIVER)[: args.limit or None]
    speedups: dict[str, list[float]] = {}
    best_over_default, best_over_naive, best_over_torch = [], [], []
    failed = 0
    print(
        "| layer | GFLOP | naive ms | best solver | default ms | tuned ms | tuned/default "
        "| tuned/naive | tuned GFLOP/s (% peak) | tuned params | torch ms |"
    )
    print("|" + "---|" * 11)
    for p in todo:
        gflop = sv.flops(p) / 1e9
        naive = tune(p, sv.NAIVE, backend, args.jobs)[0].time_ms
        assert naive is not None
        results = {}
        for s in sv.SPECS:
            if sv.applicability(p, s) is None:
                measured = tune(p, s, backend, args.jobs)
                default, passed = measured[0], [m for m in measured if m.ok]
                failed += len(measured) - len(passed)
                assert default.params == backend.default_params(p, s) and default.time_ms
                best = min(passed, key=lambda m: m.time_ms or 0)
                assert best.time_ms is not None
                results[s] = (default.time_ms, best.time_ms, best.params)
                speedups.setdefault(s, []).append(default.time_ms / best.time_ms)
        solver = min(results, key=lambda s: results[s][1])
        d_ms, t_ms, params = results[solver]
        best_over_default.append(d_ms / t_ms)
        best_over_naive.append(naive / t_ms)
        ref = torch_ms(p, args.threads)
        if ref is not None:
            best_over_torch.append(ref / t_ms)
        (hi, wi), (fy, fx) = p.in_size, p.fil_size
        name = f"{p.in_channels}x{hi}x{wi} -> {p.out_channels}, {fy}x{fx}/{p.stride[0]}"
        print(
            f"| {name} | {gflop:.3f} | {naive:.2f} | {solver} | {d_ms:.3f} | {t_ms:.3f} "
            f"| {d_ms / t_ms:.2f}x | {naive / t_ms:.1f}x "
            f"| {gflop / t_ms * 1e3:.1f} ({gflop / t_ms * 1e5 / peak:.0f}%) | {params} "
            f"| {'-' if ref is None else f'{ref:.3f}'} |",
            flush=True,
        )
    print()
    print(f"geomean tuned/default (best solver per layer): {geomean(best_over_default):.2f}x")
    print(f"geomean tuned/naive: {geomean(best_over_naive):.1f}x")
    if best_over_torch:
        print(f"geomean torch time / tuned time: {geomean(best_over_torch):.2f}")
    for s, values in speedups.items():
        print(f"geomean tuned/default {s}: {geomean(values):.2f}x over {len(values)} layers")
    r = RACING
    print(
        f"racing: {r['raced']:.0f} of {r['candidates']:.0f} candidates stopped early; timed runs "
        f"took about {r['timed_ms'] / 1e3:.2f} s and saved about {r['saved_ms'] / 1e3:.2f} s "
        f"({100 * r['saved_ms'] / max(1e-9, r['timed_ms'] + r['saved_ms']):.0f} % of what "
        "timing every run would take)"
    )
    print(
        f"{len(todo)} layers, {time.monotonic() - started:.0f} s, {failed} candidates failed, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    cc = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout
    print(re.sub(r"\n.*", "", cc, flags=re.S))


if __name__ == "__main__":
    main()
