"""Backends by name: what "compile" and "evaluate" mean for one kernel library.

A session names its backend; a worker gets it with :func:`get_backend`. Backends are
imported only when asked for, so a worker for one library never imports another's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from tuna.backends.base import (
    Backend,
    CompileOutcome,
    EvalOutcome,
    FindResult,
    JobWork,
    KernelBinary,
    Measurement,
    Outcome,
    PerfResult,
    SessionInfo,
    SolverInfo,
    TuningSpace,
)
from tuna.errors import TunaError
from tuna.problems.conv import ConvProblem

__all__ = [
    "ApplicabilityAnswer",
    "Backend",
    "CompileOutcome",
    "EvalOutcome",
    "FindResult",
    "JobWork",
    "KernelBinary",
    "LibraryQueries",
    "Measurement",
    "Outcome",
    "PerfResult",
    "SessionInfo",
    "SolverInfo",
    "TuningSpace",
    "UnknownBackendError",
    "backend_names",
    "backends_with_spaces",
    "get_backend",
    "register_backend",
]

# name -> "module:Class"; imported on first use.
_BUILT_IN: dict[str, str] = {
    "noop": "tuna.backends.noop:NoopBackend",
    "cpuconv": "tuna.backends.cpuconv:CpuConvBackend",
    "miopen": "tuna.backends.miopen:MiopenBackend",
    "bench": "tuna.backends.bench.backend:BenchBackend",
    "cuda": "tuna.backends.cuda:CudaBackend",
}
_registered: dict[str, Callable[[], Backend]] = {}


class UnknownBackendError(TunaError):
    """Raised when a session or command names a backend Tuna does not have."""


@dataclass(frozen=True)
class ApplicabilityAnswer:
    """What a library said about some problems, by the caller's key (a config id).

    ``applicable`` holds, for each problem it answered, the solvers that apply; every other
    solver does not, for the reason in ``reasons`` (or ``default_reason``). ``failed`` holds
    the problems it gave no answer for, and why.
    """

    applicable: Mapping[int, frozenset[str]]
    failed: Mapping[int, str] = field(default_factory=dict)
    reasons: Mapping[int, str] = field(default_factory=dict)
    default_reason: str = "not applicable"

    def reason(self, key: int) -> str:
        return self.reasons.get(key, self.default_reason)


@runtime_checkable
class LibraryQueries(Protocol):
    """A backend whose solvers and applicability only the library build itself can tell
    (MIOpen through fin), so they are asked for a session and stored: ``tuna solvers
    update`` stores the solvers, ``tuna applicability update`` the applicability, and
    ``load_jobs`` uses the stored applicability instead of :meth:`Backend.applicability`.
    """

    def session_solvers(self, session: SessionInfo) -> list[SolverInfo]:
        """Every solver of the session's library build."""
        ...

    def session_applicability(
        self, session: SessionInfo, problems: Sequence[tuple[int, ConvProblem]]
    ) -> ApplicabilityAnswer:
        """Which solvers apply to each (key, problem), as the session's library build says."""
        ...


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make ``get_backend(name)`` return ``factory()`` (tests and plug-ins)."""
    _registered[name] = factory


def backend_names() -> list[str]:
    """The names :func:`get_backend` knows, sorted."""
    return sorted({*_BUILT_IN, *_registered})


def backends_with_spaces() -> list[str]:
    """The names of the backends whose tunable solvers declare a tuning space (a search
    strategy works on them: ``Backend.declares_spaces``), sorted. Imports every backend."""
    return [name for name in backend_names() if get_backend(name).declares_spaces]


def get_backend(name: str) -> Backend:
    """A new instance of the backend called ``name``."""
    factory = _registered.get(name)
    if factory is not None:
        return factory()
    target = _BUILT_IN.get(name)
    if target is None:
        raise UnknownBackendError(
            f"unknown backend {name!r}; known backends: {', '.join(backend_names())}"
        )
    module_name, _, class_name = target.partition(":")
    cls: type[Backend] = getattr(importlib.import_module(module_name), class_name)
    return cls()
