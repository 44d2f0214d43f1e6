"""The compile phase: one cubin per candidate, judged by ptxas's report before any GPU sees it.

A candidate is ``kernels/conv.cu`` with the problem's and the candidate's constants
(``-DBM=64 ...``), compiled for the session's architecture (``sm_90``) by NVRTC in this
process (NVIDIA's ``cuda-bindings`` and ``nvidia-cuda-nvrtc`` wheels: no GPU, no driver, no
CUDA install needed) or, where those are missing, by ``nvcc``. ptxas's ``-v`` report
(registers, shared memory, stack, spills) is kept with each candidate, and a candidate is
recorded invalid, with the reason, when it

* spills registers to local memory,
* needs more shared memory than a block may have (ptxas refuses static shared memory over
  48 KB), or
* cannot have one block resident on an SM (:mod:`~tuna.backends.cuda.occupancy`).

Such a candidate never reaches the GPU, nor does one outside the solver's space for the
problem (:func:`~tuna.backends.cuda.solvers.invalid_reason`: a tile the kernel cannot run
right there, such as vector loads backward data cannot make), which is not compiled.

NVRTC releases Python's lock while it compiles, so ``jobs`` threads compile in parallel.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tuna.backends.cuda import occupancy as occ
from tuna.backends.cuda import solvers as sv
from tuna.backends.cuda.hostcheck import kernel_source
from tuna.errors import BackendError, TunaError
from tuna.problems.conv import ConvProblem

log = logging.getLogger(__name__)


class CompilerUnavailableError(BackendError):
    """Raised when neither NVRTC (``pip install 'tuna[cuda]'``) nor nvcc is there."""


class CompileTimeoutError(BackendError):
    """Raised when compiling runs past its deadline; ``done`` of ``total`` compiled."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"deadline passed after compiling {done} of {total} candidates")
        self.done, self.total = done, total


@dataclass(frozen=True)
class PtxasReport:
    """What ptxas said of one kernel (``-v``): bytes, except ``registers``."""

    registers: int
    smem: int
    stack: int
    spill_stores: int
    spill_loads: int

    @classmethod
    def parse(cls, text: str) -> PtxasReport | None:
        """The report in a compiler log (the last kernel's), or None when it has none."""
        used = re.findall(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?", text)
        frame = re.findall(
            r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", text
        )
        if not used:
            return None
        regs, smem = used[-1]
        stack, stores, loads = frame[-1] if frame else ("0", "0", "0")
        return cls(int(regs), int(smem or 0), int(stack), int(stores), int(loads))


_TOO_MUCH_SMEM = re.compile(r"too much shared data \((0x[0-9a-f]+) bytes, (0x[0-9a-f]+) max\)")


@dataclass(frozen=True)
class Built:
    """A compiler's answer: the cubin (None when it failed) and its log."""

    cubin: bytes | None
    log: str


@dataclass(frozen=True)
class Compiler:
    """NVRTC (in process) or nvcc, with its version (major, minor)."""

    kind: str
    version: tuple[int, int]
    nvcc: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kind} {self.version[0]}.{self.version[1]}"

    def compile(self, source: str, name: str, macros: Mapping[str, int], arch: str) -> Built:
        options = [f"--gpu-architecture={arch}", "--ptxas-options=-v", "--std=c++17"]
        options += [f"-D{k}={v}" for k, v in macros.items()]
        if self.kind == "nvrtc":
            return _nvrtc_compile(source, name, options)
        assert self.nvcc is not None
        return _nvcc_compile(self.nvcc, source, name, options)


def _nvrtc_compile(source: str, name: str, options: list[str]) -> Built:
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise TunaError(f"nvrtcCreateProgram: {err}")
    try:
        opts = [o.encode() for o in options]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, buf)
        text = buf.rstrip(b"\0 ").decode(errors="replace")
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return Built(None, text or str(result))
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return Built(cubin, text)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _nvcc_compile(nvcc: str, source: str, name: str, options: list[str]) -> Built:
    with tempfile.TemporaryDirectory(prefix="tuna-nvcc-") as tmp:
        src, out = Path(tmp) / name, Path(tmp) / "out.cubin"
        src.write_text(source)
        flags = [o.replace("--ptxas-options=", "-Xptxas=") for o in options]
        done = subprocess.run(
            [nvcc, "-cubin", *flags, "-o", str(out), str(src)], capture_output=True, text=True
        )
        text = done.stdout + done.stderr
        if done.returncode != 0 or not out.exists():
            return Built(None, text)
        return Built(out.read_bytes(), text)


#: Where nvcc is when it is not on PATH (CUDA's default install).
NVCC_FALLBACK = Path("/usr/local/cuda/bin/nvcc")


def find_compiler(prefer: str = "nvrtc") -> Compiler:
    """NVRTC when its wheels are installed (or ``prefer`` is ``nvcc`` and nvcc is absent),
    else nvcc from PATH or /usr/local/cuda; :class:`CompilerUnavailableError` if neither,
    saying why NVRTC did not load when its Python package is there but its library is not."""
    order = ("nvrtc", "nvcc") if prefer != "nvcc" else ("nvcc", "nvrtc")
    nvrtc_failed = ""
    for kind in order:
        if kind == "nvrtc":
            try:
                from cuda.bindings import nvrtc

                err, major, minor = nvrtc.nvrtcVersion()
                if err == nvrtc.nvrtcResult.NVRTC_SUCCESS:
                    return Compiler("nvrtc", (major, minor))
                nvrtc_failed = f"nvrtcVersion: {err}"
            except ImportError:
                continue
            except (RuntimeError, OSError) as e:  # cuda-bindings is there, libnvrtc is not
                nvrtc_failed = str(e).splitlines()[0] if str(e) else type(e).__name__
        else:
            nvcc = shutil.which("nvcc") or (str(NVCC_FALLBACK) if NVCC_FALLBACK.exists() else None)
            if nvcc is None:
                continue
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
            found = re.search(r"release (\d+)\.(\d+)", out)
            if found:
                return Compiler("nvcc", (int(found[1]), int(found[2])), nvcc)
    if nvrtc_failed:
        raise CompilerUnavailableError(
            f"no CUDA compiler: cuda-bindings is installed but NVRTC did not load "
            f"({nvrtc_failed}): install nvidia-cuda-nvrtc where cuda-bindings finds it "
            "(pip install 'tuna[cuda]' in the same environment) or put nvcc on PATH"
        )
    raise CompilerUnavailableError(
        "no CUDA compiler: install NVRTC (pip install 'tuna[cuda]') or put nvcc on PATH"
    )


@dataclass(frozen=True)
class Candidate:
    """One candidate compiled and judged: its cubin when valid, else why not."""

    params: str
    cubin: bytes | None
    report: PtxasReport | None
    threads: int
    blocks_per_sm: int
    reason: str | None = None
    seconds: float = 0.0

    @property
    def valid(self) -> bool:
        return self.reason is None and self.cubin is not None

    @property
    def kernel_name(self) -> str:
        """The code object's name in the kernel db: the solver's kernel and its bytes' hash."""
        digest = hashlib.sha256(self.cubin or b"").hexdigest()[:16]
        return f"conv-{digest}.cubin"

    def summary(self) -> dict[str, Any]:
        """What the payload keeps of it (JSON)."""
        return {
            "report": asdict(self.report) if self.report else None,
            "threads": self.threads,
            "blocks_per_sm": self.blocks_per_sm,
            "reason": self.reason,
        }


def judge(
    report: PtxasReport, threads: int, arch: occ.ArchLimits
) -> tuple[occ.Occupancy, str | None]:
    """Occupancy and the reason to reject a compiled kernel (None: it may run)."""
    o = occ.occupancy(arch, threads, report.registers, report.smem)
    if report.spill_stores or report.spill_loads:
        return o, (
            f"spills: {report.spill_stores} bytes of spill stores, {report.spill_loads} of "
            f"spill loads at {report.registers} registers"
        )
    if report.smem > arch.static_smem_per_block:
        return o, _smem_reason(report.smem, arch)
    if o.blocks_per_sm == 0:
        return o, (
            f"occupancy 0: {threads} threads at {report.registers} registers and {report.smem} "
            f"bytes of shared memory do not fit one {arch.arch} SM ({o.limited_by})"
        )
    return o, None


def _smem_reason(smem: int, arch: occ.ArchLimits) -> str:
    return (
        f"shared memory: {smem} bytes, over the {arch.static_smem_per_block} bytes of static "
        f"shared memory a block may have on {arch.arch}"
    )


def compile_candidate(
    compiler: Compiler, p: ConvProblem, solver: str, params: str, arch: str
) -> Candidate:
    """Compile and judge one candidate (raises ``ValueError`` for a malformed one)."""
    v = sv.parse_params(solver, params)
    limits = occ.limits(arch)
    threads = sv.threads(v)
    outside = sv.invalid_reason(p, solver, v)
    if outside is not None:  # a strategy proposes from the space; anything else is refused here
        return Candidate(
            params, None, None, threads, 0, f"not in {solver}'s space for this problem: {outside}"
        )
    smem = sv.static_smem_bytes(v)
    if smem > limits.static_smem_per_block:  # ptxas would say so after a second or more
        return Candidate(params, None, None, threads, 0, _smem_reason(smem, limits))
    macros = {**sv.problem_macros(p), **sv.candidate_macros(solver, v)}
    started = time.perf_counter()
    built = compiler.compile(kernel_source(), "conv.cu", macros, arch)
    seconds = time.perf_counter() - started
    report = PtxasReport.parse(built.log)
    if built.cubin is None:
        too_much = _TOO_MUCH_SMEM.search(built.log)
        if too_much:
            size, most = int(too_much[1], 16), int(too_much[2], 16)
            reason = (
                f"shared memory: {size} bytes, over the {most} bytes of static shared "
                f"memory a block may have on {arch}"
            )
        else:
            first = next((ln for ln in built.log.splitlines() if "error" in ln), built.log[:300])
            reason = f"compile error: {first.strip()}"
        return Candidate(params, None, report, threads, 0, reason, seconds)
    if report is None:
        return Candidate(params, None, None, threads, 0, "no ptxas report in the log", seconds)
    o, why = judge(report, threads, limits)
    cubin = None if why else built.cubin
    return Candidate(params, cubin, report, threads, o.blocks_per_sm, why, seconds)


def compile_candidates(
    compiler: Compiler,
    p: ConvProblem,
    solver: str,
    params: Sequence[str],
    arch: str,
    *,
    jobs: int = 1,
    deadline: float | None = None,
) -> list[Candidate]:
    """:func:`compile_candidate` for each of ``params``, ``jobs`` at a time, in their order;
    :class:`CompileTimeoutError` when ``deadline`` (time.monotonic) passes first."""
    occ.limits(arch)

    def one(text: str) -> Candidate:
        if deadline is not None and time.monotonic() > deadline:
            raise CompileTimeoutError(0, len(params))
        return compile_candidate(compiler, p, solver, text, arch)

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = [pool.submit(one, text) for text in params]
        out: list[Candidate] = []
        for f in futures:
            try:
                out.append(f.result())
            except CompileTimeoutError:
                for rest in futures:
                    rest.cancel()
                raise CompileTimeoutError(len(out), len(params)) from None
    return out


def compile_support(compiler: Compiler, p: ConvProblem, arch: str) -> Built:
    """The problem's reference, fill and compare kernels (``kernels/support.cu``)."""
    return compiler.compile(kernel_source("support.cu"), "support.cu", sv.problem_macros(p), arch)
