"""``cuda``: CUDA convolution kernels, compiled to cubins on any host, timed on an NVIDIA GPU.

Five tunable solvers (:mod:`~tuna.backends.cuda.solvers`), NCHW, FP32: forward and backward
data, an implicit GEMM and a batched GEMM for 1x1 filters each; backward weights, an implicit
GEMM; all ``kernels/conv.cu`` with the problem's direction and the candidate's tile as
compile-time constants. A session's ``arch`` is the GPU architecture (``sm_90`` for
H100/H200) and its ``num_cu`` the GPU's SM count.

* **compile** (no GPU, no driver): NVRTC (or nvcc) builds one cubin per candidate for the
  session's arch, plus the problem's reference kernel (``kernels/support.cu``); ptxas's
  report is kept with each candidate in the payload, and candidates that spill, exceed shared
  memory or cannot be resident are recorded invalid there, with the reason
  (:mod:`~tuna.backends.cuda.compile`). Cubins are the kernel db's code objects.
* **evaluate** (the GPU, owned by the evaluation): in a child process forked before any CUDA
  call, every compiled candidate is verified against the reference on the same GPU and only
  then timed, median of repeated runs after a warm-up (:mod:`~tuna.backends.cuda.evaluate`).
  Candidates rejected at compile time are recorded as invalid measurements without touching
  the GPU. The fastest right one is the perf-db and find-db row, its cubin the solution's
  kernel. Cubins for another arch, or from a compiler newer than the driver accepts, are
  refused with the reason; without a driver the phase fails in one line saying so.

Steps as in cpuconv: **perf** compiles the default and a seeded sample of the space (or a
search strategy's round), **find** and **kernel** the default only.

Knobs, from the session's environment:

===========================  ===================================================  ==========
environment                  meaning                                              default
===========================  ===================================================  ==========
``CUDA_MAX_CANDIDATES``      candidates a perf job compiles                       64
``CUDA_COMPILE_JOBS``        candidates compiled at once (threads)                CPU count
``CUDA_COMPILER``            ``nvrtc`` or ``nvcc`` (the other when it is absent)  nvrtc
``CUDA_TIME_BUDGET_S``       per job and phase                                    900
``CUDA_REPEATS``             timed runs per candidate (the median counts)         20
``CUDA_WARMUP_MS``           warm-up per candidate before timing                  25
``CUDA_TOLERANCE``           largest error relative to the products' magnitude    1e-4
``CUDA_CANDIDATE_TIMEOUT_S`` one candidate's hard limit on the GPU                30
===========================  ===================================================  ==========

``CUDA_FAKE_GPU`` (tests only) evaluates on :class:`~tuna.backends.cuda.fake.FakeGpu`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import random
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuna.backends.base import (
    Backend,
    CompileOutcome,
    EvalOutcome,
    FindResult,
    JobWork,
    KernelBinary,
    Measurement,
    Owns,
    PerfResult,
    SessionInfo,
    SolverInfo,
    TuningSpace,
)
from tuna.backends.cuda import compile as cc
from tuna.backends.cuda import evaluate as ev
from tuna.backends.cuda import occupancy as occ
from tuna.backends.cuda import solvers as sv
from tuna.backends.cuda.device import GpuFacts
from tuna.backends.cuda.features import candidate_features, problem_features
from tuna.backends.finalists import finalists, retime, say_if_unstable
from tuna.errors import TunaError
from tuna.problems.conv import ConvProblem

log = logging.getLogger(__name__)

#: 2: one kernel source for every direction (kernels/conv.cu, entry ``conv``); version 1's
#: cubins have the entry ``conv_fwd`` and no direction.
_PAYLOAD_VERSION = 2


@dataclass(frozen=True)
class Knobs:
    max_candidates: int
    compile_jobs: int
    compiler: str
    time_budget_s: float
    repeats: int
    warmup_ms: float
    tolerance: float
    candidate_timeout_s: float
    fake_gpu: bool

    @classmethod
    def of(cls, env: Mapping[str, Any]) -> Knobs:
        def pick(key: str, default: Any) -> Any:
            value = env.get(key)
            if value in (None, ""):
                return default
            try:
                return type(default)(value)
            except ValueError as e:
                raise TunaError(
                    f"{key}={value!r} in the session environment: expected {type(default).__name__}"
                ) from e

        return cls(
            max_candidates=pick("CUDA_MAX_CANDIDATES", 64),
            compile_jobs=max(1, pick("CUDA_COMPILE_JOBS", os.cpu_count() or 1)),
            compiler=pick("CUDA_COMPILER", "nvrtc"),
            time_budget_s=pick("CUDA_TIME_BUDGET_S", 900.0),
            repeats=max(1, pick("CUDA_REPEATS", 20)),
            warmup_ms=pick("CUDA_WARMUP_MS", 25.0),
            tolerance=pick("CUDA_TOLERANCE", 1e-4),
            candidate_timeout_s=pick("CUDA_CANDIDATE_TIMEOUT_S", 30.0),
            fake_gpu=str(env.get("CUDA_FAKE_GPU", "")).lower() in ("1", "true", "yes"),
        )


def gpu_factory(
    problem: ConvProblem, support: bytes, env: Mapping[str, Any], fake: bool
) -> ev.DeviceFactory:
    """What makes the evaluation's device, in its child process: the GPU, or the fake."""
    if fake:
        from tuna.backends.cuda.fake import FakeGpu

        return lambda: FakeGpu(problem, support, env)
    from tuna.backends.cuda.device import Gpu

    return lambda: Gpu(problem, support)


class CudaBackend(Backend):
    name = "cuda"
    # One evaluation per GPU: two timings on one GPU disturb each other.
    evaluation_owns = Owns.DEVICE
    declares_spaces = True

    def __init__(self) -> None:
        self._gpu: GpuFacts | str | None = None

    def solvers(self) -> list[SolverInfo]:
        return list(sv.SOLVERS)

    def applicability(self, problem: ConvProblem, solver: str) -> str | None:
        return sv.applicability(problem, solver)

    def tuning_space(self, problem: ConvProblem, solver: str) -> TuningSpace:
        candidates = sv.tuning_space(problem, solver)
        if not candidates:
            return TuningSpace()
        return TuningSpace(sv.NAMES, tuple(candidates), self.problem_features(problem, solver))

    # The contract's features and parameter parsing are this backend's module functions.
    problem_features = staticmethod(problem_features)
    candidate_features = staticmethod(candidate_features)
    parse_params = staticmethod(sv.parse_params)

    def default_params(self, problem: ConvProblem, solver: str) -> str:
        return sv.default_params(problem, solver)

    def candidates(self, problem: ConvProblem, solver: str, step: str, knobs: Knobs) -> list[str]:
        """The default first, then (perf step) a sample of the space fixed by the problem."""
        default = sv.default_params(problem, solver)
        chosen = [default]
        if step == "perf":
            rest = [c for c in sv.space_params(problem, solver) if c != default]
            keep = max(0, knobs.max_candidates - 1)
            if len(rest) > keep:
                seed = hashlib.sha256(f"{problem!r} {solver}".encode()).digest()
                picked = set(random.Random(seed).sample(range(len(rest)), keep))
                rest = [c for i, c in enumerate(rest) if i in picked]
            chosen += rest
        return chosen

    # -- compile ------------------------------------------------------------------------------

    def compile(self, work: JobWork) -> CompileOutcome:
        problem, solver, arch = work.problem, work.solver, work.session.arch
        reason = sv.applicability(problem, solver)
        if reason is not None:
            return CompileOutcome.inapplicable(reason)
        try:
            occ.limits(arch)
        except ValueError as e:
            return CompileOutcome.failed(f"session arch: {e}")
        knobs = Knobs.of(work.session.environment)
        try:
            if work.candidates is not None:
                params = list(work.candidates)
            else:
                params = self.candidates(problem, solver, work.step, knobs)
            for p in params:
                sv.parse_params(solver, p)
            compiler = cc.find_compiler(knobs.compiler)
        except ValueError as e:
            return CompileOutcome.failed(f"bad candidate: {e}")
        except cc.CompilerUnavailableError as e:
            return CompileOutcome.failed(str(e))
        started = time.monotonic()
        support = cc.compile_support(compiler, problem, arch)
        if support.cubin is None:
            return CompileOutcome.failed(
                f"the reference kernel did not compile: {support.log[-500:]}"
            )
        try:
            built = cc.compile_candidates(
                compiler, problem, solver, params, arch,
                jobs=knobs.compile_jobs, deadline=started + knobs.time_budget_s,
            )  # fmt: skip
        except cc.CompileTimeoutError as e:
            return CompileOutcome.failed(
                f"time budget of {knobs.time_budget_s:g} s exceeded after compiling "
                f"{e.done} of {e.total} candidates"
            )
        base = shlex.join(f"-D{k}={v}" for k, v in sv.problem_macros(problem).items())
        kernels = [
            KernelBinary(
                f"support-{hashlib.sha256(support.cubin).hexdigest()[:16]}.cubin",
                f"--gpu-architecture={arch} {base}",
                support.cubin,
            )
        ]
        table: dict[str, dict[str, Any]] = {}
        for c in built:
            entry = c.summary()
            if c.valid:
                assert c.cubin is not None
                entry["kernel"] = c.kernel_name
                macros = sv.candidate_macros(solver, sv.parse_params(solver, c.params))
                args = " ".join(f"-D{k}={v}" for k, v in macros.items())
                kernels.append(
                    KernelBinary(c.kernel_name, f"--gpu-architecture={arch} {base} {args}", c.cubin)
                )
            table[c.params] = entry
        invalid = [c for c in built if not c.valid]
        log.info(
            "job %d: compiled %d candidate(s) of %s for %s with %s in %.1f s, %d invalid",
            work.job_id, len(built), solver, arch, compiler.label,
            time.monotonic() - started, len(invalid),
        )  # fmt: skip
        payload = {
            "version": _PAYLOAD_VERSION,
            "solver": solver,
            "step": work.step,
            "arch": arch,
            "compiler": compiler.kind,
            "compiler_version": list(compiler.version),
            "support": kernels[0].name,
            "default": params[0],
            "space": len(sv.space_params(problem, solver)),
            "candidates": table,
        }
        return CompileOutcome(kernels=tuple(_unique(kernels)), payload=json.dumps(payload))

    # -- evaluate -----------------------------------------------------------------------------

    def evaluate(self, work: JobWork) -> EvalOutcome:
        problem, solver = work.problem, work.solver
        reason = sv.applicability(problem, solver)
        if reason is not None:
            return EvalOutcome.inapplicable(reason)
        env = work.session.environment
        knobs = Knobs.of(env)
        try:
            payload = json.loads(work.payload or "")
            table: dict[str, dict[str, Any]] = payload["candidates"]
            support_name = payload["support"]
            arch = payload["arch"]
            compiler = (str(payload["compiler"]), tuple(payload["compiler_version"]))
        except (ValueError, KeyError, TypeError):
            return EvalOutcome.failed("no usable compile payload: run the compile phase again")
        if payload.get("version") != _PAYLOAD_VERSION:
            return EvalOutcome.failed(
                f"compiled by another version of the cuda backend (payload version "
                f"{payload.get('version')}, this one reads {_PAYLOAD_VERSION}): run the compile "
                "phase again"
            )
        if payload.get("solver") != solver:
            return EvalOutcome.failed(f"payload is for {payload.get('solver')}, not {solver}")
        by_name = {k.name: k for k in work.kernels}
        wanted = {support_name} | {e["kernel"] for e in table.values() if e.get("kernel")}
        absent = sorted(wanted - by_name.keys())
        if absent:
            return EvalOutcome.failed(f"compiled kernels missing: {', '.join(absent)}")
        strategy = work.strategy or _strategy(work.step, len(table), payload.get("space", 0))
        budget = work.budget if work.strategy else len(table)
        before = {m.params: m for m in work.measured if m.params in table}
        rejected = [
            Measurement(
                p, None, False, f"rejected at compile time: {e['reason']}", strategy, budget
            )
            for p, e in table.items()
            if not e.get("kernel") and p not in before
        ]
        items = [
            ev.Item(p, by_name[e["kernel"]].binary)
            for p, e in table.items()
            if e.get("kernel") and p not in before
        ]
        how = ev.How(
            solver=solver,
            arch=arch,
            compiler=f"{compiler[0]} {compiler[1][0]}.{compiler[1][1]}",
            compiler_version=(int(compiler[1][0]), int(compiler[1][1])),
            repeats=knobs.repeats,
            warmup_ms=knobs.warmup_ms,
            tolerance=knobs.tolerance,
        )
        fresh: list[ev.Measured] = []
        work.save_progress(rejected)

        def checkpoint(m: ev.Measured) -> None:
            fresh.append(m)
            work.save_progress([_measurement(m, strategy, budget)])

        factory = gpu_factory(problem, by_name[support_name].binary, env, knobs.fake_gpu)
        try:
            if items:
                ev.measure_isolated(
                    factory, items, how, limit_s=knobs.candidate_timeout_s, on_measured=checkpoint
                )
        except ev.EvaluationRefusedError as e:
            return EvalOutcome(
                ok=False,
                reason=str(e),
                measurements=tuple(rejected)
                + tuple(_measurement(m, strategy, budget) for m in fresh),
            )
        if not work.choose:
            return EvalOutcome(
                measurements=tuple(rejected)
                + tuple(_measurement(m, strategy, budget) for m in fresh)
            )
        measured = [_reused(m) for m in before.values()] + fresh
        if work.step != "kernel":  # a winner is stored: its finalists are timed again

            def turn(order: list[str]) -> tuple[list[ev.Measured], bool]:
                items = [ev.Item(p, by_name[table[p]["kernel"]].binary) for p in order]
                try:
                    return ev.measure_isolated(
                        factory, items, how, limit_s=knobs.candidate_timeout_s
                    ), True
                except ev.EvaluationRefusedError:
                    return [], False

            names = finalists(
                [m for m in measured if m.ok], lambda p: bool(table.get(p, {}).get("kernel"))
            )
            retimed = retime(names, turn)
            say_if_unstable(work.job_id, measured, retimed)
            fresh += retimed
            measured += retimed
        measurements = tuple(rejected) + tuple(_measurement(m, strategy, budget) for m in fresh)
        passed = [m for m in measured if m.ok]
        if not passed:
            why = "; ".join(f"{m.params}: {m.reason}" for m in measured[:3]) or "none compiled"
            return EvalOutcome(
                ok=False,
                reason=f"no candidate of {len(table)} passed: {why}",
                measurements=measurements,
            )
        if work.step == "kernel":
            return EvalOutcome(measurements=measurements)
        best = min(passed, key=lambda m: (m.time_ms, m.params))
        assert best.time_ms is not None
        find = FindResult(
            time_ms=best.time_ms,
            workspace=0,
            algorithm=sv.algorithm_name(solver),
            params=best.params,
        )
        perf = PerfResult(best.params) if work.step == "perf" else None
        winner = table[best.params].get("kernel")
        kernels = (by_name[winner],) if winner in by_name else ()
        return dataclasses.replace(
            EvalOutcome(perf=perf, find=find, kernels=kernels), measurements=measurements
        )

    # -- where evaluations run ------------------------------------------------------------------

    def gpu(self, session: SessionInfo) -> GpuFacts | str:
        """The facts of the GPU this process's evaluations run on (read once, in a child
        process: this one never opens CUDA), or why there is none; the fake's with
        ``CUDA_FAKE_GPU``."""
        if self._gpu is None:
            if Knobs.of(session.environment).fake_gpu:
                from tuna.backends.cuda.fake import fake_facts

                self._gpu = fake_facts(session.environment)
            else:
                from tuna.backends.cuda import device

                self._gpu = ev.probe(device.facts)
        return self._gpu

    def evaluation_blocked(self, session: SessionInfo) -> str | None:
        facts = self.gpu(session)
        if isinstance(facts, str):
            return facts
        if facts.arch != session.arch:
            return (
                f"its GPU ({facts.name}) is {facts.arch}, the session tunes {session.arch}: "
                "evaluate on a GPU of the session's arch"
            )
        if facts.sm_count != session.num_cu:
            return (
                f"its GPU ({facts.name}) has {facts.sm_count} SMs, the session tunes "
                f"{session.num_cu} (its --num-cu): evaluate on a GPU of the session's size"
            )
        return None

    def platform_facts(self, session: SessionInfo) -> dict[str, Any]:
        facts: dict[str, Any] = {"gpu": ev.describe(self.gpu(session))}
        try:
            facts["compiler"] = cc.find_compiler(Knobs.of(session.environment).compiler).label
        except cc.CompilerUnavailableError as e:
            facts["compiler"] = str(e)
        return facts

    def container_args(self, phase: str, gpu: int | None) -> list[str]:
        if phase == "eval" and gpu is not None:
            return ["--gpus", f"device={gpu}"]
        return []

    def worker_environment(
        self, session: SessionInfo, phase: str, gpu: int | None, scratch: str
    ) -> dict[str, str]:
        if phase == "eval" and gpu is not None:
            return {"CUDA_VISIBLE_DEVICES": str(gpu)}
        return {}


def _unique(kernels: list[KernelBinary]) -> list[KernelBinary]:
    seen: set[str] = set()
    out = []
    for k in kernels:
        if k.name not in seen:
            seen.add(k.name)
            out.append(k)
    return out


def _strategy(step: str, candidates: int, space: int) -> str:
    if step != "perf":
        return "default"
    return "exhaustive" if candidates >= space else "random"


def _measurement(m: ev.Measured, strategy: str, budget: int | None) -> Measurement:
    if m.ok:
        return Measurement(m.params, m.time_ms, True, None, strategy, budget)
    reason = m.reason or "failed"
    if m.error is not None and m.error == m.error:
        reason = f"{reason} (max error {m.error:g})"
    return Measurement(m.params, None, False, reason, strategy, budget)


def _reused(m: Measurement) -> ev.Measured:
    if m.valid and m.time_ms is not None:
        return ev.Measured(m.params, m.time_ms)
    return ev.Measured(m.params, None, None, m.reason or "failed before")
