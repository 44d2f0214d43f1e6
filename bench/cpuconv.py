"""cpuconv: tuned vs default parameters vs the naive solver on ResNet-50's 1x1 and 3x3 layers.

For each distinct forward 1x1 and 3x3 layer of resnet50.txt at batch 1, every applicable
tunable solver is tuned as a perf job would be (the backend's deterministic sample of at most
``--candidates`` parameters, the default among them; verified; median of 5 runs) and the
naive solver is timed. Reported per layer: the naive time, the best solver's default and
tuned times, GFLOP/s against the machine's peak, and, where oneDNN is installed (Debian:
``apt-get install libdnnl-dev``; not a dependency), oneDNN's convolution and the tuned kernel
timed head to head (:func:`head_to_head`). Not a test: figures go in bench/cpuconv.md.

    .venv/bin/python bench/cpuconv.py --candidates 24
"""

from __future__ import annotations

import argparse
import ctypes
import math
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from tuna.backends.cpuconv import CpuConvBackend, build, run
from tuna.backends.cpuconv import solvers as sv
from tuna.problems.conv import ConvProblem
from tuna.problems.driver import is_conv_line, parse_driver_line
from tuna.results.insight import geomean

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


def layer_name(p: ConvProblem) -> str:
    """How the tables and --layers name a layer: ``"256x14x14 -> 256, 3x3/1"``."""
    (hi, wi), (fy, fx) = p.in_size, p.fil_size
    return f"{p.in_channels}x{hi}x{wi} -> {p.out_channels}, {fy}x{fx}/{p.stride[0]}"


def named_layers(names: list[str]) -> list[ConvProblem]:
    """The ResNet-50 layers (batch 1) of ``names`` (:func:`layer_name`), in the driver's order."""
    return [p for p in layers(DRIVER) if layer_name(p) in names]


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
    zen5 = info.get("Vendor ID") == "AuthenticAMD" and int(info.get("CPU family", "0")) >= 26
    if "avx512f" in flags and info.get("Vendor ID") == "AuthenticAMD" and not zen5:
        # Zen 4 runs a 512-bit FMA on its two 256-bit pipes: AVX2's rate.
        per_cycle, isa = 32, "AVX-512 on AMD: 2 FMA x 8 lanes x 2, 512-bit ops on both pipes"
    elif "avx512f" in flags and zen5:
        # Zen 5 (family 26) has 512-bit FMA pipes: one core ran an 8 x 32 register tile at
        # 287 GFLOP/s (64 FLOP/cycle at about 4.5 GHz) in a loop on L1 data, 2026-11-28.
        per_cycle, isa = 64, "AVX-512 on Zen 5: 2 FMA x 16 lanes x 2"
    elif "avx512f" in flags:
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


ONEDNN_SOURCE = Path(__file__).resolve().parent / "onednn_conv.c"
ONEDNN_HEADER = Path("/usr/include/oneapi/dnnl/dnnl.h")


class OneDnn:
    """oneDNN's forward convolution (bench/onednn_conv.c), for the optional comparison.

    Built here when oneDNN is installed (Debian: ``apt-get install libdnnl-dev``); it is
    never a dependency of Tuna or its tests. :meth:`load` says why it is not there."""

    def __init__(self, lib: ctypes.CDLL, version: str) -> None:
        self.fn = lib.onednn_conv_ms
        self.fn.restype = ctypes.c_int
        self.version = version

    @staticmethod
    def load() -> OneDnn | str:
        if not ONEDNN_HEADER.exists():
            return "oneDNN column skipped: oneDNN is not installed (apt-get install libdnnl-dev)"
        out = Path(tempfile.mkdtemp(prefix="cpuconv-onednn-")) / "onednn_conv.so"
        cmd = ["cc", "-O2", "-shared", "-fPIC", "-fopenmp", "-o", str(out), str(ONEDNN_SOURCE)]
        proc = subprocess.run([*cmd, "-ldnnl"], capture_output=True, text=True)
        if proc.returncode != 0:
            return f"oneDNN column skipped: building its harness failed: {proc.stderr[-500:]}"
        lib = ctypes.CDLL(str(out))
        v = re.search(
            r"DNNL_VERSION_MAJOR (\d+).*DNNL_VERSION_MINOR (\d+).*DNNL_VERSION_PATCH (\d+)",
            (ONEDNN_HEADER.parent / "dnnl_version.h").read_text(),
            re.S,
        )
        return OneDnn(lib, ".".join(v.groups()) if v else "?")

    def time(self, p: ConvProblem, threads: int, repeats: int) -> tuple[float, float, str]:
        """(fastest run in ms including NCHW reorders, fastest convolution alone, impl);
        checks the output against the reference."""
        (hi, wi), (ho, wo), (fy, fx) = p.in_size, p.out_size, p.fil_size
        shape = (ctypes.c_int * 15)(
            p.batchsize,
            p.in_channels,
            p.out_channels,
            hi,
            wi,
            ho,
            wo,
            fy,
            fx,
            *p.pad,
            *p.stride,
            *p.dilation,
        )
        ref = run.Reference.get()
        a, b, expected = ref.case(p)
        y = (ctypes.c_float * len(expected))()
        times = (ctypes.c_double * 3)()
        impl = ctypes.create_string_buffer(128)
        err = self.fn(shape, a, b, y, threads, repeats, times, impl, 128)
        if err:
            raise RuntimeError(f"oneDNN failed on {p}: status {err - 100}")
        error = ref.max_error(y, expected, len(expected))
        if not error <= run.FP32_TOLERANCE:
            raise RuntimeError(f"oneDNN's output is off on {p}: max error {error}")
        return times[0], times[2], impl.value.decode()


def load_onednn() -> OneDnn | None:
    """oneDNN for the comparison, or None after printing why it is not there."""
    onednn = OneDnn.load()
    if isinstance(onednn, str):
        print(onednn)
        return None
    return onednn


def head_to_head(
    p: ConvProblem,
    finalists: list[tuple[str, str]],
    onednn: OneDnn | None,
    threads: int,
    passes: int,
) -> tuple[dict[tuple[str, str], float], float, float, str]:
    """The finalists ((solver, params) of cpuconv) and oneDNN (1 and ``threads`` threads)
    timed in turn, ``passes`` times over, 3 runs each a pass: ({finalist: ms}, oneDNN with
    its NCHW reorders, oneDNN's convolution alone, its implementation), each the fastest
    of its runs. Taking turns gives all the same share of a loaded machine's quiet
    moments, and load only adds time: the fastest run is the least disturbed one."""
    ref = run.Reference.get()
    a, b, expected = ref.case(p)
    out = (ctypes.c_float * len(expected))()
    kernels, tables = [], {}
    for solver in {s for s, _ in finalists}:
        mine = [prm for s, prm in finalists if s == solver]
        units = build.plan_units(p, solver, mine, march="native")
        kernels += build.build_units(units)
        tables[solver] = {prm: (u.name, sym) for u in units for prm, sym in u.symbols}
    best = {f: math.inf for f in finalists}
    full, alone, impl = math.inf, math.inf, "-"
    with run.loaded(kernels, "cpuconv-bench-") as libs:
        cands = {
            (solver, c.params): c
            for solver, table in tables.items()
            for c in run.candidates(p, solver, table, libs)
        }
        ws = {f: run.workspace_for(c, b) for f, c in cands.items()}  # each its own weights
        for f, c in cands.items():
            c.fn(a, b, out, ws[f])
            assert ref.max_error(out, expected, len(expected)) <= run.WINOGRAD_TOLERANCE
        for _ in range(passes):
            for f, c in cands.items():
                best[f] = min([best[f]] + [run._time_ms(c.fn, a, b, out, ws[f]) for _ in range(3)])
            for n in sorted({1, threads}) if onednn else []:
                f_ms, c_ms, impl = onednn.time(p, n, 3)
                full, alone = min(full, f_ms), min(alone, c_ms)
    return best, full, alone, impl


SEARCH_TABLES = (
    Path(__file__).resolve().parent / "data" / "search_tables.json",
    *sorted((Path(__file__).resolve().parent / "out" / "search").glob("*-*.json")),
)


def table_best(p: ConvProblem, count: int) -> list[str]:
    """The ``count`` fastest CpuIm2colGemm candidates of ``p`` in bench/search.py's
    exhaustive tables (bench/search.md), the latest measured first; [] if none has ``p``."""
    import json

    (hi, wi), (fy, fx) = p.in_size, p.fil_size
    name = f"{p.in_channels}x{hi}x{wi}->{p.out_channels} {fy}x{fx}/{p.stride[0]}"
    found: dict[str, float] = {}
    for path in SEARCH_TABLES:
        if not path.exists():
            continue
        d = json.loads(path.read_text())
        for table in d.values() if path.name == "search_tables.json" else [d]:
            if table["layer"] == name and p.batchsize == 1:
                found = {k: t for k, t in table["times"].items() if t is not None}
    # Tables measured before LO and PB existed name their candidates with 5 fields.
    found = {sv.format_params(sv.parse_params(sv.IM2COL, k)): t for k, t in found.items()}
    valid = set(sv.tuning_space(p, sv.IM2COL))
    return [k for k in sorted(found, key=found.__getitem__) if k in valid][:count]


def loop_variants(p: ConvProblem, params: str) -> list[str]:
    """``params`` of CpuIm2colGemm with each loop order and packing (LO, PB: PB 2 packs the
    weights too) that ``p``'s space holds, and the same register tile in 16-float vectors
    (VW 8, NV even): the exhaustive tables were measured before LO, PB and VW 16 existed."""
    v = sv.parse_params(sv.IM2COL, params)
    tiles = [v]
    if v["VW"] == 8 and v["NV"] % 2 == 0:
        tiles.append({**v, "VW": 16, "NV": v["NV"] // 2})
    space = set(sv.tuning_space(p, sv.IM2COL))
    out = [
        sv.format_params({**t, "LO": lo, "PB": pb})
        for t in tiles
        for lo in (0, 1)
        for pb in (0, 1, 2)
    ]
    return [c for c in out if c in space]


def head_to_head_table(
    args: argparse.Namespace,
    backend: CpuConvBackend,
    todo: list[ConvProblem],
    onednn: OneDnn | None,
    peak: float,
) -> None:
    """--versus: per layer, every solver's sample screened as a perf job times it, then its
    ``--finalists`` best re-timed head to head with oneDNN (:func:`head_to_head`)."""
    print(
        "| layer | GFLOP | tuned ms | tuned GFLOP/s (% peak) | solver: params | oneDNN ms "
        "| oneDNN conv alone ms | oneDNN/tuned | oneDNN impl | load |"
    )
    print("|" + "---|" * 10)
    ratios, ratios_alone = [], []
    for p in todo:
        gflop = sv.flops(p) / 1e9
        screened = []
        for s in args.solvers:
            if sv.applicability(p, s) is None:
                measured = tune(p, s, backend, args.jobs)
                screened += [(m.time_ms, s, m.params) for m in measured if m.time_ms]
        finalists = [(s, prm) for _, s, prm in sorted(screened)[: args.finalists]]
        for prm in table_best(p, args.finalists):  # the exhaustive search's best, if any
            for v in loop_variants(p, prm) if args.variants else [prm]:
                if (sv.IM2COL, v) not in finalists:
                    finalists.append((sv.IM2COL, v))
        times, full, alone, impl = head_to_head(p, finalists, onednn, args.threads, args.passes)
        (solver, params), t = min(times.items(), key=lambda kv: kv[1])
        theirs = "| - | - | - "
        if onednn is not None:
            ratios.append(full / t)
            ratios_alone.append(alone / t)
            theirs = f"| {full:.3f} | {alone:.3f} | {full / t:.2f} "
        name = layer_name(p)
        print(
            f"| {name} | {gflop:.3f} | {t:.3f} "
            f"| {gflop / t * 1e3:.1f} ({gflop / t * 1e5 / peak:.0f}%) | {solver}: {params} "
            f"{theirs}| {impl} | {os.getloadavg()[0]:.1f} |",
            flush=True,
        )
    if ratios:
        wins = sum(1 for r in ratios if r > 1)
        wins_alone = sum(1 for r in ratios_alone if r > 1)
        print(
            f"\ngeomean oneDNN time / tuned time: {geomean(ratios):.2f}; "
            f"tuned faster on {wins} of {len(ratios)} layers; against oneDNN's convolution "
            f"alone {geomean(ratios_alone):.2f}, faster on {wins_alone}; load average "
            f"{os.getloadavg()[0]:.2f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=24, help="max candidates per solver")
    ap.add_argument("--jobs", type=int, default=1, help="parallel compiler processes")
    ap.add_argument("--threads", type=int, default=2, help="most threads for oneDNN")
    ap.add_argument("--passes", type=int, default=7, help="head to head: turns each")
    ap.add_argument(
        "--versus",
        action="store_true",
        help="only tuned vs oneDNN: screen the candidates, then the best few head to head",
    )
    ap.add_argument("--finalists", type=int, default=4, help="--versus: candidates re-timed")
    ap.add_argument(
        "--variants",
        action="store_true",
        help="--versus: time the exhaustive tables' finalists in every loop order (LO) and "
        "B layout (PB) too, and in 16-float vectors where the tile allows",
    )
    ap.add_argument("--limit", type=int, default=0, help="only the first N layers")
    ap.add_argument(
        "--solvers",
        nargs="+",
        default=list(sv.SPECS),
        choices=list(sv.SPECS),
        help="tunable solvers to tune (default: all)",
    )
    args = ap.parse_args()
    backend = CpuConvBackend(max_candidates=args.candidates)
    peak, how = peak_gflops()
    print(f"peak {peak:.1f} GFLOP/s = {how}; load average {os.getloadavg()[0]:.2f}")
    started = time.monotonic()
    todo = layers(DRIVER)[: args.limit or None]
    speedups: dict[str, list[float]] = {}
    best_over_default, best_over_naive, onednn_over_tuned = [], [], []
    onednn = OneDnn.load()
    if isinstance(onednn, str):
        print(onednn)
    else:
        print(f"oneDNN {onednn.version}, head to head: {args.passes} turns x 3 runs, fastest")
    if args.versus:
        head_to_head_table(args, backend, todo, None if isinstance(onednn, str) else onednn, peak)
        return
    failed = 0
    print(
        "| layer | GFLOP | naive ms | best solver | default ms | tuned ms | tuned/default "
        "| tuned/naive | tuned GFLOP/s (% peak) | tuned params | head to head: tuned ms "
        "| oneDNN ms | oneDNN/tuned | oneDNN conv alone ms | oneDNN impl | load |"
    )
    print("|" + "---|" * 16)
    for p in todo:
        gflop = sv.flops(p) / 1e9
        naive = tune(p, sv.NAIVE, backend, args.jobs)[0].time_ms
        assert naive is not None
        results = {}
        for s in args.solvers:
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
        versus = "| - | - | - | - | - "
        if not isinstance(onednn, str):
            times, full, alone, impl = head_to_head(
                p, [(solver, params)], onednn, args.threads, args.passes
            )
            tuned = times[solver, params]
            onednn_over_tuned.append(full / tuned)
            versus = f"| {tuned:.3f} | {full:.3f} | {full / tuned:.2f} | {alone:.3f} | {impl} "
        name = layer_name(p)
        print(
            f"| {name} | {gflop:.3f} | {naive:.2f} | {solver} | {d_ms:.3f} | {t_ms:.3f} "
            f"| {d_ms / t_ms:.2f}x | {naive / t_ms:.1f}x "
            f"| {gflop / t_ms * 1e3:.1f} ({gflop / t_ms * 1e5 / peak:.0f}%) | {params} "
            f"{versus}| {os.getloadavg()[0]:.1f} |",
            flush=True,
        )
    print()
    print(f"geomean tuned/default (best solver per layer): {geomean(best_over_default):.2f}x")
    print(f"geomean tuned/naive: {geomean(best_over_naive):.1f}x")
    if onednn_over_tuned:
        print(f"geomean oneDNN time / tuned time (head to head): {geomean(onednn_over_tuned):.2f}")
        wins = sum(1 for r in onednn_over_tuned if r > 1)
        print(f"tuned faster than oneDNN on {wins} of {len(onednn_over_tuned)} layers")
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
