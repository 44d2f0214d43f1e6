"""cpuconv: the same candidates built from an earlier commit's kernels and from this tree's,
timed in turns with oneDNN.

An A/B of a kernel change for bench/cpuconv.md: for each named ResNet-50 layer (batch 1) and
each candidate (``SOLVER:PARAMS``), the kernel sources of ``--before`` (a git revision) and of
the working tree are built with the same flags, both verified against the reference, then
timed in turns (``--passes`` turns of 3 runs each, fastest run each) beside oneDNN's
convolution primitive alone and with its NCHW reorders (1 and 2 threads, its fastest), when
oneDNN is installed. Taking turns gives each the same share of a loaded machine's quiet
moments. Not a test.

``--clock cpu`` times one-thread candidates by the CPU time of the thread that runs them
(``time.thread_time_ns``) instead of the wall clock: on a machine loaded by others, a run
the scheduler interrupts still counts only the time it ran (the caches it finds are still
shared). Two-thread candidates are refused there: their second thread's time is not counted.

    .venv/bin/python bench/cpuconv_ab.py --before main --layers "256x14x14 -> 256, 3x3/1" \\
        --candidates CpuIm2colGemm:6,1,16,128,2,1,1 CpuGemm1x1:8,2,8,512,2,1,1
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import subprocess
import time
from collections.abc import Iterator

from bench.cpuconv import OneDnn, layer_name, load_onednn, named_layers
from tuna.backends.cpuconv import build, run
from tuna.backends.cpuconv import solvers as sv
from tuna.problems.conv import ConvProblem


@contextlib.contextmanager
def sources_of(rev: str) -> Iterator[None]:
    """build.kernel_source reads the kernels as they were at ``rev`` (git show)."""
    original = build.kernel_source

    def at_rev(name: str) -> str:
        path = f"tuna/backends/cpuconv/kernels/{name}"
        return subprocess.run(
            ["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True
        ).stdout

    build.kernel_source = at_rev  # type: ignore[assignment]
    try:
        yield
    finally:
        build.kernel_source = original  # type: ignore[assignment]


def built(p: ConvProblem, solver: str, params: list[str]) -> tuple[list, dict]:
    units = build.plan_units(p, solver, params, march="native")
    return build.build_units(units), {prm: (u.name, sym) for u in units for prm, sym in u.symbols}


def cpu_ms(fn: run.KernelFn, *args: object) -> float:
    """One run's CPU time on this thread, in ms."""
    start = time.thread_time_ns()
    fn(*args)
    return (time.thread_time_ns() - start) / 1e6


def ab(p: ConvProblem, cands: list[tuple[str, str]], before: str, passes: int,
       onednn: OneDnn | None, clock: str = "wall") -> None:  # fmt: skip
    timer = cpu_ms if clock == "cpu" else run._time_ms
    ref = run.Reference.get()
    a, b, expected = ref.case(p)
    out = run.aligned_floats(len(expected))
    kernels, fns = [], {}
    sides = (("before", sources_of(before)), ("after", contextlib.nullcontext()))
    tables = {}
    for side, ctx in sides:
        with ctx:
            for solver in dict.fromkeys(s for s, _ in cands):
                mine = [prm for s, prm in cands if s == solver]
                ks, table = built(p, solver, mine)
                kernels += ks
                tables[side, solver] = table
    if len({k.name for k in kernels}) < len(kernels):  # the same source builds the same .so
        raise SystemExit(
            f"{layer_name(p)}: the kernels of {before} are the working tree's for these "
            "candidates: nothing to compare; give an older revision with --before"
        )
    ws = {}
    with run.loaded(kernels, "cpuconv-ab-") as libs:
        for (side, solver), table in tables.items():
            for c in run.candidates(p, solver, table, libs):
                fns[side, solver, c.params] = c.fn
                ws[side, solver, c.params] = run.workspace_for(c, b)  # each its own weights
        for key, fn in fns.items():
            ref.fill_value(out, len(expected), float("nan"))
            fn(a, b, out, ws[key])
            error = ref.max_error(out, expected, len(expected))
            if not error <= run.tolerance(key[1]):
                raise SystemExit(f"{layer_name(p)}: {key} fails verification (error {error:g})")
        best = dict.fromkeys(fns, math.inf)
        full = alone = math.inf
        for _ in range(passes):
            for key, fn in fns.items():
                best[key] = min([best[key]] + [timer(fn, a, b, out, ws[key]) for _ in range(3)])
            for n in (1, 2) if onednn else ():
                f_ms, c_ms, _ = onednn.time(p, n, 3)  # type: ignore[union-attr]
                full, alone = min(full, f_ms), min(alone, c_ms)
    gflop = sv.flops(p) / 1e9
    print(f"{layer_name(p)}: load {os.getloadavg()[0]:.2f}; oneDNN conv alone {alone:.3f} ms, "
          f"with reorders {full:.3f} ms (wall clock); candidates by the {clock} clock")  # fmt: skip
    for solver, prm in cands:
        t0, t1 = best["before", solver, prm], best["after", solver, prm]
        print(f"  {solver}:{prm:>18}  before {t0:7.3f}  after {t1:7.3f} ms  "
              f"({t0 / t1:.2f}x; {gflop / t1 * 1e3:5.1f} GFLOP/s; conv alone / after "
              f"{alone / t1:.2f})")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="git revision of the kernels to compare")
    ap.add_argument("--layers", nargs="+", required=True, help='e.g. "2048x7x7 -> 512, 1x1/1"')
    ap.add_argument("--candidates", nargs="+", required=True, help="SOLVER:PARAMS each")
    ap.add_argument("--passes", type=int, default=5, help="turns each")
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: the timing thread's CPU time (one-thread candidates only)",
    )
    ap.add_argument("--no-onednn", action="store_true", help="leave oneDNN out (faster turns)")
    args = ap.parse_args()
    onednn = None if args.no_onednn else load_onednn()
    cands = [tuple(c.split(":", 1)) for c in args.candidates]
    for s, prm in cands:
        if args.clock == "cpu" and sv.parse_params(s, prm).get("NT", 1) != 1:
            raise SystemExit(
                f"--clock cpu: {s}:{prm} runs on two threads, whose second thread's time the "
                "CPU clock of this one does not count; give one-thread candidates (NT 1)"
            )
    for p in named_layers(args.layers):
        mine = [
            (s, prm)
            for s, prm in cands
            if sv.applicability(p, s) is None and prm in sv.tuning_space(p, s)
        ]
        if mine:
            ab(p, mine, args.before, args.passes, onednn, args.clock)


if __name__ == "__main__":
    main()
