"""Backends by name: what "compile" and "evaluate" mean for one kernel library.

A session names its backend; a worker gets it with :func:`get_backend`. Backends are
imported only when asked for, so a worker for one library never imports another's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from tuna.backends.base import (
    Backend,
    CompileOutcome,
    EvalOutcome,
    FindResult,
    JobWork,
    KernelBinary,
    Outcome,
    PerfResult,
    SessionInfo,
    SolverInfo,
)
from tuna.errors import TunaError

__all__ = [
    "Backend",
    "CompileOutcome",
    "EvalOutcome",
    "FindResult",
    "JobWork",
    "KernelBinary",
    "Outcome",
    "PerfResult",
    "SessionInfo",
    "SolverInfo",
    "UnknownBackendError",
    "backend_names",
    "get_backend",
    "register_backend",
]

# name -> "module:Class"; imported on first use.
_BUILT_IN: dict[str, str] = {
    "noop": "tuna.backends.noop:NoopBackend",
    "cpuconv": "tuna.backends.cpuconv:CpuConvBackend",
}
_registered: dict[str, Callable[[], Backend]] = {}


class UnknownBackendError(TunaError):
    """Raised when a session or command names a backend Tuna does not have."""


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make ``get_backend(name)`` return ``factory()`` (tests and plug-ins)."""
    _registered[name] = factory


def backend_names() -> list[str]:
    """The names :func:`get_backend` knows, sorted."""
    return sorted({*_BUILT_IN, *_registered})


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
