"""The one error tree of ``tuna/`` (STYLE.md, habit 5), checked on the classes themselves.

Every public exception class of Tuna is placed in :data:`TREE` below, under its parent: a new
one fails this test until it is placed (with a "Raised when ..." docstring), so the tree
stays one tree. Backends' errors are under ``BackendError``, the fleet's under
``FleetError``, the searchers' under ``SearchError``; only control flow that no user sees is
outside ``TunaError``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import tuna

TREE = """
Exception
    TunaError                           tuna.errors
        ConfigurationError              tuna.errors
        DriverLineError                 tuna.errors
        DbKeyError                      tuna.errors
        DatabaseError                   tuna.errors
            SchemaOutOfDateError        tuna.errors
            TransientDatabaseError      tuna.errors
        ImportRefusedError              tuna.errors
        NotFoundError                   tuna.errors
        MissingExtraError               tuna.errors
        BackendError                    tuna.errors
            ArtifactError               tuna.backends.artifact
                ArtifactTooLarge        tuna.backends.artifact
            BenchError                  tuna.backends.bench.templates
                TemplateError           tuna.backends.bench.templates
            BuildError                  tuna.backends.cpuconv.build
            BudgetExceededError         tuna.backends.cpuconv.build
            IsolationError              tuna.backends.cpuconv.isolate
            CompileTimeoutError         tuna.backends.cuda.compile
            CompilerUnavailableError    tuna.backends.cuda.compile
            DeviceError                 tuna.backends.cuda.device
            DriverUnavailableError      tuna.backends.cuda.device
            EvaluationRefusedError      tuna.backends.cuda.evaluate
            HostCheckError              tuna.backends.cuda.hostcheck
            FinError                    tuna.backends.miopen.runner
                FinNotStartedError      tuna.backends.miopen.runner
            FinOutputError              tuna.backends.miopen.results
            KernelObjectError           tuna.backends.miopen.kernels
            PayloadError                tuna.backends.miopen.payload
            UnsupportedProblemError     tuna.backends.miopen.protocol
        UnknownBackendError             tuna.backends
        FleetError                      tuna.fleet.errors
            HostsFailedError            tuna.fleet.fanout
            SlurmError                  tuna.fleet.slurm_client
            SshError                    tuna.fleet.ssh
                UnknownHostKey          tuna.fleet.ssh
                ChangedHostKey          tuna.fleet.ssh
                CommandTimeout          tuna.fleet.ssh
        SearchError                     tuna.searchers.errors
            ParameterFileError          tuna.searchers.errors
            HookError                   tuna.searchers.errors
            UnknownParameterError       tuna.searchers.errors
            SearcherError               tuna.searchers.errors
            ReplayError                 tuna.searchers.errors
            ObjectiveError              tuna.searchers.errors
            ConstraintError             tuna.searchers.constraints
            ModelLibraryMissing         tuna.searchers.costmodel
            SamplerLibraryMissing       tuna.searchers.strategies.sampled
            UnknownStrategyError        tuna.searchers.strategies
            BudgetError                 tuna.searchers.strategies.base
        Pruned                          tuna.searchers.prune
        IllegalTransition               tuna.jobs.errors
        LostLease                       tuna.jobs.errors
        TimeLimitExceeded               tuna.worker.horse
        BackendDied                     tuna.worker.horse
        EvaluationBlockedError          tuna.worker.loop
        RetiredSessionError             tuna.sessions.history
        RulesError                      tuna.sessions.rules
        DbFileError                     tuna.results.formats
            DbFileRefusedError          tuna.results.importdb
        GoldenExistsError               tuna.results.golden
        ExportRefusedError              tuna.results.validate
        InvalidProblemError             tuna.problems.conv
        PlatformJsonError               tuna.platforms.store
        BadRequest                      tuna.dashboard.params
    TimeBudgetExceeded                  tuna.backends.cpuconv.run
KeyboardInterrupt
    Interrupted                         tuna.fleet.dispatch
"""
#: Outside TunaError: control flow caught inside Tuna, never shown to a user as an error.
CONTROL_FLOW = {"tuna.backends.cpuconv.run.TimeBudgetExceeded", "tuna.fleet.dispatch.Interrupted"}


def placed(tree: str = TREE) -> dict[str, str]:
    """``module.Class`` -> its parent's ``module.Class`` (a builtin's bare name), from TREE."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in filter(str.strip, tree.splitlines()):
        depth = len(line) - len(line.lstrip())
        name, *module = line.split()
        full = f"{module[0]}.{name}" if module else name
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            out[full] = stack[-1][1]
        stack.append((depth, full))
    return out


def _name(cls: type) -> str:
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def public_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of ``tuna`` under a public name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(tuna.__path__, "tuna."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for attr, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
                and not attr.startswith("_")
            ):
                found[_name(obj)] = obj
    return found


def test_every_public_exception_is_placed_in_the_tree() -> None:
    found = public_exceptions()
    tree = placed()
    unplaced = sorted(found.keys() - tree.keys())
    assert not unplaced, f"place {unplaced} in TREE of tests/test_errors.py, under its parent"
    gone = sorted(n for n in tree.keys() - found.keys() if "." in n)
    assert not gone, f"TREE names exceptions that no longer exist: {gone}"
    moved = {n: (_name(found[n].__bases__[0]), tree[n]) for n in found}
    moved = {n: parents for n, parents in moved.items() if parents[0] != parents[1]}
    assert not moved, f"(its parent, TREE's) differ: {moved}"


def test_each_says_when_it_is_raised_and_only_control_flow_is_outside_tuna_error() -> None:
    found = public_exceptions()
    silent = sorted(n for n, cls in found.items() if not (cls.__doc__ or "").startswith("Raised "))
    assert not silent, f"start their docstrings with 'Raised when ...': {silent}"
    outside = {n for n, cls in found.items() if not issubclass(cls, tuna.errors.TunaError)}
    assert outside == CONTROL_FLOW


def test_the_families_the_issue_named() -> None:
    """Issue #25: the backends' errors under one BackendError, SshError a FleetError."""
    tree = placed()
    for name in (
        "tuna.backends.miopen.runner.FinError",
        "tuna.backends.cpuconv.build.BuildError",
        "tuna.backends.bench.templates.BenchError",
    ):
        assert tree[name] == "tuna.errors.BackendError", name
    assert tree["tuna.fleet.ssh.SshError"] == "tuna.fleet.errors.FleetError"


def test_the_tree_reader_sees_the_nesting() -> None:
    assert placed("A\n    B  m\n        C  m\n    D  n\nE\n") == {
        "m.B": "A",
        "m.C": "m.B",
        "n.D": "A",
    }
