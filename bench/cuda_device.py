"""The cuda backend on a GPU: versions, and tuned layers timed against cuDNN and cuBLAS.

Run by ``bench/cuda_device.sh`` (which also runs Tuna's own commands: the carried cubins
evaluated by ``tuna worker``, the strategy search by ``go_fish``). Subcommands:

* ``versions``: Python, the driver and GPU (read in a child process, as the evaluate phase
  does), cuda-bindings, NVRTC, PyTorch with cuDNN, CuPy.
* ``layers``: ResNet-50's distinct forward layers at batch 32, as MIOpenDriver lines, and
  with ``--backward N`` N of its layers (3x3 and 1x1 in turn) in each backward direction
  (the solvers CudaImplicitGemmBwdData, CudaGemm1x1BwdData and CudaImplicitGemmBwdWeights).
* ``compare --db URL --session N``: per layer, the fastest candidate the session's search
  found (its fastest valid measurement, the search finished or not), recompiled and timed
  again on the GPU beside the solver's default parameters, cuDNN (PyTorch, FP32:
  ``allow_tf32 = False``, ``benchmark = True``; a backward layer through ``torch.nn.grad``,
  cuDNN's backward data or weights) and, for forward 1x1 layers, cuBLAS (CuPy, FP32), in
  turns (tuned, cuDNN, cuBLAS, again, ``--turns`` times; the median of each counts). Prints
  per layer: tuned ms, cuDNN ms, ratio, TFLOP/s and % of the FP32 peak (66.9 TFLOP/s, H100
  SXM). With ``--dry-run`` (no GPU) it prints the session's results and skips the timings.
* ``compile-rate [--solver S]``: candidates compiled a minute on this host (CPU time and
  wall), a seeded sample of a ResNet-50 layer's space in the solver's direction.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tuna.backends.cuda import compile as cc  # noqa: E402
from tuna.backends.cuda import evaluate as ev  # noqa: E402
from tuna.backends.cuda import solvers as sv  # noqa: E402
from tuna.problems.conv import ConvProblem  # noqa: E402
from tuna.problems.driver import is_conv_line, parse_driver_line, to_driver_line  # noqa: E402
from tuna.results.insight import geomean  # noqa: E402

PEAK_TFLOPS = 66.9
BATCH = 32


def layers(batch: int = BATCH) -> list[ConvProblem]:
    """ResNet-50's distinct forward convolutions (bench/data/resnet50.txt) at ``batch``."""
    seen: dict[str, ConvProblem] = {}
    for line in (REPO / "bench" / "data" / "resnet50.txt").read_text().splitlines():
        if not is_conv_line(line):
            continue
        for p in parse_driver_line(line):
            if p.direction == "F":
                q = p.with_batchsize(batch)
                seen.setdefault(to_driver_line(q), q)
    return list(seen.values())


def backward_layers(count: int, batch: int = BATCH) -> list[ConvProblem]:
    """``count`` of ResNet-50's distinct layers at ``batch``, 3x3 and 1x1 in turn (as
    :func:`pick`), each in the two backward directions (data, then weights)."""
    return [p.with_direction(d) for p in pick(layers(batch), count) for d in "BW"]


def cmd_layers(args: argparse.Namespace) -> None:
    chosen = layers(args.batch)
    if args.count:
        chosen = pick(chosen, args.count)
    for p in chosen + backward_layers(args.backward, args.batch):
        print(to_driver_line(p))


def pick(ps: list[ConvProblem], count: int) -> list[ConvProblem]:
    """``count`` layers, 3x3 and 1x1 (stride 1: both solvers) in turn (the dry run's few)."""
    ones = [p for p in ps if sv.applicability(p, sv.GEMM1X1) is None]
    others = [p for p in ps if p.fil_size != (1, 1)]
    out = []
    while len(out) < count and (ones or others):
        for group in (others, ones):
            if group and len(out) < count:
                out.append(group.pop(0))
    return out


def cmd_versions(args: argparse.Namespace) -> None:
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    try:
        from cuda.bindings import _version

        print(f"cuda-bindings {_version.__version__}")
    except ImportError:
        print("cuda-bindings: not installed")
    try:
        compiler = cc.find_compiler()
        print(f"compiler: {compiler.label}")
    except cc.CompilerUnavailableError as e:
        print(f"compiler: {e}")
    from tuna.backends.cuda import device

    facts = ev.probe(device.facts)
    if isinstance(facts, str):
        print(f"GPU: none ({facts})")
    else:
        print(
            f"GPU: {facts.name}, {facts.arch}, {facts.sm_count} SMs, "
            f"{facts.memory_bytes / 2**30:.1f} GiB, driver accepts CUDA "
            f"{facts.driver_cuda[0]}.{facts.driver_cuda[1]}"
        )
    for name in ("torch", "cupy"):
        try:
            module = __import__(name)
        except ImportError:
            print(f"{name}: not installed")
            continue
        extra = ""
        if name == "torch":
            import torch

            extra = f", cuDNN {torch.backends.cudnn.version()}, CUDA {torch.version.cuda}"
        print(f"{name} {module.__version__}{extra}")


def results(db: str, session: int) -> list[tuple[ConvProblem, str, str, float]]:
    """(problem, solver, params, time_ms) of the fastest valid measurement per layer: what
    the searches found so far, finished or not."""
    path = db.removeprefix("sqlite:///")
    rows = sqlite3.connect(path).execute(
        "SELECT c.driver, c.direction, s.name, m.params, m.time_ms FROM measurement m "
        "JOIN conv_config c ON c.id = m.config JOIN solver s ON s.id = m.solver "
        "WHERE m.session = ? AND m.valid ORDER BY c.id, m.time_ms",
        (session,),
    )
    best: dict[str, tuple[ConvProblem, str, str, float]] = {}
    for driver, direction, solver, params, ms in rows:
        p = next(q for q in parse_driver_line(driver) if q.direction == direction)
        best.setdefault(driver, (p, solver, params, ms))
    return list(best.values())


def cmd_compile_rate(args: argparse.Namespace) -> None:
    """Candidates compiled a minute: a seeded sample of a layer's space, ``--jobs`` at a time."""
    import random
    from collections import Counter

    solver = args.solver
    filter_size = (1, 1) if solver in sv.ONE_BY_ONE else (3, 3)
    p = next(q for q in layers() if q.fil_size == filter_size and q.in_channels == 64)
    p = p.with_direction(sv.DIRECTION[solver])
    space = sv.space_params(p, solver)
    sample = random.Random(args.seed).sample(space, args.count)
    compiler = cc.find_compiler()
    load = os.getloadavg()[0]
    wall, cpu = time.monotonic(), time.process_time()
    built = cc.compile_candidates(compiler, p, solver, sample, "sm_90", jobs=args.jobs)
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    kinds = Counter((c.reason or "valid").split(":")[0] for c in built)
    print(
        f"{compiler.label}, {solver} on {_name(p)} (space of {len(space)}), {args.count} sampled, "
        f"{args.jobs} threads, {os.cpu_count()} CPUs, load {load:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{60 * args.count / wall:.0f} candidates/min wall ({wall:.1f} s); {cpu / args.count:.2f} "
        f"CPU-s a candidate, i.e. {60 * (os.cpu_count() or 1) * args.count / cpu:.0f}/min on "
        f"{os.cpu_count()} idle CPUs; {dict(kinds)}"
    )
    slow = max(built, key=lambda c: c.seconds)
    print(f"slowest: {slow.params} {slow.seconds:.1f} s wall ({slow.reason or 'valid'})")


def cmd_summary(args: argparse.Namespace) -> None:
    """Jobs by state, measurements valid and not, the commonest reasons, find-db rows."""
    db = sqlite3.connect(args.db.removeprefix("sqlite:///"))
    states = db.execute(
        "SELECT state, COUNT(*) FROM job WHERE session = ? GROUP BY state ORDER BY state",
        (args.session,),
    ).fetchall()
    print("jobs: " + ", ".join(f"{state} {n}" for state, n in states))
    valid = db.execute(
        "SELECT valid, COUNT(*) FROM measurement WHERE session = ? GROUP BY valid", (args.session,)
    ).fetchall()
    print("measurements: " + ", ".join(f"{'valid' if v else 'invalid'} {n}" for v, n in valid))
    for reason, n in db.execute(
        "SELECT reason, COUNT(*) AS n FROM measurement WHERE session = ? AND NOT valid "
        "GROUP BY reason ORDER BY n DESC LIMIT 5",
        (args.session,),
    ):
        print(f"  {n:4d} x {reason[:110]}")
    errors = db.execute(
        "SELECT reason, COUNT(*) FROM job WHERE session = ? AND state IN ('errored', "
        "'not_applicable') GROUP BY reason LIMIT 5",
        (args.session,),
    ).fetchall()
    for reason, n in errors:
        print(f"  job {n:3d} x {str(reason)[:110]}")
    found = db.execute("SELECT COUNT(*) FROM find_db WHERE session = ?", (args.session,)).fetchone()
    print(f"find-db rows: {found[0]}")


def _median_ms(fn, repeats: int) -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def cmd_compare(args: argparse.Namespace) -> None:
    rows = results(args.db, args.session)
    if not rows:
        raise SystemExit(f"session {args.session} has no find-db rows in {args.db}")
    header = (
        f"{'layer (batch 32, NCHW FP32)':55} {'solver':26} {'tuned ms':>9} {'default':>9} "
        f"{'cuDNN ms':>9} {'cuBLAS':>8} {'ratio':>6} {'TFLOP/s':>8} {'% peak':>7}"
    )
    print(header)
    if args.dry_run:
        for p, solver, params, ms in rows:
            print(f"{_name(p):55} {solver:26} {ms:9.3f}  (dry run: no GPU, {params}; "
                  "cuDNN and cuBLAS not timed)")  # fmt: skip
        print("dry run: the timings above are FakeGpu's model, not a GPU's")
        return
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.cuda.init()
    import cupy

    from tuna.backends.cuda.device import Gpu

    compiler = cc.find_compiler()
    ratios, speedups = [], []
    for p, solver, params, _ in rows:
        support = cc.compile_support(compiler, p, "sm_90").cubin
        tuned = cc.compile_candidate(compiler, p, solver, params, "sm_90")
        default_params = sv.default_params(p, solver)
        default = cc.compile_candidate(compiler, p, solver, default_params, "sm_90")
        assert support and tuned.cubin and default.cubin
        gpu = Gpu(p, support)
        (hi, wi), (ho, wo), (r, s) = p.in_size, p.out_size, p.fil_size
        x = torch.randn(p.batchsize, p.in_channels, hi, wi, device="cuda")
        w = torch.randn(p.out_channels, p.in_channels // p.group_count, r, s, device="cuda")
        dy = torch.randn(p.batchsize, p.out_channels, ho, wo, device="cuda")
        cudnn = _cudnn(p, x, w, dy)
        one_by_one = (
            p.direction == "F" and p.fil_size == (1, 1) and p.stride == (1, 1) and p.pad == (0, 0)
        )
        if one_by_one:
            f32 = cupy.float32
            a = cupy.random.standard_normal((p.out_channels, p.in_channels), dtype=f32)
            b = cupy.random.standard_normal((p.batchsize, p.in_channels, hi * wi), dtype=f32)

        for _ in range(3):  # cuDNN's benchmark search, warm-ups
            cudnn()
        torch.cuda.synchronize()
        t_tuned, t_default, t_cudnn, t_cublas = [], [], [], []
        for _ in range(args.turns):
            t_tuned.append(gpu.measure(tuned.cubin, solver, params, repeats=args.repeats,
                                       warmup_ms=10, tolerance=1e-4).median_ms)  # fmt: skip
            t_cudnn.append(_median_ms(cudnn, args.repeats))
            if one_by_one:
                cupy.matmul(a, b)
                cupy.cuda.Device().synchronize()
                start, end = cupy.cuda.Event(), cupy.cuda.Event()
                times = []
                for _ in range(args.repeats):
                    start.record()
                    cupy.matmul(a, b)
                    end.record()
                    end.synchronize()
                    times.append(cupy.cuda.get_elapsed_time(start, end))
                t_cublas.append(statistics.median(times))
        t_default.append(gpu.measure(default.cubin, solver, default_params, repeats=args.repeats,
                                     warmup_ms=10, tolerance=1e-4).median_ms)  # fmt: skip
        ms, ref = statistics.median(t_tuned), statistics.median(t_cudnn)
        tflops = sv.flops(p) / (ms * 1e-3) / 1e12
        ratios.append(ref / ms)
        speedups.append(t_default[0] / ms)
        cublas = f"{statistics.median(t_cublas):8.3f}" if t_cublas else f"{'-':>8}"
        print(
            f"{_name(p):55} {solver:26} {ms:9.3f} {t_default[0]:9.3f} {ref:9.3f} {cublas} "
            f"{ref / ms:6.2f} {tflops:8.1f} {100 * tflops / PEAK_TFLOPS:6.1f}%",
            flush=True,
        )
        gpu.close()
    geo, geo_default = geomean(ratios), geomean(speedups)
    faster = sum(r > 1 for r in ratios)
    print(
        f"geomean cuDNN/tuned {geo:.2f} (target >= 0.8), faster than cuDNN on {faster} of "
        f"{len(ratios)} layers (target >= 2); tuned vs default {geo_default:.2f}x (target >= 3)"
    )


def _cudnn(p: ConvProblem, x, w, dy):  # torch tensors (torch is imported on the GPU host only)
    """cuDNN's convolution in ``p``'s direction, through PyTorch, as a function of nothing."""
    import torch

    how = {"stride": p.stride, "padding": p.pad, "dilation": p.dilation, "groups": p.group_count}
    if p.direction == "B":
        return lambda: torch.nn.grad.conv2d_input(x.shape, w, dy, **how)
    if p.direction == "W":
        return lambda: torch.nn.grad.conv2d_weight(x, w.shape, dy, **how)
    return lambda: torch.nn.functional.conv2d(x, w, **how)


def _name(p: ConvProblem) -> str:
    (hi, wi), (r, s) = p.in_size, p.fil_size
    where = {"F": "", "B": " bwd-data", "W": " bwd-wei"}[p.direction]
    return (
        f"{p.in_channels}x{hi}x{wi} -> {p.out_channels}, {r}x{s} s{p.stride[0]} p{p.pad[0]}{where}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("versions")
    lp = sub.add_parser("layers")
    lp.add_argument("--batch", type=int, default=BATCH)
    lp.add_argument("--count", type=int, default=0, help="only this many (1x1 and 3x3 in turn)")
    lp.add_argument(
        "--backward", type=int, default=0, help="this many layers in each backward direction"
    )
    rp = sub.add_parser("compile-rate")
    rp.add_argument("--count", type=int, default=60)
    rp.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    rp.add_argument("--seed", type=int, default=1)
    rp.add_argument("--solver", choices=list(sv.BY_NAME), default=sv.IGEMM)
    sp = sub.add_parser("summary")
    sp.add_argument("--db", required=True)
    sp.add_argument("--session", type=int, required=True)
    cp = sub.add_parser("compare")
    cp.add_argument("--db", required=True)
    cp.add_argument("--session", type=int, required=True)
    cp.add_argument("--turns", type=int, default=3)
    cp.add_argument("--repeats", type=int, default=20)
    cp.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    started = time.monotonic()
    commands = {
        "versions": cmd_versions, "layers": cmd_layers, "summary": cmd_summary,
        "compile-rate": cmd_compile_rate,
        "compare": cmd_compare,
    }  # fmt: skip
    commands[args.cmd](args)
    print(f"({args.cmd}: {time.monotonic() - started:.1f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
