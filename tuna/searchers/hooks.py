"""The ``META_`` hooks of a Python parameter file: calling them, and ``import library``.

A hook is the user's own code: whatever it raises becomes one :class:`HookError` naming the
file and the hook (with the file's line when the traceback runs through it).
"""

from __future__ import annotations

import inspect
import sys
import traceback
from collections.abc import Callable
from typing import Any

from tuna.searchers.errors import HookError

HOOKS = ("META_get_no_rebuild_params", "META_is_config_valid", "META_search_callback")


def call_hook(source: str, name: str, hook: Callable[..., Any], *args: Any) -> Any:
    """Call a ``META_`` hook; anything it raises becomes a :class:`HookError` naming it."""
    try:
        with library_alias():
            return hook(*args)
    except Exception as e:  # the user's code: anything may come out of it
        raise HookError(source, name, f"raised {_exception(e, source)}") from e


def search_callback_arity(callback: Callable[..., Any]) -> int:
    """0 for ``META_search_callback()`` (returns a searcher), 1 for the ``(past_runs)`` form."""
    try:
        sig = inspect.signature(callback)
    except (TypeError, ValueError):
        return 0
    required = [
        p
        for p in sig.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return len(required)


class library_alias:
    """Make ``import library`` mean :mod:`tuna.searchers` while a parameter file runs."""

    def __enter__(self) -> None:
        self._had = "library" in sys.modules
        self._old = sys.modules.get("library")
        # The package is loaded whenever this module is (Python runs a package's
        # __init__ before its modules): no import of it from here, where it is half done.
        sys.modules["library"] = sys.modules[__package__ or "tuna.searchers"]

    def __exit__(self, *exc: object) -> None:
        if self._had and self._old is not None:
            sys.modules["library"] = self._old
        else:
            sys.modules.pop("library", None)


def _exception(e: BaseException, source: str) -> str:
    line = line_in(e, source)
    at = f" at {source}:{line}" if line is not None else ""
    return f"{type(e).__name__}: {e}{at}"


def line_in(e: BaseException, source: str) -> int | None:
    """The innermost line of ``source`` in ``e``'s traceback, if it ran through the file."""
    line = None
    for frame in traceback.extract_tb(e.__traceback__):
        if frame.filename == source:
            line = frame.lineno
    return line
