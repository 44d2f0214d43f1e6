"""The one error tree of Tuna.

Every error a user can cause or meet is a ``TunaError``; the CLI turns one into
``Error: <message>`` and exit status 1. Library exceptions are translated at the
boundary with ``raise ... from e`` so their cause stays in the traceback.
"""

from __future__ import annotations


class TunaError(Exception):
    """Raised for any failure Tuna reports to a user: the message says what, where, what to do."""


class ConfigurationError(TunaError):
    """Raised when settings from the environment are missing, contradictory or malformed."""


class DriverLineError(TunaError):
    """Raised when a MIOpenDriver command line cannot be parsed.

    ``flag`` names the offending flag when one is to blame, ``line_no`` the line of
    the input file when the line came from one.
    """

    def __init__(
        self,
        reason: str,
        *,
        flag: str | None = None,
        line_no: int | None = None,
        line: str | None = None,
    ) -> None:
        self.reason = reason
        self.flag = flag
        self.line_no = line_no
        self.line = line
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"line {self.line_no}: " if self.line_no is not None else ""
        return f"{where}{self.reason}"

    def at_line(self, line_no: int, line: str) -> DriverLineError:
        """Return a copy of this error located at ``line_no`` of an input file."""
        return DriverLineError(self.reason, flag=self.flag, line_no=line_no, line=line)


class DbKeyError(TunaError):
    """Raised when a MIOpen db key (find-db dash key or perf-db x key) cannot be parsed."""


class DatabaseError(TunaError):
    """Raised when the database cannot be reached or a statement fails, not by the user's fault."""


class SchemaOutOfDateError(DatabaseError):
    """Raised when the database schema is older (or newer) than this version of Tuna expects."""


class TransientDatabaseError(DatabaseError):
    """Raised when a deadlock, lock-wait timeout or busy database outlasted every retry."""


class ImportRefusedError(TunaError):
    """Raised when an import finds bad input lines and so imports nothing.

    ``bad`` holds one ``DriverLineError`` per bad line, each located at its line number.
    """

    def __init__(self, bad: list[DriverLineError], source: str) -> None:
        self.bad = bad
        self.source = source
        lines = "\n".join(f"  {e}" for e in bad)
        super().__init__(
            f"{source}: {len(bad)} bad line(s); nothing was imported:\n{lines}\n"
            "Fix the lines above, or pass --skip-bad to import the good lines only."
        )


class NotFoundError(TunaError):
    """Raised when a named thing (session, tag, config, machine) does not exist."""


class MissingExtraError(TunaError):
    """Raised when a command needs an optional dependency (an extra) that is not installed."""


class BackendError(TunaError):
    """Raised when a backend cannot do what it was asked: its library's helper failed, a
    kernel or benchmark did not build, a search's settings are not ones it runs. Each
    backend's own errors are under it (miopen's FinError, cpuconv's BuildError, bench's
    BenchError, cuda's DeviceError...): ``except BackendError`` takes any of them."""
