"""``bench``: the backend of searches over any benchmark, registered with the job queue.

A search's build job calls :meth:`BenchBackend.build`: the build command runs in a per-job
scratch directory (:func:`~tuna.backends.bench.execute.build`) and the directory comes back
packed (:mod:`~tuna.backends.artifact`) for the database. A run job calls
:meth:`BenchBackend.run` with its build's artifact already unpacked by the worker (cached
per worker by digest): the run command runs on a fresh copy with the search's timeout and
its stats are parsed (:mod:`~tuna.backends.bench.stats`). A failed build, a non-zero exit,
a timeout, a crash or missing stats are outcomes, not exceptions: the job is done and the
build or Run is recorded invalid with the reason.

``search.spec`` (what :func:`spec_from_dict` reads)::

    {"run": "./bench {n}", "build": "cc -DT={tile} -o bench bench.c" | null,
     "stats": {"mode": "auto|json|lines|regex", "patterns": [...]},
     "required_stats": ["gflops"], "run_timeout_s": 600, "build_timeout_s": 3600,
     "source_dir": "/path/copied/into/each/build" | null,
     "source_artifact": "<sha256 of the sources, packed and stored when the search was made>",
     "artifact_max_bytes": 67108864, "owns": "machine|device|nothing",
     "function": {"ref": "mymod:measure", "stat": "value"} | null}

A search with a ``function`` runs that Python function instead of a run command: its run
command is :mod:`~tuna.backends.bench.function`'s, made on the worker for the worker's
Python, and its stats are the JSON line that prints.

The sources reach a build on any machine as an artifact: ``tuna search create`` packs
``source_dir`` into ``artifact`` and names it in ``source_artifact``; the worker unpacks it
(cached by digest) and hands the directory to :meth:`BenchBackend.build` as
``SearchWork.build_dir``.

``owns`` is what one run must have to itself (default ``machine``: two timed runs on one
machine would disturb each other); the worker takes it around the run.
"""

from __future__ import annotations

import shutil
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tuna.backends.artifact import DEFAULT_MAX_BYTES, ArtifactTooLarge, pack
from tuna.backends.base import (
    Backend,
    BuildOutcome,
    CompileOutcome,
    EvalOutcome,
    JobWork,
    Owns,
    RunOutcome,
    SearchWork,
    SolverInfo,
)
from tuna.backends.bench.execute import BenchSpec, BuildResult, build, new_scratch, run
from tuna.backends.bench.function import run_command as function_command
from tuna.backends.bench.stats import StatsFormat
from tuna.backends.bench.templates import BenchError, CommandTemplate
from tuna.problems.conv import ConvProblem
from tuna.searchers.function import find_function

SPEC_KEYS = frozenset(
    {
        "run",
        "build",
        "stats",
        "required_stats",
        "run_timeout_s",
        "build_timeout_s",
        "source_dir",
        "artifact_max_bytes",
        "owns",
        "source_artifact",
        "function",
    }
)


def spec_from_dict(data: Mapping[str, Any]) -> BenchSpec:
    """The :class:`BenchSpec` a search's ``spec`` describes; :class:`BenchError` if malformed."""
    unknown = sorted(set(data) - SPEC_KEYS)
    if unknown:
        raise BenchError(
            f"bench spec: unknown setting(s) {', '.join(unknown)}; the settings are "
            f"{', '.join(sorted(SPEC_KEYS))}"
        )
    function = data.get("function")
    if function is not None:
        if not isinstance(function, Mapping) or not isinstance(function.get("ref"), str):
            raise BenchError(f"bench spec: function {function!r}: give {{'ref': 'mod:fn'}}")
        run_text = function_command(function["ref"], str(function.get("stat") or "value"))
    elif isinstance(data.get("run"), str) and data["run"].strip():
        run_text = data["run"]
    else:
        raise BenchError("bench spec: a run command is needed (e.g. './bench --n {n}')")
    stats = data.get("stats") or {}
    try:
        return BenchSpec(
            run=CommandTemplate(run_text, "run command"),
            build=CommandTemplate(data["build"], "build command") if data.get("build") else None,
            stats=StatsFormat(stats.get("mode", "auto"), tuple(stats.get("patterns", ()))),
            required_stats=tuple(data.get("required_stats", ())),
            run_timeout_s=float(data.get("run_timeout_s", 600.0)),
            build_timeout_s=float(data.get("build_timeout_s", 3600.0)),
            source_dir=Path(data["source_dir"]) if data.get("source_dir") else None,
        )
    except (TypeError, ValueError, AttributeError) as e:
        raise BenchError(f"bench spec {dict(data)!r} is malformed: {e}") from e


def spec_to_dict(
    spec: BenchSpec, *, artifact_max_bytes: int = DEFAULT_MAX_BYTES, owns: str = "machine"
) -> dict[str, Any]:
    """``spec`` as the JSON a search stores."""
    return {
        "run": spec.run.text,
        "build": spec.build.text if spec.build else None,
        "stats": {"mode": spec.stats.mode, "patterns": list(spec.stats.patterns)},
        "required_stats": list(spec.required_stats),
        "run_timeout_s": spec.run_timeout_s,
        "build_timeout_s": spec.build_timeout_s,
        "source_dir": str(spec.source_dir) if spec.source_dir else None,
        "artifact_max_bytes": artifact_max_bytes,
        "owns": owns,
    }


def run_owns(spec: Mapping[str, Any]) -> Owns:
    try:
        return Owns(spec.get("owns", Owns.MACHINE.value))
    except ValueError as e:
        raise BenchError(
            f"bench spec: owns {spec.get('owns')!r}: use machine, device or nothing"
        ) from e


class BenchBackend(Backend):
    """Searches over benchmarks; it tunes no convolution (no solvers, compiles nothing)."""

    name = "bench"

    def solvers(self) -> list[SolverInfo]:
        return []

    def applicability(self, problem: ConvProblem, solver: str) -> str | None:
        return "the bench backend runs searches, not convolution solvers"

    def compile(self, work: JobWork) -> CompileOutcome:
        return CompileOutcome.failed("the bench backend runs searches, not convolution jobs")

    def owns(self, work: JobWork | SearchWork) -> Owns:
        return run_owns(work.spec) if isinstance(work, SearchWork) else Owns.NOTHING

    def check_spec(
        self, spec: Mapping[str, Any], parameters: Sequence[str], runtime: Collection[str]
    ) -> None:
        bench = spec_from_dict(spec)
        bench.check(list(parameters))
        if spec.get("function") is not None:  # found, not run: the workers run it
            find_function(spec["function"]["ref"], bench.source_dir)
        if bench.build is not None:
            named = [n for n in bench.build.names() if n in runtime]
            if named:
                raise BenchError(
                    f"build command {bench.build.text!r} names runtime-only parameter(s) "
                    f"{', '.join(map(repr, named))}: one build serves every runtime value; "
                    "move them to the run command, or drop them from "
                    "META_get_no_rebuild_params"
                )

    def needs_build(self, spec: Mapping[str, Any]) -> bool:
        """A build command, or sources to ship to the build machines."""
        return bool(spec.get("build") or spec.get("source_dir"))

    def runtime_only(self, spec: Mapping[str, Any]) -> bool:
        """A search whose runs call a Python function (``tuna search create
        --objective-fn``) has one build, its sources: no parameter is built in."""
        return bool(spec.get("function"))

    def search_sources(self, spec: Mapping[str, Any]) -> bytes | None:
        if not spec.get("source_dir"):
            return None
        cap = int(spec.get("artifact_max_bytes") or DEFAULT_MAX_BYTES)
        return pack(Path(spec["source_dir"]), cap)

    def evaluate(self, work: JobWork) -> EvalOutcome:
        return EvalOutcome.failed("the bench backend runs searches, not convolution jobs")

    def build(self, work: SearchWork) -> BuildOutcome:
        spec = spec_from_dict(work.spec)
        if work.build_dir is not None:  # the sources, unpacked from their artifact
            spec = replace(spec, source_dir=Path(work.build_dir))
        scratch = new_scratch(work.scratch, f"build-{work.job_id}")
        try:
            built = build(spec, work.config, scratch / "build")
            if not built.ok:
                return BuildOutcome(failure=built.reason or "build failed")
            cap = int(work.spec.get("artifact_max_bytes", DEFAULT_MAX_BYTES))
            try:
                return BuildOutcome(artifact=pack(built.directory, cap))
            except ArtifactTooLarge as e:
                return BuildOutcome(failure=str(e))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def run(self, work: SearchWork) -> RunOutcome:
        spec = spec_from_dict(work.spec)
        scratch = new_scratch(work.scratch, f"run-{work.job_id}")
        try:
            if work.build_dir is not None:
                built = BuildResult(Path(work.build_dir), ok=True)
            else:  # no build step: a fresh directory holding the config
                built = build(spec, work.config, scratch / "build")
            done = run(spec, work.config, built, scratch / "run", work.report)
            return RunOutcome(
                stats=dict(done.run.stats),
                valid=done.run.valid,
                failure=done.run.reason,
                intermediate=done.intermediate,
                pruned=done.pruned,
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
