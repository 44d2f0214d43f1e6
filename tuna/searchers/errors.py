"""Errors of searches: every one a :class:`~tuna.errors.TunaError` saying what, where, what to do.

They are raised before anything is built or run, so a search refused for bad input has
changed nothing.
"""

from __future__ import annotations

from tuna.errors import TunaError


class SearchError(TunaError):
    """Raised when a search cannot be set up or driven as asked (the base of this module)."""


class ParameterFileError(SearchError):
    """Raised when a parameter file (JSON or Python) cannot be read, parsed or understood.

    ``path`` is the file and ``line_no`` the line to blame when one is known.
    """

    def __init__(self, path: str, reason: str, *, line_no: int | None = None) -> None:
        self.path = path
        self.reason = reason
        self.line_no = line_no
        where = f"{path}:{line_no}" if line_no is not None else path
        super().__init__(f"{where}: {reason}")


class HookError(SearchError):
    """Raised when a ``META_`` hook of a parameter file raises or returns something unusable."""

    def __init__(self, path: str, hook: str, reason: str) -> None:
        self.path = path
        self.hook = hook
        self.reason = reason
        super().__init__(f"{path}: {hook}: {reason}; fix the hook and try again")


class UnknownParameterError(SearchError):
    """Raised when a hook, a searcher or a template uses a name that is not a parameter."""


class SearcherError(SearchError):
    """Raised when a searcher breaks the protocol or raises (e.g. it is sent no Run it needs)."""


class ReplayError(SearchError):
    """Raised when recorded runs do not match what the searcher proposes on replay."""


class ObjectiveError(SearchError):
    """Raised when an objective names a stat the runs never print, or cannot compare runs."""
