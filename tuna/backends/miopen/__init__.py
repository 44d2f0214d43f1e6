"""``miopen``: MIOpen tuned through its ``fin`` helper inside a ROCm image.

Every phase is one fin run (reference ``mituna.md`` §6): Tuna writes fin's JSON input for
the job's problem and solver, runs ``fin -i input.json -o output.json`` in a scratch
directory private to the job, and reads fin's output back:

=========  ====================================  ======================================
job step   compile phase                         evaluate phase
=========  ====================================  ======================================
perf       ``miopen_perf_compile`` (every        ``miopen_perf_eval``: the tuned
           candidate of a tunable solver)        parameters (perf db) and their time
find       ``miopen_find_compile``               ``miopen_find_eval``: time, workspace,
                                                 algorithm (find db)
kernel     ``miopen_find_compile``               ``miopen_find_eval``, checked only
=========  ====================================  ======================================

The compile phase's kernels (base64 of bz2 in fin's output, md5 checked) go to the kernel
cache; its payload keeps the rest of fin's result (algorithm, params, workspace and which
kernel is which) so the evaluate phase can hand fin its ``*_compile_result`` again. A result
whose db key is not the config's own key (MIOpen saw a different problem, e.g. another
layout) is a failure. fin's reason for each solver is kept: "Not Applicable" and its kin
make the job ``not_applicable``, anything else fails it with fin's words.

Which solvers exist and which apply to a problem only the session's MIOpen build can say:
:meth:`MiopenBackend.session_solvers` (fin ``get_solvers``) and
:meth:`MiopenBackend.session_applicability` (fin ``applicability``) answer for a session,
and ``tuna solvers update`` / ``tuna applicability update`` store the answers, which
``load_jobs`` then uses. Without a session, :meth:`solvers` is MIOpen's solver catalogue
(``solvers.py``) and :meth:`applicability` only checks what fin can take at all.

Settings, from the session's environment:

========================  ===================================================
``FIN_PATH``              the fin binary (default ``/opt/rocm/bin/fin``), or a
                          command line such as the stand-in
                          ``python -m tuna.backends.miopen.fake_fin``
``FIN_TIMEOUT_S``         time limit of one fin run (default 3600)
``FIN_SCRATCH_DIR``       where the per-job scratch directories go (default
                          ``<tmp>/tuna-fin``)
``FIN_KEEP_SCRATCH``      1: keep scratch directories of successful runs too
                          (those of failed runs are always kept)
``FIN_DYNAMIC_ONLY``      1: fin's ``dynamic_only`` (only dynamic solvers)
``FIN_APPLICABILITY_BATCH``  configs per fin ``applicability`` run (default 100)
``MIOPEN_*``, others      passed to fin (find mode, find enforce, debug switches)
========================  ===================================================
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Sequence
from typing import Any, ClassVar

from tuna.backends import ApplicabilityAnswer
from tuna.backends.base import (
    Backend,
    CompileOutcome,
    EvalOutcome,
    FindResult,
    JobWork,
    KernelBinary,
    Measurement,
    OutcomeT,
    Owns,
    PerfResult,
    SessionInfo,
    SolverInfo,
)
from tuna.backends.miopen import environment, protocol
from tuna.backends.miopen.kernels import KernelObjectError
from tuna.backends.miopen.payload import compile_payload, compiled_item, stored_kernels
from tuna.backends.miopen.results import (
    FinOutputError,
    SolverResult,
    StepResult,
    parse_applicability,
    parse_solvers,
    parse_step,
    reasons,
    usable_time,
)
from tuna.backends.miopen.runner import FinError, FinNotStartedError, run_fin
from tuna.backends.miopen.settings import Settings
from tuna.backends.miopen.solvers import BY_NAME, SOLVERS
from tuna.errors import TunaError
from tuna.problems.conv import ConvProblem
from tuna.problems.keys import find_db_key

log = logging.getLogger(__name__)


class MiopenBackend(Backend):
    name: ClassVar[str] = "miopen"
    evaluation_owns: ClassVar[Owns] = Owns.DEVICE  # one fin timing per GPU at a time

    # -- without a session -------------------------------------------------------------

    def solvers(self) -> list[SolverInfo]:
        return list(SOLVERS)

    def applicability(self, problem: ConvProblem, solver: str) -> str | None:
        """Only what holds for every MIOpen build: the solver is MIOpen's and fin can take
        the problem. Whether it really applies is fin's answer for a session, stored by
        ``tuna applicability update``."""
        if solver not in BY_NAME:
            return f"{solver!r} is not a MIOpen convolution solver known to Tuna"
        return protocol.unsupported_reason(problem)

    # -- what a worker container needs -------------------------------------------------

    def container_args(self, phase: str, gpu: int | None) -> list[str]:
        return environment.container_args(phase, gpu)

    def worker_environment(
        self, session: SessionInfo, phase: str, gpu: int | None, scratch: str
    ) -> dict[str, str]:
        return environment.worker_environment(session, phase, gpu, scratch)

    # -- asked of the session's MIOpen build ---------------------------------------------

    def session_solvers(self, session: SessionInfo) -> list[SolverInfo]:
        """fin ``get_solvers``: the convolution solvers of the session's MIOpen build."""
        settings = Settings.of(dict(session.environment))
        what = f"get_solvers for session {session.id}"
        results = self._run_session(session, settings, protocol.get_solvers_input(), what)
        try:
            found = parse_solvers(results[0], path=what)
        except FinOutputError as e:
            raise FinError(str(e)) from e
        out = []
        for s in found:
            if s.primitive != "convolution":
                continue
            known = BY_NAME.get(s.name)
            algorithm = known.algorithm if known is not None else None
            out.append(SolverInfo(s.name, s.tunable, s.numeric_id, algorithm))
        return out

    def session_applicability(
        self, session: SessionInfo, problems: Sequence[tuple[int, ConvProblem]]
    ) -> ApplicabilityAnswer:
        """fin ``applicability`` for each (config id, problem), in batches; a batch fin fails
        on is split until the config to blame is alone."""
        settings = Settings.of(dict(session.environment))
        applicable: dict[int, frozenset[str]] = {}
        failed: dict[int, str] = {}
        why_none: dict[int, str] = {}
        askable: list[tuple[int, ConvProblem]] = []
        for cid, p in problems:
            reason = protocol.unsupported_reason(p)
            if reason is None:
                askable.append((cid, p))
            else:
                applicable[cid], why_none[cid] = frozenset(), reason

        def ask(batch: Sequence[tuple[int, ConvProblem]]) -> None:
            jobs = protocol.applicability_input(
                arch=session.arch, num_cu=session.num_cu, problems=batch
            )
            what = f"applicability for session {session.id}, config(s) {_span(batch)}"
            try:
                results = self._run_session(session, settings, jobs, what)
                answers = dict(parse_applicability(r, path=what) for r in results)
                missing = {cid for cid, _p in batch} - answers.keys()
                if missing:
                    raise FinError(f"{what}: no answer for config(s) {sorted(missing)}")
            except FinNotStartedError:
                raise
            except (FinError, FinOutputError) as e:
                if len(batch) == 1:
                    failed[batch[0][0]] = str(e)
                    return
                half = len(batch) // 2
                ask(batch[:half])
                ask(batch[half:])
                return
            for cid, _p in batch:
                applicable[cid] = frozenset(answers[cid])

        size = settings.applicability_batch
        for start in range(0, len(askable), size):
            ask(askable[start : start + size])
        return ApplicabilityAnswer(
            applicable=applicable,
            failed=failed,
            reasons=why_none,
            default_reason="Not Applicable (fin applicability)",
        )

    def _run_session(
        self, session: SessionInfo, settings: Settings, jobs: list[dict[str, Any]], what: str
    ) -> list[dict[str, Any]]:
        scratch = settings.scratch(f"session{session.id}-")
        env = environment.fin_environment(os.environ, session.environment, scratch)
        results = run_fin(
            settings.fin, jobs, workdir=scratch, env=env, timeout_s=settings.timeout_s, what=what
        )
        if not settings.keep_scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        return results

    # -- the two phases ----------------------------------------------------------------

    def compile(self, work: JobWork) -> CompileOutcome:
        step = protocol.STEPS[("compile", work.step)]
        try:
            settings = Settings.of(dict(work.session.environment))
        except TunaError as e:
            return CompileOutcome.failed(str(e))
        try:
            job = protocol.problem_job(
                [step],
                arch=work.session.arch,
                num_cu=work.session.num_cu,
                config_id=work.config_id,
                problem=work.problem,
                solvers=[work.solver],
                dynamic_only=settings.dynamic_only,
            )
        except protocol.UnsupportedProblemError as e:
            return CompileOutcome.inapplicable(str(e))
        found = self._run_job(work, settings, step, job, CompileOutcome)
        if not isinstance(found, tuple):
            return found
        result, step_result = found
        unique: dict[tuple[str, str, str], KernelBinary] = {}
        for kernel, meta in zip(result.kernels, result.kernel_meta, strict=True):
            unique.setdefault((kernel.name, kernel.args, meta.md5_sum), kernel)
        return CompileOutcome(
            kernels=tuple(unique.values()), payload=compile_payload(step, step_result, result)
        )

    def evaluate(self, work: JobWork) -> EvalOutcome:
        step = protocol.STEPS[("eval", work.step)]
        try:
            settings = Settings.of(dict(work.session.environment))
            compiled = compiled_item(work, protocol.COMPILED_BY[step])
            job = protocol.eval_job(
                step,
                arch=work.session.arch,
                num_cu=work.session.num_cu,
                config_id=work.config_id,
                problem=work.problem,
                solver=work.solver,
                compiled=compiled,
                dynamic_only=settings.dynamic_only,
            )
        except protocol.UnsupportedProblemError as e:
            return EvalOutcome.inapplicable(str(e))
        except TunaError as e:  # settings, payload or stored kernels
            return EvalOutcome.failed(str(e))
        found = self._run_job(work, settings, step, job, EvalOutcome)
        if not isinstance(found, tuple):
            return found
        result, _step_result = found
        if work.step == "kernel":
            return EvalOutcome()
        bad_time = usable_time(result)
        if bad_time is not None:
            return EvalOutcome(
                ok=False,
                reason=f"fin {step}: {work.solver}: {bad_time}",
                measurements=(Measurement(result.params or "", None, False, bad_time),),
            )
        workspace = result.workspace if result.workspace is not None else compiled.get("workspace")
        algorithm = result.algorithm or compiled.get("algorithm")
        if not isinstance(workspace, int) or workspace < 0 or not algorithm:
            return EvalOutcome.failed(
                f"fin {step}: {work.solver}: no workspace or algorithm in fin's result"
            )
        assert result.time_ms is not None
        params = result.params or None
        find = FindResult(
            time_ms=result.time_ms, workspace=workspace, algorithm=algorithm, params=params
        )
        perf = None
        if work.step == "perf" and result.tunable and params:
            perf = PerfResult(params)
        # fin times the solution it found (its own search stays inside MIOpen): one measurement
        return EvalOutcome(
            perf=perf,
            find=find,
            kernels=_solution_kernels(work, result, compiled),
            measurements=(Measurement(params or "", result.time_ms, True),),
        )

    def _run_job(
        self,
        work: JobWork,
        settings: Settings,
        step: str,
        job: dict[str, Any],
        outcome: type[OutcomeT],
    ) -> tuple[SolverResult, StepResult] | OutcomeT:
        """Run one job's fin step: the solver's result, or the outcome that ends the job."""
        scratch = settings.scratch(f"job{work.job_id}-a{work.attempt}-{work.phase}-")
        what = f"fin {step} of job {work.job_id} (config {work.config_id}, {work.solver})"
        env = environment.fin_environment(os.environ, work.session.environment, scratch)
        try:
            results = run_fin(
                settings.fin, [job], workdir=scratch, env=env, timeout_s=settings.timeout_s,
                what=what,
            )  # fmt: skip
            step_result = parse_step(results[0], step, path=str(scratch / "output.json"))
        except (FinError, FinOutputError, KernelObjectError) as e:
            return outcome.failed(str(e))
        expected = find_db_key(work.problem)
        if step_result.db_key != expected:
            return outcome.failed(
                f"{what}: fin's db key {step_result.db_key} is not config {work.config_id}'s "
                f"key {expected} (MIOpen saw another problem)"
            )
        result = step_result.for_solver(work.solver)
        if result is None:
            return outcome.failed(
                f"{what}: fin's result has no item for {work.solver} "
                f"(it has: {reasons(step_result.solvers)})"
            )
        if not result.ok and not result.not_applicable:
            return outcome.failed(f"fin {step}: {work.solver}: {result.reason}")
        if not settings.keep_scratch:  # kept for failures only, to look into
            shutil.rmtree(scratch, ignore_errors=True)
        if not result.ok:
            return outcome.inapplicable(f"fin {step}: {work.solver}: {result.reason}")
        return result, step_result


def _solution_kernels(
    work: JobWork, result: SolverResult, compiled: dict[str, Any]
) -> tuple[KernelBinary, ...]:
    """The stored kernels of the solution fin timed (``EvalOutcome.kernels``).

    A find step's compile built one solution (the solver with its perf-db parameters): its
    kernels are the ones handed to fin. A perf step's compile built every candidate, and
    fin's result names the tuned solution's kernels (``kernel_objects``). Empty when fin
    names none, or names one the compile phase did not build (logged): the kernel db then
    takes all of the job's kernels.
    """
    if work.step == "perf":
        named = [(m.kernel_file, m.comp_options, m.md5_sum) for m in result.kernel_meta]
    else:
        objects = compiled.get("kernel_objects") or []
        named = [(o["kernel_file"], o["comp_options"], o["md5_sum"]) for o in objects]
    found = stored_kernels(work, named)
    if found is None:
        log.warning(
            "job %d: fin's %s result names kernels the compile phase did not build; "
            "none named as the solution's",
            work.job_id, work.solver,
        )  # fmt: skip
        return ()
    return found


def _span(batch: Sequence[tuple[int, ConvProblem]]) -> str:
    ids = [cid for cid, _p in batch]
    return str(ids[0]) if len(ids) == 1 else f"{ids[0]}..{ids[-1]} ({len(ids)})"
