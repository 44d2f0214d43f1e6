"""FakeGpu: a stand-in for an NVIDIA GPU in the tests — a fake, not a GPU.

No GPU exists on the machines the tests run on, so the backend's evaluate phase is tested
through this device: it "loads" the compiled cubins (checks they are ELF code objects built
for its architecture's compile), "verifies" them (every candidate is right unless the test
names it wrong) and "times" them with a deterministic cost model of the tile (bigger
register tiles, fuller edge tiles and more blocks per SM are faster). The kernels' real
correctness is checked elsewhere, by running their source on the host
(:mod:`~tuna.backends.cuda.hostcheck`).

Settings (the session environment, test only):

=======================  =============================================================
``CUDA_FAKE_GPU``        1: evaluate on this fake instead of the driver
``CUDA_FAKE_ARCH``       the fake's architecture (default ``sm_90``)
``CUDA_FAKE_DRIVER``     the newest CUDA its "driver" accepts (default ``13.0``)
``CUDA_FAKE_SMS``        its SM count (default 132)
``CUDA_FAKE_WRONG``      ``;``-separated candidates whose output is wrong
``CUDA_FAKE_CRASH``      ``;``-separated candidates that kill the process (SIGSEGV)
``CUDA_FAKE_FAULT``      ``;``-separated candidates that fault (an illegal address)
=======================  =============================================================
"""

from __future__ import annotations

import hashlib
import math
import os
import signal
from collections.abc import Mapping
from typing import Any

from tuna.backends.cuda import solvers as sv
from tuna.backends.cuda.device import DeviceError, GpuFacts, Timing
from tuna.problems.conv import ConvProblem

#: What the fake's "GPU" computes at best: H100 SXM's FP32 peak, 66.9 TFLOP/s.
PEAK_FLOPS = 66.9e12


def _listed(env: Mapping[str, Any], key: str) -> set[str]:
    return {x for x in str(env.get(key, "")).split(";") if x}


def fake_facts(env: Mapping[str, Any]) -> GpuFacts:
    major, _, minor = str(env.get("CUDA_FAKE_DRIVER") or "13.0").partition(".")
    return GpuFacts(
        name="FakeGpu (a test double, not a GPU)",
        arch=str(env.get("CUDA_FAKE_ARCH") or "sm_90"),
        sm_count=int(env.get("CUDA_FAKE_SMS") or 132),
        memory_bytes=80 * 2**30,
        driver_cuda=(int(major), int(minor or 0)),
    )


class FakeGpu:
    """The fake device for one problem (see the module docstring)."""

    def __init__(self, problem: ConvProblem, support_cubin: bytes, env: Mapping[str, Any]):
        if not support_cubin.startswith(b"\x7fELF"):
            raise DeviceError("load the support cubin", "CUDA_ERROR_INVALID_IMAGE")
        self.facts = fake_facts(env)
        self.problem = problem
        self.wrong = _listed(env, "CUDA_FAKE_WRONG")
        self.crash = _listed(env, "CUDA_FAKE_CRASH")
        self.fault = _listed(env, "CUDA_FAKE_FAULT")

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
        if not cubin.startswith(b"\x7fELF"):
            raise DeviceError("load the cubin", "CUDA_ERROR_INVALID_IMAGE")
        if params in self.crash:
            os.kill(os.getpid(), signal.SIGSEGV)
        if params in self.fault:
            raise DeviceError("the candidate", "CUDA_ERROR_ILLEGAL_ADDRESS")
        if params in self.wrong:
            return Timing(0.5)
        ms = self.model_ms(solver, params)
        jitter = [1 + 0.01 * ((i * 7) % 5) for i in range(repeats)]
        return Timing(1e-7, tuple(ms * j for j in jitter))

    def model_ms(self, solver: str, params: str) -> float:
        """The fake's time for a candidate: deterministic, shaped like a GPU's."""
        v = sv.parse_params(solver, params)
        p = self.problem
        m, n, k, batches = sv.gemm_shape(p, solver)
        gx, gy, gz = sv.grid(p, solver, v)
        used = m * n * batches / (gx * gy * gz * v["BM"] * v["BN"])
        reuse = min(1.0, (v["TM"] * v["TN"]) / 32) ** 0.5
        slots = gx * gy * gz / (self.facts.sm_count * 2)
        waves = math.ceil(slots) / slots
        depth = min(1.0, v["BK"] / 16) ** 0.3 * (1.1 if v["DB"] else 1.0)
        depth *= 1.05 if v["PAD"] else 1.0
        vector = 1.0 + 0.05 * (v["VW"] - 1)
        efficiency = max(0.01, 0.7 * used * reuse * depth * vector / waves)
        noise = 1 + int(hashlib.sha256(params.encode()).hexdigest()[:4], 16) / 65535 * 0.05
        return sv.flops(p) / (PEAK_FLOPS * efficiency) * 1e3 * noise
