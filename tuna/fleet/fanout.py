"""Doing one thing on many hosts at once: every host's result, and one error at the end."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tuna.fleet.errors import FleetError
from tuna.fleet.ssh import Host

T = TypeVar("T")

MAX_PARALLEL = 32


@dataclass(frozen=True)
class HostOutcome(Generic[T]):
    """What ``fn`` gave for one host: a value, or the error it raised."""

    host: Host
    value: T | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


__all__ = ["FleetError", "HostOutcome", "HostsFailedError", "fan_out", "raise_failures"]


class HostsFailedError(FleetError):
    """Raised once, after every host was tried, when some hosts failed."""

    def __init__(self, what: str, failures: Sequence[HostOutcome[Any]]) -> None:
        self.failures = list(failures)
        lines = [f"{what} failed on {len(self.failures)} host(s):"]
        lines += [f"  {f.host}: {_message(f.host, f.error)}" for f in self.failures]
        super().__init__("\n".join(lines))


def _message(host: Host, error: BaseException | None) -> str:
    text = str(error) or type(error).__name__
    prefix = f"{host}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


def fan_out(
    hosts: Sequence[Host], fn: Callable[[Host], T], *, parallel: int = MAX_PARALLEL
) -> list[HostOutcome[T]]:
    """Call ``fn(host)`` for every host in parallel threads; outcomes in ``hosts`` order.

    An exception from ``fn`` is kept as that host's outcome, so one bad host never hides
    the others' results.
    """

    def one(host: Host) -> HostOutcome[T]:
        try:
            return HostOutcome(host, value=fn(host))
        except Exception as e:  # reported per host by the caller
            return HostOutcome(host, error=e)

    if not hosts:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(hosts)))) as pool:
        return list(pool.map(one, hosts))


def raise_failures(outcomes: Sequence[HostOutcome[T]], what: str) -> None:
    """Raise one :class:`HostsFailedError` naming every failed host, if any failed."""
    failed = [o for o in outcomes if not o.ok]
    if failed:
        raise HostsFailedError(what, failed)
