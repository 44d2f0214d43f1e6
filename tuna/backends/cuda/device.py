"""The GPU through NVIDIA's driver API (``cuda-bindings``): facts, load, launch, time.

Only ever used in a child process of the worker (:mod:`~tuna.backends.cuda.evaluate` forks
it before any CUDA call: a CUDA context does not survive a fork, and a faulting kernel
poisons its context). :class:`Gpu` is the device the evaluation runs on; it owns the
problem's buffers (the two operands of its direction filled on the GPU, the reference
computed there by ``kernels/support.cu``) and verifies and times one candidate at a time with
CUDA events.
"""

from __future__ import annotations

import ctypes
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tuna.backends.cuda import solvers as sv
from tuna.errors import BackendError
from tuna.problems.conv import ConvProblem


class DriverUnavailableError(BackendError):
    """Raised when there is no usable CUDA driver or GPU here (the message says which)."""


class DeviceError(BackendError):
    """Raised when a driver call fails; ``code`` is the driver's error name."""

    def __init__(self, what: str, code: str) -> None:
        super().__init__(f"{what}: {code}")
        self.code = code


@dataclass(frozen=True)
class GpuFacts:
    """What the evaluation runs on: recorded with the platform and checked against the cubins."""

    name: str
    arch: str  # sm_90
    sm_count: int
    memory_bytes: int
    driver_cuda: tuple[int, int]  # the newest CUDA version the driver accepts

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["driver_cuda"] = f"{self.driver_cuda[0]}.{self.driver_cuda[1]}"
        return out


def refusal(
    facts: GpuFacts, arch: str, compiler: str, compiler_version: Sequence[int]
) -> str | None:
    """Why cubins built for ``arch`` by ``compiler`` (``nvrtc 13.0``) cannot run on this
    GPU, or None: another architecture, or a compiler of a newer major CUDA version than the
    driver accepts. (Within a major version a driver loads the cubins of a newer minor's
    compiler: CUDA's minor version compatibility holds for machine code, not for PTX.)"""
    if arch != facts.arch:
        return (
            f"the cubins are for {arch}, this GPU ({facts.name}) is {facts.arch}: compile "
            f"for {facts.arch} (the session's arch)"
        )
    if int(compiler_version[0]) > facts.driver_cuda[0]:
        return (
            f"the cubins were built by {compiler}, newer than this driver accepts (CUDA "
            f"{facts.driver_cuda[0]}.{facts.driver_cuda[1]}): update the driver or compile "
            f"with CUDA {facts.driver_cuda[0]}.x"
        )
    return None


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise DriverUnavailableError(
            "cuda-bindings is not installed: pip install 'tuna[cuda]'"
        ) from e
    return driver


def _check(result: Any, what: str) -> Any:
    """A driver call's value(s), or :class:`DeviceError` with the driver's error name."""
    cu = _driver()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        raise DeviceError(what, name.decode() if isinstance(name, bytes) else str(err))
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def init() -> Any:
    """``cuInit``; :class:`DriverUnavailableError` in one line when there is no driver or GPU."""
    cu = _driver()
    try:
        err = cu.cuInit(0)[0]
    except RuntimeError as e:  # "Failed to dlopen libcuda.so.1"
        raise DriverUnavailableError(
            f"no CUDA driver on this host ({e}): the evaluate phase needs an NVIDIA GPU"
        ) from None
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        raise DriverUnavailableError(f"the CUDA driver found no usable GPU ({name.decode()})")
    return cu


def facts(ordinal: int = 0) -> GpuFacts:
    """The facts of GPU ``ordinal`` (of those ``CUDA_VISIBLE_DEVICES`` leaves)."""
    cu = init()
    count = _check(cu.cuDeviceGetCount(), "cuDeviceGetCount")
    if count <= ordinal:
        raise DriverUnavailableError(f"no GPU {ordinal}: the driver sees {count}")
    dev = _check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
    attr = cu.CUdevice_attribute
    major = _check(
        cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attr"
    )
    minor = _check(
        cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attr"
    )
    sms = _check(
        cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "attr"
    )
    name = _check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
    memory = _check(cu.cuDeviceTotalMem(dev), "cuDeviceTotalMem")
    version = _check(cu.cuDriverGetVersion(), "cuDriverGetVersion")
    return GpuFacts(
        name=name.split(b"\0", 1)[0].decode(errors="replace"),
        arch=f"sm_{major}{minor}",
        sm_count=int(sms),
        memory_bytes=int(memory),
        driver_cuda=(version // 1000, (version % 1000) // 10),
    )


@dataclass(frozen=True)
class Timing:
    """One candidate on the GPU: its error against the reference and its timed runs (ms)."""

    error: float
    times_ms: tuple[float, ...] = ()

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)


def _params(*values: Any) -> tuple[Any, Any]:
    """A kernel's argument array for cuLaunchKernel, and what keeps it alive."""
    holders = [v if isinstance(v, ctypes._SimpleCData) else ctypes.c_void_p(int(v)) for v in values]
    array = (ctypes.c_void_p * len(holders))(*(ctypes.addressof(h) for h in holders))
    return ctypes.addressof(array), (array, holders)


class Gpu:
    """One GPU with one problem's buffers and reference output (see the module docstring)."""

    def __init__(self, problem: ConvProblem, support_cubin: bytes, ordinal: int = 0) -> None:
        self.facts = facts(ordinal)
        cu = self.cu = _driver()
        dev = _check(cu.cuDeviceGet(ordinal), "cuDeviceGet")
        self.ctx = _check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        _check(cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        self.stream = _check(cu.cuStreamCreate(0), "cuStreamCreate")
        self.support = _check(cu.cuModuleLoadData(support_cubin), "load the support cubin")
        self.problem = problem
        sizes = sv.tensor_sizes(problem)
        src, mat, out = sv.OPERANDS[problem.direction]
        self.n_src, self.n_mat, self.n_out = sizes[src], sizes[mat], sizes[out]
        self.buffers = {
            name: _check(cu.cuMemAlloc(4 * n), f"cuMemAlloc {name}")
            for name, n in (
                ("src", self.n_src), ("mat", self.n_mat), ("out", self.n_out),
                ("ref", self.n_out), ("mag", self.n_out), ("worst", 1),
            )
        }  # fmt: skip
        self.start = _check(cu.cuEventCreate(0), "cuEventCreate")
        self.end = _check(cu.cuEventCreate(0), "cuEventCreate")
        b = self.buffers
        self._support_launch(
            "fill", (b["src"], ctypes.c_longlong(self.n_src), ctypes.c_uint(1)), 1024
        )
        self._support_launch(
            "fill", (b["mat"], ctypes.c_longlong(self.n_mat), ctypes.c_uint(2)), 1024
        )
        blocks = -(-self.n_out // 256)
        self._support_launch("conv_reference", (b["src"], b["mat"], b["ref"], b["mag"]), blocks)
        _check(cu.cuStreamSynchronize(self.stream), "the reference kernel")

    def close(self) -> None:
        """Free the buffers and the support module (a process that measures many problems)."""
        cu = self.cu
        for ptr in self.buffers.values():
            cu.cuMemFree(ptr)
        self.buffers = {}
        cu.cuModuleUnload(self.support)
        cu.cuEventDestroy(self.start)
        cu.cuEventDestroy(self.end)
        cu.cuStreamDestroy(self.stream)

    def _support_launch(self, name: str, args: Sequence[Any], blocks: int) -> None:
        cu = self.cu
        fn = _check(cu.cuModuleGetFunction(self.support, name.encode()), f"kernel {name}")
        address, keep = _params(*args)
        _check(cu.cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, self.stream, address, 0), name)
        del keep

    def measure(
        self,
        cubin: bytes,
        solver: str,
        params: str,
        *,
        repeats: int,
        warmup_ms: float,
        tolerance: float,
    ) -> Timing:
        """Verify ``cubin`` against the reference, then (if right) time it: its error and
        ``repeats`` timed runs after at least ``warmup_ms`` of warm-up. A fault raises
        :class:`DeviceError` (the context is lost: the caller's process ends)."""
        cu, b = self.cu, self.buffers
        v = sv.parse_params(solver, params)
        gx, gy, gz = sv.grid(self.problem, solver, v)
        threads = sv.threads(v)
        module = _check(cu.cuModuleLoadData(cubin), "load the cubin")
        try:
            fn = _check(cu.cuModuleGetFunction(module, b"conv"), "the kernel conv")
            address, keep = _params(b["src"], b["mat"], b["out"])

            def launch() -> None:
                _check(
                    cu.cuLaunchKernel(fn, gx, gy, gz, threads, 1, 1, 0, self.stream, address, 0),
                    "launch",
                )

            _check(cu.cuMemsetD32Async(b["out"], 0x7FC00000, self.n_out, self.stream), "memset")
            launch()
            _check(cu.cuMemsetD32Async(b["worst"], 0, 1, self.stream), "memset")
            self._support_launch(
                "compare",
                (b["out"], b["ref"], b["mag"], ctypes.c_longlong(self.n_out), b["worst"]),
                min(1024, -(-self.n_out // 256)),
            )
            worst = ctypes.c_uint(0)
            _check(cu.cuStreamSynchronize(self.stream), "the candidate")
            _check(cu.cuMemcpyDtoH(ctypes.addressof(worst), b["worst"], 4), "copy the error")
            error = ctypes.c_float.from_buffer_copy(worst).value
            if not error <= tolerance:
                return Timing(error)
            elapsed, warm = 0.0, 0
            while elapsed < warmup_ms or warm < 2:
                _check(cu.cuEventRecord(self.start, self.stream), "cuEventRecord")
                launch()
                _check(cu.cuEventRecord(self.end, self.stream), "cuEventRecord")
                _check(cu.cuEventSynchronize(self.end), "warm-up")
                elapsed += _check(cu.cuEventElapsedTime(self.start, self.end), "elapsed")
                warm += 1
            times = []
            for _ in range(repeats):
                _check(cu.cuEventRecord(self.start, self.stream), "cuEventRecord")
                launch()
                _check(cu.cuEventRecord(self.end, self.stream), "cuEventRecord")
                _check(cu.cuEventSynchronize(self.end), "timed run")
                times.append(float(_check(cu.cuEventElapsedTime(self.start, self.end), "elapsed")))
            del keep
            return Timing(error, tuple(times))
        finally:
            cu.cuModuleUnload(module)
