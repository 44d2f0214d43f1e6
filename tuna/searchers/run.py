"""Values a search passes around: points, configs and the finished :class:`Run`.

A **point** is what a searcher yields: a dict of the parameters it controls (a partial
config). A **config** is the base configuration with every point proposed so far merged in:
what a build or run sees. A :class:`Run` is what the benchmark made of one config, and what a
dynamic searcher is sent back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from tuna.searchers.errors import SearchError

#: A parameter value: what JSON and Python parameter files may list.
Primitive: TypeAlias = "bool | int | float | str"
Point = dict[str, Primitive]
Config = dict[str, Any]

PRIMITIVE_TYPES: tuple[type, ...] = (bool, int, float, str)


def is_primitive(value: object) -> bool:
    """True for a bool, number or string: the values a parameter may take."""
    return isinstance(value, PRIMITIVE_TYPES)


@dataclass(frozen=True)
class Run:
    """One measured config: what ran, what it printed, and whether it counts.

    ``config`` is the full merged config it ran with; ``stats`` the dict parsed from the
    benchmark's output (e.g. ``{"qps": 1200.0, "p95_ms": 8.1}``). ``valid`` is False when the
    build or run failed, timed out, crashed, printed no stats, or the config was refused by
    ``META_is_config_valid``; ``reason`` then says which. A searcher's predicate reads all
    of it, e.g. ``lambda run: run.valid and run.stats["p95_ms"] < 10``.
    """

    config: Mapping[str, Any]
    stats: Mapping[str, Any] = field(default_factory=dict)
    valid: bool = True
    reason: str | None = None

    def __post_init__(self) -> None:
        if not self.valid and not self.reason:
            raise ValueError("an invalid Run needs a reason")

    @classmethod
    def invalid(cls, config: Mapping[str, Any], reason: str, **stats: Any) -> Run:
        """A Run that does not count (failed, timed out, refused), with the reason."""
        return cls(config=dict(config), stats=stats, valid=False, reason=reason)

    def as_dict(self) -> dict[str, Any]:
        """The Run as plain data (JSON-ready when its config and stats are), for storing."""
        return {
            "config": dict(self.config),
            "stats": dict(self.stats),
            "valid": self.valid,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Run:
        """The Run :meth:`as_dict` made (e.g. read back from where a driver recorded it)."""
        config, stats = data.get("config"), data.get("stats", {})
        valid, reason = data.get("valid", True), data.get("reason")
        if (
            not isinstance(config, Mapping)
            or not isinstance(stats, Mapping)
            or not isinstance(valid, bool)
            or not (reason is None or isinstance(reason, str))
            or (not valid and not reason)
        ):
            raise SearchError(
                f"a recorded run is malformed: {dict(data)!r}; a run is "
                '{"config": {...}, "stats": {...}, "valid": true|false, "reason": str|null}'
            )
        return cls(config=dict(config), stats=dict(stats), valid=valid, reason=reason)

    @property
    def cross(self) -> Mapping[str, Any]:
        """The config under the name the tool this follows used for it."""
        return self.config

    def matches(self, point: Mapping[str, Any]) -> bool:
        """True when every parameter of ``point`` has the same value in this Run's config."""
        return all(k in self.config and _same(self.config[k], v) for k, v in point.items())


def _same(a: object, b: object) -> bool:
    # True == 1 in Python; a recorded bool and a proposed int are not the same value.
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b
