"""``noop``: a backend that compiles and evaluates nothing, deterministically. For tests.

It has a handful of solvers with simple applicability rules (one only for 1x1 filters,
one only for 3x3 stride-1 filters, one tunable), builds one tiny "kernel" per solver
(identical for every problem, so the kernel cache stores it once) and reports times
derived from a hash of the problem, so every run gives the same results. Evaluate names
the kernel it compiled as the solution's (``EvalOutcome.kernels``), as a real backend does,
and reports the one candidate it "timed" as a measurement.

``NoopTunable`` declares a small tuning space (a tile ``M,N``, 9 candidates), so a search
strategy runs on this backend as on a real one: a round's job "builds" the candidates it is
given (``JobWork.candidates``) and "times" each (a hash of problem and candidate), reusing
what was measured before, and only the final job (``choose``) writes perf and find rows.

Test knobs, as fields of an instance or as the session's environment (which reaches a
worker in another process): ``sleep_s`` / ``NOOP_SLEEP_S`` sleeps in every phase;
``fail`` / ``NOOP_FAIL`` reports every phase as failed with that reason; ``crash`` raises
instead; ``log_path`` / ``NOOP_LOG`` appends ``phase job attempt pid`` per call, to count
calls.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from tuna.backends.base import (
    Backend,
    CompileOutcome,
    EvalOutcome,
    FindResult,
    JobWork,
    KernelBinary,
    Measurement,
    PerfResult,
    SolverInfo,
    TuningSpace,
)
from tuna.problems.conv import ConvProblem

SOLVERS: tuple[SolverInfo, ...] = (
    SolverInfo("NoopDirect", tunable=False, numeric_id=1, algorithm="direct"),
    SolverInfo("NoopGemm1x1", tunable=False, numeric_id=2, algorithm="gemm"),
    SolverInfo("NoopWinograd3x3", tunable=False, numeric_id=3, algorithm="winograd"),
    SolverInfo("NoopTunable", tunable=True, numeric_id=4, algorithm="implicit_gemm"),
)
_BY_NAME = {s.name: s for s in SOLVERS}
_TILE = ("M", "N")
_TILES = tuple(f"{m},{n}" for m in (1, 2, 4) for n in (8, 16, 32))


def _kernel_name(solver: str) -> str:
    return f"noop_{solver}"


def _digest(*parts: object) -> int:
    text = "\0".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@dataclass
class NoopBackend(Backend):
    sleep_s: float = 0.0
    fail: str | None = None
    crash: bool = False
    log_path: Path | None = None

    name = "noop"
    declares_spaces = True

    def solvers(self) -> list[SolverInfo]:
        return list(SOLVERS)

    def applicability(self, problem: ConvProblem, solver: str) -> str | None:
        if solver not in _BY_NAME:
            return f"unknown noop solver {solver!r}"
        if solver == "NoopGemm1x1" and any(f != 1 for f in problem.fil_size):
            return "filter is not 1x1"
        if solver == "NoopWinograd3x3" and (
            any(f != 3 for f in problem.fil_size) or any(s != 1 for s in problem.stride)
        ):
            return "filter is not 3x3 with stride 1"
        if solver == "NoopTunable" and problem.group_count != 1:
            return "grouped convolution"
        return None

    def tuning_space(self, problem: ConvProblem, solver: str) -> TuningSpace:
        if solver not in _BY_NAME or not _BY_NAME[solver].tunable:
            return TuningSpace()
        if self.applicability(problem, solver) is not None:
            return TuningSpace()
        return TuningSpace(_TILE, _TILES, self.problem_features(problem, solver))

    def problem_features(self, problem: ConvProblem, solver: str) -> dict[str, float]:
        return {"c": float(problem.in_channels), "k": float(problem.out_channels)}

    def parse_params(self, solver: str, text: str) -> dict[str, int]:
        if solver not in _BY_NAME or not _BY_NAME[solver].tunable:
            if text:
                raise ValueError(f"{solver} takes no parameters, not {text!r}")
            return {}
        values = text.split(",")
        if len(values) != len(_TILE) or not all(v.isdigit() for v in values):
            raise ValueError(f"{solver} parameters {text!r} are not M,N")
        return dict(zip(_TILE, (int(v) for v in values), strict=True))

    def compile(self, work: JobWork) -> CompileOutcome:
        self._enter(work)
        failure = self._failure(work)
        if failure:
            return CompileOutcome.failed(failure)
        reason = self.applicability(work.problem, work.solver)
        if reason is not None:
            return CompileOutcome.inapplicable(reason)
        space = self.tuning_space(work.problem, work.solver).candidates
        best = space[_digest(work.problem, work.solver, "tile") % len(space)] if space else None
        kernel = KernelBinary(
            name=_kernel_name(work.solver),
            args=f"-DSOLVER={work.solver}",
            binary=f"noop kernel {work.solver}".encode(),
        )
        compiled: dict[str, object] = {
            "solver": work.solver,
            "params": best,
            "candidates": len(space),
        }
        if work.candidates is not None:  # a search strategy's round: exactly these
            try:
                for params in work.candidates:
                    self.parse_params(work.solver, params)
            except ValueError as e:
                return CompileOutcome.failed(f"bad candidate: {e}")
            compiled["measure"] = list(work.candidates)
        return CompileOutcome(kernels=(kernel,), payload=json.dumps(compiled))

    def evaluate(self, work: JobWork) -> EvalOutcome:
        self._enter(work)
        failure = self._failure(work)
        if failure:
            return EvalOutcome.failed(failure)
        if not work.kernels or work.payload is None:
            return EvalOutcome.failed("nothing compiled for this job")
        compiled = json.loads(work.payload)
        if "measure" in compiled:
            return self._measure(work, compiled["measure"])
        time_ms = 0.01 + (_digest(work.problem, work.solver, "time") % 100_000) / 1000
        params = compiled.get("params")
        find = FindResult(
            time_ms=time_ms,
            workspace=0 if work.solver != "NoopWinograd3x3" else 4096,
            algorithm=_BY_NAME[work.solver].algorithm or "unknown",
            params=params,
        )
        own = tuple(k for k in work.kernels if k.name == _kernel_name(work.solver))
        return EvalOutcome(
            find=find,
            perf=PerfResult(params) if params else None,
            kernels=own,
            measurements=(Measurement(params or "", time_ms, True),),
        )

    def _measure(self, work: JobWork, candidates: list[str]) -> EvalOutcome:
        """A strategy's candidates timed (those measured before reused), the fastest chosen
        when the job chooses."""
        before = {m.params: m for m in work.measured if m.params in candidates}
        fresh = tuple(
            Measurement(
                p,
                0.01 + (_digest(work.problem, work.solver, "time", p) % 100_000) / 1000,
                True,
                strategy=work.strategy,
                budget=work.budget,
            )
            for p in candidates
            if p not in before
        )
        if not work.choose:
            return EvalOutcome(measurements=fresh)
        timed = [m for m in (*before.values(), *fresh) if m.valid and m.time_ms is not None]
        if not timed:
            return EvalOutcome(ok=False, reason="no candidate was valid", measurements=fresh)
        best = min(timed, key=lambda m: (m.time_ms or 0.0, m.params))
        algorithm = _BY_NAME[work.solver].algorithm or "unknown"
        find = FindResult(best.time_ms or 0.0, 0, algorithm, best.params)
        own = tuple(k for k in work.kernels if k.name == _kernel_name(work.solver))
        return EvalOutcome(perf=PerfResult(best.params), find=find, kernels=own, measurements=fresh)

    def _enter(self, work: JobWork) -> None:
        log_path = self.log_path or work.session.environment.get("NOOP_LOG")
        if log_path:
            line = f"{work.phase} {work.job_id} {work.attempt} {os.getpid()}\n".encode()
            fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        sleep = self.sleep_s or float(work.session.environment.get("NOOP_SLEEP_S", 0) or 0)
        if sleep > 0:
            time.sleep(sleep)
        if self.crash:
            raise RuntimeError(f"noop backend crashed on job {work.job_id}")

    def _failure(self, work: JobWork) -> str | None:
        return self.fail or work.session.environment.get("NOOP_FAIL") or None
