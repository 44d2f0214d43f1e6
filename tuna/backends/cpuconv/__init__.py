"""``cpuconv``: real convolution kernels in C, compiled with the system C compiler and timed
on the CPU. The backend the quick start and the end-to-end tests tune.

Five solvers (``solvers.py``): CpuDirectNaive (the reference, not tunable), CpuDirectTiled,
CpuIm2colGemm, CpuGemm1x1 and CpuWinograd2x3, for 2D FP32 NCHW convolutions in the three
directions, with stride, padding, dilation and groups.

What the steps mean:

* **perf**: compile every candidate of the solver's space, or a deterministic sample of
  ``max_candidates`` that always holds the default; evaluate verifies and times them all and
  reports the fastest correct one as the perf-db row and as the find-db row, naming the
  shared object it is built into as the solution's kernel (the one the kernel db takes).
* **find**: compile and evaluate the default parameters (the backend cannot see the perf db);
  the find-db row and its kernel.
* **kernel**: compile the default parameters into a kernel of its own (the kernel-cache
  rows); evaluate only verifies it and writes no row.

A non-tunable solver has one candidate and never a perf-db row.

Knobs, as fields of an instance or as the session's environment (which reaches workers in
other processes and other hosts), field first:

=======================  ===============================  ================================
field                    environment                      default
=======================  ===============================  ================================
``max_candidates``       ``CPUCONV_MAX_CANDIDATES``       64
``jobs``                 ``CPUCONV_JOBS``                 1 (parallel compiler processes)
``per_unit``             ``CPUCONV_PER_UNIT``             8 (candidates per shared object)
``time_budget_s``        ``CPUCONV_TIME_BUDGET_S``        60 (per job and phase)
``march``                ``CPUCONV_MARCH``                native
``opt``                  ``CPUCONV_OPT``                  3 (``-O3``)
``cc``                   ``CPUCONV_CC``                   cc
``repeats``              ``CPUCONV_REPEATS``              5 (timed runs per candidate)
``candidate_timeout_s``  ``CPUCONV_CANDIDATE_TIMEOUT_S``  30 (one candidate's hard limit)
``extra_candidates``     ``CPUCONV_EXTRA_CANDIDATES``     none; test only, ``;``-separated
=======================  ===============================  ================================

Candidates run in a child process (:mod:`~tuna.backends.cpuconv.isolate`): one that crashes
or runs past ``candidate_timeout_s`` is recorded as such and costs only itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path
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
    SolverInfo,
    TuningSpace,
)
from tuna.backends.cpuconv import build, isolate, run
from tuna.backends.cpuconv import solvers as sv
from tuna.backends.cpuconv.features import candidate_features, problem_features
from tuna.backends.finalists import finalists, retime, say_if_unstable
from tuna.problems.conv import ConvProblem

log = logging.getLogger(__name__)

_PAYLOAD_VERSION = 1
# CPU features a -march=native binary may use: evaluating it where one is missing would
# crash the worker with SIGILL, so the evaluate phase refuses instead.
_ISA_FLAGS = frozenset(
    ("sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "bmi1", "bmi2")
    + ("avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512cd", "avx512_vnni", "avx512_bf16")
    + ("amx_tile", "asimd", "sve", "sve2")
)


@dataclass(frozen=True)
class Knobs:
    max_candidates: int
    jobs: int
    per_unit: int
    time_budget_s: float
    march: str
    opt: str
    cc: str
    repeats: int
    extra_candidates: tuple[str, ...]
    candidate_timeout_s: float = isolate.DEFAULT_LIMIT_S


def cpu_isa() -> list[str]:
    """The features of ``_ISA_FLAGS`` this machine has, from /proc/cpuinfo (empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            flags.update(value.split())
    return sorted(flags & _ISA_FLAGS)


@dataclass
class CpuConvBackend(Backend):
    max_candidates: int | None = None
    jobs: int | None = None
    per_unit: int | None = None
    time_budget_s: float | None = None
    march: str | None = None
    opt: str | None = None
    cc: str | None = None
    repeats: int | None = None
    extra_candidates: tuple[str, ...] | None = None
    candidate_timeout_s: float | None = None

    name = "cpuconv"
    # Timing uses every core (candidates run threads): two timings at once on one machine
    # slow each other down by up to 3x and pick wrong winners.
    evaluation_owns = Owns.MACHINE
    declares_spaces = True

    def solvers(self) -> list[SolverInfo]:
        return list(sv.SOLVERS)

    def applicability(self, problem: ConvProblem, solver: str) -> str | None:
        return sv.applicability(problem, solver)

    def tuning_space(self, problem: ConvProblem, solver: str) -> TuningSpace:
        spec = sv.SPECS.get(solver)
        candidates = sv.tuning_space(problem, solver)
        if spec is None or not candidates:
            return TuningSpace()
        return TuningSpace(spec.names, tuple(candidates), self.problem_features(problem, solver))

    # The contract's features and parameter parsing are this backend's module functions.
    problem_features = staticmethod(problem_features)
    candidate_features = staticmethod(candidate_features)
    parse_params = staticmethod(sv.parse_params)
    candidate_stats = staticmethod(sv.candidate_stats)

    def default_params(self, problem: ConvProblem, solver: str) -> str:
        """The untuned parameters of ``solver`` on ``problem`` (``""``: it has none)."""
        return sv.default_params(problem, solver)

    def knobs(self, environment: dict[str, Any] | None = None) -> Knobs:
        """The settings in force: a field's value, else the session environment's, else the
        default; raises ``ValueError`` for an environment value of the wrong type."""
        env = environment or {}

        def pick(field: Any, key: str, default: Any) -> Any:
            if field is not None:
                return field
            value = env.get(key)
            if value in (None, ""):
                return default
            try:
                return type(default)(value)
            except ValueError as e:
                raise ValueError(f"{key}={value!r}: expected {type(default).__name__}") from e

        extra = self.extra_candidates
        if extra is None:
            extra = tuple(e for e in str(env.get("CPUCONV_EXTRA_CANDIDATES", "")).split(";") if e)
        return Knobs(
            max_candidates=pick(self.max_candidates, "CPUCONV_MAX_CANDIDATES", 64),
            jobs=pick(self.jobs, "CPUCONV_JOBS", 1),
            per_unit=pick(self.per_unit, "CPUCONV_PER_UNIT", 8),
            time_budget_s=pick(self.time_budget_s, "CPUCONV_TIME_BUDGET_S", 60.0),
            march=pick(self.march, "CPUCONV_MARCH", "native"),
            opt=pick(self.opt, "CPUCONV_OPT", "3"),
            cc=pick(self.cc, "CPUCONV_CC", "cc"),
            repeats=pick(self.repeats, "CPUCONV_REPEATS", 5),
            extra_candidates=tuple(extra),
            candidate_timeout_s=pick(
                self.candidate_timeout_s, "CPUCONV_CANDIDATE_TIMEOUT_S", isolate.DEFAULT_LIMIT_S
            ),
        )

    def candidates(self, problem: ConvProblem, solver: str, step: str, knobs: Knobs) -> list[str]:
        """The parameters a job compiles: the default first, then (perf step of a tunable
        solver) a sample of the space fixed by the problem and solver, then the extras."""
        default = sv.default_params(problem, solver)
        chosen = [default]
        if step == "perf" and solver in sv.SPECS:
            rest = [c for c in sv.space_params(problem, solver) if c != default]
            keep = max(0, knobs.max_candidates - 1)
            if len(rest) > keep:
                seed = hashlib.sha256(f"{problem!r} {solver}".encode()).digest()
                picked = set(random.Random(seed).sample(range(len(rest)), keep))
                rest = [c for i, c in enumerate(rest) if i in picked]
            chosen += rest
        chosen += [c for c in knobs.extra_candidates if c not in chosen]
        return chosen

    def compile(self, work: JobWork) -> CompileOutcome:
        problem, solver = work.problem, work.solver
        reason = sv.applicability(problem, solver)
        if reason is not None:
            return CompileOutcome.inapplicable(reason)
        knobs = self.knobs(dict(work.session.environment))
        too_large = sv.too_large_reason(problem, knobs.time_budget_s)
        if too_large:
            return CompileOutcome.failed(too_large)
        started = time.monotonic()
        try:
            if work.candidates is not None:  # a search strategy's round
                params = list(work.candidates)
            else:
                params = self.candidates(problem, solver, work.step, knobs)
            for p in params:
                sv.parse_params(solver, p)
        except ValueError as e:
            return CompileOutcome.failed(f"bad candidate: {e}")
        units = build.plan_units(
            problem, solver, params, march=knobs.march, opt=knobs.opt, per_unit=knobs.per_unit
        )
        try:
            kernels = build.build_units(
                units, cc=knobs.cc, jobs=knobs.jobs, deadline=started + knobs.time_budget_s
            )
        except build.BudgetExceededError as e:
            return CompileOutcome.failed(
                f"time budget of {knobs.time_budget_s:g} s exceeded after compiling "
                f"{e.done} of {e.total} candidates"
            )
        except build.BuildError as e:
            return CompileOutcome.failed(str(e))
        log.info(
            "job %d: built %d candidate(s) of %s in %d unit(s), %.1f s",
            work.job_id, len(params), solver, len(units), time.monotonic() - started,
        )  # fmt: skip
        payload = {
            "version": _PAYLOAD_VERSION,
            "solver": solver,
            "step": work.step,
            "march": knobs.march,
            "isa": cpu_isa(),
            "default": params[0],
            "space": len(sv.space_params(problem, solver)),
            "candidates": {p: [u.name, sym] for u in units for p, sym in u.symbols},
        }
        return CompileOutcome(kernels=tuple(kernels), payload=json.dumps(payload))

    def evaluate(self, work: JobWork) -> EvalOutcome:
        problem, solver = work.problem, work.solver
        reason = sv.applicability(problem, solver)
        if reason is not None:
            return EvalOutcome.inapplicable(reason)
        knobs = self.knobs(dict(work.session.environment))
        too_large = sv.too_large_reason(problem, knobs.time_budget_s)
        if too_large:
            return EvalOutcome.failed(too_large)
        try:
            payload = json.loads(work.payload or "")
            table: dict[str, list[str]] = payload["candidates"]
        except (ValueError, KeyError, TypeError):
            return EvalOutcome.failed("no usable compile payload: run the compile phase again")
        if payload.get("solver") != solver:
            return EvalOutcome.failed(f"payload is for {payload.get('solver')}, not {solver}")
        missing_isa = sorted(set(payload.get("isa", [])) - set(cpu_isa()))
        if payload.get("march") == "native" and missing_isa:
            return EvalOutcome.failed(
                f"kernels built with -march=native on a CPU with {', '.join(missing_isa)}, "
                "which this one lacks: compile on a machine like this one or set CPUCONV_MARCH"
            )
        by_name = {k.name: k for k in work.kernels}
        absent = sorted({name for name, _ in table.values()} - by_name.keys())
        if absent:
            return EvalOutcome.failed(f"compiled kernels missing: {', '.join(absent)}")
        started = time.monotonic()
        strategy = work.strategy or _strategy(work.step, len(table), payload.get("space", 0))
        # The candidates this backend chose are its budget for the problem; a search
        # strategy's round carries the search's (its most measurements).
        budget = work.budget if work.strategy else len(table)
        # A resumed job: what this session measured on this platform is not timed again.
        before = {m.params: m for m in work.measured if m.params in table}
        if before:
            log.info(
                "job %d: %d of %d candidate(s) of %s measured before, not timed again",
                work.job_id, len(before), len(table), solver,
            )  # fmt: skip
        fresh: list[run.Measured] = []

        def checkpoint(m: run.Measured) -> None:
            fresh.append(m)
            work.save_progress([_measurement(m, strategy, budget)])

        with run.loaded(list(by_name.values()), f"cpuconv-{work.job_id}-{work.attempt}-") as libs:
            candidates = [
                c for c in run.candidates(problem, solver, table, libs) if c.params not in before
            ]
            try:
                fresh = isolate.measure_isolated(
                    problem,
                    candidates,
                    limit_s=knobs.candidate_timeout_s,
                    tolerance=run.tolerance(solver),
                    repeats=knobs.repeats,
                    deadline=started + knobs.time_budget_s,
                    reference=run.Reference.get(knobs.cc),
                    on_measured=checkpoint,
                )
            except (isolate.IsolationError, run.TimeBudgetExceeded) as e:
                reason = str(e)
                if isinstance(e, run.TimeBudgetExceeded):
                    reason = (
                        f"time budget of {knobs.time_budget_s:g} s exceeded after "
                        f"{e.done + len(before)} of {e.total + len(before)} candidates"
                    )
                # what was measured before the failure is kept: a retry goes on from there
                return EvalOutcome(
                    ok=False,
                    reason=reason,
                    measurements=tuple(_measurement(m, strategy, budget) for m in fresh),
                )
            measured = [_reused(m) for m in before.values()] + fresh
            if work.choose and work.step != "kernel":  # a winner is stored: finalists re-timed
                retimed = _retime_finalists(
                    problem,
                    solver,
                    {c.params: c for c in run.candidates(problem, solver, table, libs)},
                    measured,
                    limit_s=knobs.candidate_timeout_s,
                    tolerance=run.tolerance(solver),
                    repeats=knobs.repeats,
                    deadline=started + knobs.time_budget_s,
                    reference=run.Reference.get(knobs.cc),
                )
                say_if_unstable(work.job_id, measured, retimed)
                fresh += retimed
        measured = [_reused(m) for m in before.values()] + fresh
        raced = [m for m in measured if m.raced]
        if raced:
            log.info(
                "job %d: raced %d of %d candidate(s) of %s, about %.1f ms of timing saved",
                work.job_id, len(raced), len(measured), solver, sum(m.saved_ms for m in raced),
            )  # fmt: skip
        if not work.choose:  # a strategy's round: its measurements are its result
            return EvalOutcome(measurements=tuple(_measurement(m, strategy, budget) for m in fresh))
        units = {params: by_name[name] for params, (name, _symbol) in table.items()}
        workspace = {
            p: sv.workspace_bytes(problem, solver, sv.parse_params(solver, p)) for p in table
        }
        outcome = self._outcome(work, measured, workspace, units)
        return dataclasses.replace(
            outcome, measurements=tuple(_measurement(m, strategy, budget) for m in fresh)
        )

    def _outcome(
        self,
        work: JobWork,
        measured: list[run.Measured],
        workspace: dict[str, int],
        units: dict[str, KernelBinary],
    ) -> EvalOutcome:
        """The fastest correct candidate's rows, naming the shared object it is built into
        (``units``: params -> the compiled kernel holding them) as the solution's kernel."""
        passed = [m for m in measured if m.ok]
        failed = [m for m in measured if not m.ok]
        if failed:
            log.warning(
                "job %d: %d of %d candidate(s) of %s failed: %s",
                work.job_id, len(failed), len(measured), work.solver,
                ", ".join(f"{m.params or '-'} ({_why(m)})" for m in failed[:5]),
            )  # fmt: skip
        if not passed:
            worst = failed[0]
            if worst.error is None:  # it crashed or hung: nothing was verified
                return EvalOutcome.failed(
                    f"no candidate ran: {len(failed)} of {len(measured)} failed, the first "
                    f"({worst.params or 'no parameters'}) {worst.reason}"
                )
            return EvalOutcome.failed(
                f"verification failed: {len(failed)} of {len(measured)} candidate(s) wrong, "
                f"max error {worst.error:g} with parameters {worst.params or '(none)'}"
            )
        if work.step == "kernel":
            return EvalOutcome()
        best = min(passed, key=lambda m: (m.time_ms, m.params))
        assert best.time_ms is not None
        params = best.params or None
        find = FindResult(
            time_ms=best.time_ms,
            workspace=workspace[best.params],
            algorithm=sv.algorithm_name(work.solver, work.problem.direction),
            params=params,
        )
        tunable = sv.BY_NAME[work.solver].tunable
        perf = PerfResult(best.params) if work.step == "perf" and tunable else None
        return EvalOutcome(perf=perf, find=find, kernels=(units[best.params],))


def _retime_finalists(
    problem: ConvProblem,
    solver: str,
    candidates: dict[str, run.Candidate],
    measured: list[run.Measured],
    **how: Any,
) -> list[run.Measured]:
    """The finalists of ``measured``, and ``solver``'s default parameters beside them,
    timed again in turns (:mod:`tuna.backends.finalists`), each turn in forked children
    under the evaluation's time budget: a turn cut short by the budget ends the re-timing
    (what was timed counts). A turn times every one of them fully (no pruning, no racing:
    the default is often 10-40x slower than the rest) and keeps each one's fastest run: a
    busy machine only ever slows a run, and a median of five 1 ms runs on a loaded machine
    is mostly other people's work (``bench/cpuconv.md``)."""

    def turn(order: list[str]) -> tuple[list[run.Measured], bool]:
        cands = [candidates[p] for p in order]
        try:
            return isolate.measure_isolated(problem, cands, **how, **_TURN), True
        except run.TimeBudgetExceeded as e:
            return e.measured, False
        except isolate.IsolationError:
            return [], False

    try:
        default: str | None = sv.default_params(problem, solver)
    except ValueError:
        default = None
    names = finalists([m for m in measured if m.ok], lambda p: p in candidates, default)
    return retime(names, turn)


#: How a re-timing turn measures: every candidate fully, each counting by its fastest run.
_TURN: dict[str, Any] = {"prune": float("inf"), "race_after": 1 << 30, "fastest": True}


def _why(m: run.Measured) -> str:
    """Why a candidate failed, for the log: its reason, and its error when it was verified."""
    if m.error is None:
        return m.reason or "failed"
    return f"{m.reason or 'failed'}, max error {m.error:g}"


def _strategy(step: str, candidates: int, space: int) -> str:
    """What chose a job's candidates: all of the space, a seeded sample, or the default."""
    if step != "perf":
        return "default"
    return "exhaustive" if candidates >= space else "random"


def _measurement(m: run.Measured, strategy: str, budget: int | None = None) -> Measurement:
    """A candidate's result as a measurement row: its time, or what went wrong."""
    if m.ok:
        note = "raced" if m.raced else ("pruned after its warm-up" if m.runs == 0 else None)
        return Measurement(m.params, m.time_ms, True, note, strategy, budget)
    reason = m.reason or "failed"
    if m.error is not None and m.error == m.error:  # not NaN
        reason = f"{reason} (max error {m.error:g})"
    return Measurement(m.params, None, False, reason, strategy, budget)


def _reused(m: Measurement) -> run.Measured:
    """A measurement taken before, as a result of this evaluation (not timed again)."""
    if m.valid and m.time_ms is not None:
        return run.Measured(m.params, m.time_ms, 0.0, m.reason)
    return run.Measured(m.params, None, float("nan"), m.reason or "failed before")
