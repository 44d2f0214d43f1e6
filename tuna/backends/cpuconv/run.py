"""Running compiled candidates: load, verify against the reference, time.

Kernels arrive as bytes (compiled on this machine or another): they are written to a private
temporary directory and loaded with ``ctypes``. Inputs are seeded random values in [-1, 1)
made by the reference library, so every machine sees the same data; the expected output
comes from the naive kernels of the reference library, with double accumulators.

Verification: a candidate passes when ``max|out - ref| <= tol * max|ref|`` over the whole
output (and the output holds no NaN: it is filled with NaNs before the candidate runs, so an
element it forgets to write fails it). ``tol`` is 1e-3 for FP32. Winograd F(2x2, 3x3) gets
2e-3: its transforms add and subtract up to 16 values (and halve some) before and after the
products, so each output carries a few more roundings than a direct sum (measured on the
ResNet-50 3x3 layers: about 5e-7 against 2e-7 for im2col). The bound stays tight enough that
one missing filter tap of a 512-channel 3x3 problem (about 1e-2) fails verification.

Timing: the verification run is the first warm-up; then more warm-up runs until
``WARM_UP_MS`` have passed (``FIRST_WARM_UP_MS`` for the first candidate), then ``repeats``
runs, of which the median is the time in ms (the fastest with ``fastest``: a finalist's re-timing
turn, :mod:`tuna.backends.finalists`). A candidate that is more than ``prune`` times slower than
the best so far after its warm-up is not repeated: its time is that warm-up.

Racing: a candidate stops being timed as soon as it clearly cannot win. After each of its
timed runs, its *lower bound* (the fastest of its warm-up and its runs so far) is compared
with the *upper bound* of the best fully timed candidate so far (the slowest of that one's
runs); once at least ``race_after`` runs are in and the lower bound is above the upper
bound, the candidate's remaining runs are skipped (its time is the median of the runs it
had, marked ``raced``). Such a candidate is slower in every run than the best was in any,
so it could not have been chosen: the winner is always timed fully. ``Measured.saved_ms``
counts the runs skipped, each at the candidate's lower bound.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import statistics
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuna.backends.base import KernelBinary
from tuna.backends.cpuconv import build
from tuna.backends.cpuconv import solvers as sv
from tuna.problems.conv import ConvProblem

log = logging.getLogger(__name__)

FP32_TOLERANCE = 1e-3
WINOGRAD_TOLERANCE = 2e-3
_SEEDS = (0x5EED0001, 0x5EED0002)
_FloatPtr = ctypes.POINTER(ctypes.c_float)
KernelFn = Callable[..., Any]


@dataclass(frozen=True)
class Candidate:
    """A loaded kernel. ``prepare(b, ws)``, where the kernel has one, packs the weights ``b``
    into the workspace ``ws`` (CpuIm2colGemm forward with PB 2: ``KNAME_prepack``): run once
    before the kernel's first run on that workspace and again whenever another kernel has
    used it, untimed, as a framework reorders its weights once per model, not per call."""

    params: str
    fn: KernelFn
    workspace: int  # bytes
    prepare: KernelFn | None = None


def workspace_for(cand: Candidate, b: Any) -> Any:
    """A workspace of ``cand``'s own, prepared for the weights ``b`` (None if it needs none):
    for timing candidates in turns, where a shared workspace would hold another's weights."""
    ws = aligned_floats(cand.workspace // 4) if cand.workspace else None
    if cand.prepare is not None:
        cand.prepare(b, ws)
    return ws


@dataclass(frozen=True)
class Measured:
    """What became of a candidate: its time (ms) if it passed, otherwise why not."""

    params: str
    time_ms: float | None
    error: float | None
    reason: str | None = None
    runs: int = 0  # timed runs (the warm-ups not counted)
    raced: bool = False  # stopped early: clearly slower than the best
    saved_ms: float = 0.0  # what the skipped runs would have cost, about

    @property
    def ok(self) -> bool:
        return self.time_ms is not None


class TimeBudgetExceeded(Exception):
    """Raised when candidates run past their deadline; ``done`` of ``total`` were measured."""

    def __init__(self, done: int, total: int, measured: list[Measured]) -> None:
        super().__init__(f"deadline passed after {done} of {total} candidates")
        self.done, self.total, self.measured = done, total, measured


def tensor_sizes(p: ConvProblem) -> tuple[int, int, int]:
    """Elements of (a, b, out) as the kernels take them for ``p``'s direction."""
    (hi, wi), (ho, wo), (fy, fx) = p.in_size, p.out_size, p.fil_size
    x = p.batchsize * p.in_channels * hi * wi
    w = p.out_channels * (p.in_channels // p.group_count) * fy * fx
    y = p.batchsize * p.out_channels * ho * wo
    return {"F": (x, w, y), "B": (y, w, x), "W": (x, y, w)}[p.direction]


def _shape(p: ConvProblem) -> ctypes.Array[ctypes.c_int]:
    (hi, wi), (ho, wo), (fy, fx) = p.in_size, p.out_size, p.fil_size
    values = (p.batchsize, p.in_channels, p.out_channels, p.group_count, hi, wi, ho, wo, fy, fx)
    return (ctypes.c_int * 16)(*values, *p.pad, *p.stride, *p.dilation)


class Reference:
    """The process's reference library: data, expected outputs, the error measure."""

    _instance: Reference | None = None

    def __init__(self, cc: str = "cc") -> None:
        lib = ctypes.CDLL(str(build.reference_library(cc)))
        self._ref = {
            d: getattr(lib, f"cv_ref_{n}")
            for d, n in zip("FBW", ("fwd", "bwd", "wrw"), strict=True)
        }
        self.fill_random = lib.cv_fill_random
        self.fill_random.argtypes = (_FloatPtr, ctypes.c_long, ctypes.c_uint64)
        self.fill_value = lib.cv_fill_value
        self.fill_value.argtypes = (_FloatPtr, ctypes.c_long, ctypes.c_float)
        self.max_error = lib.cv_max_error
        self.max_error.argtypes = (_FloatPtr, _FloatPtr, ctypes.c_long)
        self.max_error.restype = ctypes.c_double
        self._cases: OrderedDict[ConvProblem, tuple[Any, Any, Any]] = OrderedDict()

    @classmethod
    def get(cls, cc: str = "cc") -> Reference:
        if cls._instance is None:
            cls._instance = cls(cc)
        return cls._instance

    def case(self, p: ConvProblem) -> tuple[Any, Any, Any]:
        """(a, b, expected out) of ``p``: seeded inputs and the reference's output, cached."""
        if p in self._cases:
            self._cases.move_to_end(p)
            return self._cases[p]
        na, nb, nout = tensor_sizes(p)
        a, b, out = aligned_floats(na), aligned_floats(nb), aligned_floats(nout)
        self.fill_random(a, na, _SEEDS[0])
        self.fill_random(b, nb, _SEEDS[1])
        self._ref[p.direction](_shape(p), a, b, out, None)
        self._cases[p] = (a, b, out)
        while len(self._cases) > 2:
            self._cases.popitem(last=False)
        return a, b, out


#: Alignment of every buffer a candidate reads or writes: a cache line, as a library's
#: caller would allocate them. ctypes' own arrays are 16-byte aligned at best, and a
#: 16-float vector kernel on a buffer that straddles cache lines ran up to 1.8x slower, so a
#: candidate's time depended on where malloc happened to put its buffers.
BUFFER_ALIGN = 64


def aligned_floats(n: int) -> Any:
    """A zeroed ctypes array of ``n`` floats starting on a ``BUFFER_ALIGN``-byte boundary."""
    raw = (ctypes.c_char * (n * 4 + BUFFER_ALIGN))()
    offset = -ctypes.addressof(raw) % BUFFER_ALIGN
    return (ctypes.c_float * n).from_buffer(raw, offset)  # keeps ``raw`` alive


@contextlib.contextmanager
def loaded(kernels: Sequence[KernelBinary], prefix: str) -> Iterator[dict[str, ctypes.CDLL]]:
    """The kernels' shared objects, loaded from a private directory; unloaded afterwards."""
    libs: dict[str, ctypes.CDLL] = {}
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        try:
            for k in kernels:
                path = Path(tmp) / Path(k.name).name
                path.write_bytes(k.binary)
                libs[k.name] = ctypes.CDLL(str(path))
            yield libs
        finally:
            for lib in libs.values():
                _unload(lib)


def _unload(lib: ctypes.CDLL) -> None:
    import _ctypes

    dlclose = getattr(_ctypes, "dlclose", None)
    if dlclose is not None:
        with contextlib.suppress(OSError):
            dlclose(lib._handle)


def kernel_fn(lib: ctypes.CDLL, symbol: str) -> KernelFn:
    fn = getattr(lib, symbol)
    fn.argtypes = (_FloatPtr, _FloatPtr, _FloatPtr, _FloatPtr)
    fn.restype = None
    return fn


def prepare_fn(lib: ctypes.CDLL, symbol: str) -> KernelFn | None:
    """The kernel's ``SYMBOL_prepack(b, ws)``, or None where it packs nothing ahead."""
    try:
        fn = getattr(lib, f"{symbol}_prepack")
    except AttributeError:
        return None
    fn.argtypes = (_FloatPtr, _FloatPtr)
    fn.restype = None
    return fn


def tolerance(solver: str) -> float:
    """How far a candidate of ``solver`` may stray from the reference (Winograd rounds more)."""
    return WINOGRAD_TOLERANCE if solver == sv.WINOGRAD else FP32_TOLERANCE


def candidates(
    p: ConvProblem,
    solver: str,
    table: Mapping[str, Sequence[str]],
    libs: Mapping[str, ctypes.CDLL],
) -> list[Candidate]:
    """The candidates named by ``table`` (params -> (shared object, symbol)) in ``libs``."""
    return [
        Candidate(
            params,
            kernel_fn(libs[name], symbol),
            sv.workspace_bytes(p, solver, sv.parse_params(solver, params)),
            prepare_fn(libs[name], symbol),
        )
        for params, (name, symbol) in table.items()
    ]


def build_and_measure(
    p: ConvProblem,
    solver: str,
    params: Sequence[str],
    *,
    march: str,
    opt: str = "3",
    per_unit: int = 8,
    jobs: int = 1,
    prefix: str = "cpuconv-",
    measurer: Callable[..., list[Measured]] | None = None,
    **how: Any,
) -> list[Measured]:
    """Build ``params`` of ``solver`` for ``p`` here and verify and time them (``measurer``,
    :func:`measure` by default, with ``how``; ``isolate.measure_isolated`` times them in a
    forked child as an evaluate worker does): what the benchmarks and tests do outside the
    job queue."""
    units = build.plan_units(p, solver, params, march=march, opt=opt, per_unit=per_unit)
    kernels = build.build_units(units, jobs=jobs)
    table = {prm: (u.name, sym) for u in units for prm, sym in u.symbols}
    with loaded(kernels, prefix) as libs:
        return (measurer or measure)(
            p, candidates(p, solver, table, libs), tolerance=tolerance(solver), **how
        )


def measure(
    p: ConvProblem,
    candidates: Sequence[Candidate],
    *,
    tolerance: float = FP32_TOLERANCE,
    repeats: int = 5,
    prune: float = 4.0,
    race_after: int = 1,
    deadline: float | None = None,
    reference: Reference | None = None,
    starting: Callable[[int, list[Measured]], None] | None = None,
    fastest: bool = False,
) -> list[Measured]:
    """Verify and time ``candidates`` in order; raises :class:`TimeBudgetExceeded` when the
    ``time.monotonic()`` deadline passes with candidates left. ``starting(i, results)``,
    if given, is called before candidate ``i`` runs, with the results so far (what
    :mod:`~tuna.backends.cpuconv.isolate` reports from its child process). A candidate's
    time is the median of its timed runs, or with ``fastest`` the fastest of them."""
    ref = reference or Reference.get()
    a, b, expected = ref.case(p)
    nout = len(expected)
    out = aligned_floats(nout)
    ws_floats = max((c.workspace for c in candidates), default=0) // 4
    ws = aligned_floats(ws_floats) if ws_floats else None
    results: list[Measured] = []
    best: float | None = None  # the best median so far
    best_upper: float | None = None  # the slowest run of that candidate
    for i, cand in enumerate(candidates):
        if deadline is not None and time.monotonic() > deadline:
            raise TimeBudgetExceeded(i, len(candidates), results)
        if starting is not None:
            starting(i, results)
        if cand.prepare is not None:  # the workspace is shared: the last one's weights
            cand.prepare(b, ws)
        ref.fill_value(out, nout, float("nan"))
        cand.fn(a, b, out, ws)
        error = ref.max_error(out, expected, nout)
        if not error <= tolerance:
            log.info("candidate %s: verification failed (max error %g)", cand.params, error)
            results.append(Measured(cand.params, None, error, "verification failed"))
            continue
        warm = _warm_up(cand.fn, (a, b, out, ws), FIRST_WARM_UP_MS if i == 0 else WARM_UP_MS)
        if best is not None and warm > prune * best:
            results.append(Measured(cand.params, warm, error, runs=0))
            continue
        runs = repeats if warm < 100 else max(1, min(repeats, 3))
        times: list[float] = []
        lower = warm
        raced = False
        while len(times) < runs:
            t = _time_ms(cand.fn, a, b, out, ws)
            times.append(t)
            lower = min(lower, t)
            if (
                best_upper is not None
                and len(times) >= race_after
                and len(times) < runs
                and lower > best_upper
            ):
                raced = True
                break
        t_ms = min(times) if fastest else statistics.median(times)
        saved = (runs - len(times)) * lower
        results.append(Measured(cand.params, t_ms, error, None, len(times), raced, saved))
        if not raced and (best is None or t_ms < best):
            best, best_upper = t_ms, max(times)
    return results


#: Milliseconds a candidate runs untimed before its timed runs (at least one run), and the
#: first candidate of a measurement: a core that sat idle (a one-thread candidate before a
#: two-thread one, the compile before the first) runs a short kernel up to 1.8x slower for
#: its first milliseconds, which one warm-up run of a 1 ms kernel does not cover.
WARM_UP_MS = 10.0
FIRST_WARM_UP_MS = 100.0


def _warm_up(fn: KernelFn, args: tuple[Any, ...], ms: float) -> float:
    """Runs ``fn`` until ``ms`` have passed (once at least); the fastest run's time."""
    fastest = spent = _time_ms(fn, *args)
    while spent < ms:
        t = _time_ms(fn, *args)
        fastest = min(fastest, t)
        spent += t
    return fastest


def _time_ms(fn: KernelFn, *args: Any) -> float:
    start = time.perf_counter_ns()
    fn(*args)
    return (time.perf_counter_ns() - start) / 1e6
