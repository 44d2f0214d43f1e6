"""Which history counts for a session: its compatibility and expiry rules (pure).

A session's results are reused by later decisions: ``load_jobs`` skips what is tuned
enough, a search resumes from its measurements and warms up from others, ``tuna best``
and exports pick the fastest known configuration. Each of them asks one question of every
history row — *does this row count for this session?* — and :func:`excluded_by` is the one
place that answers it. The database side (:mod:`tuna.sessions.history`) evaluates it over
the session and platform rows, which are few, and turns the answer into ``IN`` lists and a
time cutoff for the large tables, so SQL and Python never disagree.

Rules, in the order they are checked (the first that fails names the exclusion):

``retired``   a retired session's rows never count (``tuna session retire``);
``backend``, ``arch``, ``num_cu``   always the same as the session's target;
``library``   ``fingerprint`` (the default: the same fingerprint, i.e. library build,
              toolchain, image and environment), ``same`` (same library version and
              commit), ``version`` (same library version, any commit) or ``any``;
``library_min``   and the library version at least this one (``3.2.0`` < ``3.10.0``);
``max_age``   rows taken before the cutoff stop counting: a duration (``30d``, ``12h``)
              back from now, or an ISO date; expiry never deletes a row;
``platform``  platform fields that must hold these values (``gpu.model=MI250X``),
              dotted paths into the platform JSON a measurement links to.

A session's own rows count under every rule but ``max_age`` and ``platform``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tuna.errors import TunaError

LIBRARY_MODES = ("fingerprint", "same", "version", "any")

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class RulesError(TunaError):
    """Raised when a compatibility rule does not parse (bad ``--max-age``, platform field...)."""


class HistorySession(Protocol):
    """What the rules read of a session (``SessionInfo`` has it)."""

    @property
    def id(self) -> int: ...
    @property
    def arch(self) -> str: ...
    @property
    def num_cu(self) -> int: ...
    @property
    def backend(self) -> str: ...
    @property
    def library_version(self) -> str | None: ...
    @property
    def library_commit(self) -> str | None: ...
    @property
    def fingerprint(self) -> str: ...


@dataclass(frozen=True)
class MaxAge:
    """``--max-age``: a duration back from now, or a fixed date; ``text`` is what was given."""

    text: str
    seconds: float | None = None
    since: dt.datetime | None = None

    def cutoff(self, now: dt.datetime) -> dt.datetime:
        """The oldest time that still counts, at ``now`` (both naive, the database's clock):
        the start of the day the age reaches back to. Ages count in whole days (a row
        counts when taken on or after that date) in every command, so that ``best``,
        searches' history and ``tuna history effort`` agree with the skips of ``load_jobs
        --min-trials``, which read per-day effort counts."""
        if self.since is not None:
            oldest = self.since
        else:
            assert self.seconds is not None
            oldest = now - dt.timedelta(seconds=self.seconds)
        return dt.datetime.combine(oldest.date(), dt.time())


def parse_max_age(text: str) -> MaxAge:
    """``30d``, ``12h``, ``90m``, ``2w``, ``45s``, or an ISO date/time (``2026-11-01``)."""
    m = _DURATION.match(text)
    if m:
        seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2).lower()]
        if seconds <= 0:
            raise RulesError(f"--max-age {text!r}: give a positive duration, e.g. 30d or 12h")
        return MaxAge(text.strip(), seconds=seconds)
    try:
        since = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise RulesError(
            f"--max-age {text!r} does not parse: give a duration (30d, 12h, 90m, 2w) or an "
            "ISO date (2026-11-01 or 2026-11-01T12:00)"
        ) from None
    if since.tzinfo is not None:  # the database's clock is naive UTC-or-local: compare naive
        since = since.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return MaxAge(text.strip(), since=since)


def parse_platform_fields(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs (``gpu.model=MI250X``) into the platform rule."""
    fields: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise RulesError(
                f"--platform {pair!r}: write FIELD=VALUE with a dotted field of the platform "
                "JSON, e.g. --platform gpu.model=MI250X"
            )
        fields[key] = value
    return fields


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    """A sort key comparing versions part by part, numbers as numbers (3.2.0 < 3.10.0)."""
    parts = re.split(r"[.\-+_]", version.strip())
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in parts if p)


@dataclass(frozen=True)
class HistoryRules:
    """A session's compatibility and expiry rules (stored as JSON with the session)."""

    library: str = "fingerprint"
    library_min: str | None = None
    max_age: MaxAge | None = None
    platform: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.library not in LIBRARY_MODES:
            raise RulesError(f"--library {self.library!r}: use one of {', '.join(LIBRARY_MODES)}")
        if self.library_min is not None and not version_key(self.library_min):
            raise RulesError(f"--library-min {self.library_min!r}: give a version, e.g. 3.2.0")

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> HistoryRules:
        """The rules stored with a session (None or {}: the defaults)."""
        data = dict(data or {})
        age = data.get("max_age")
        return cls(
            library=data.get("library", "fingerprint"),
            library_min=data.get("library_min"),
            max_age=parse_max_age(age) if age else None,
            platform=dict(data.get("platform") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        """The stored form: only what differs from the defaults."""
        out: dict[str, Any] = {}
        if self.library != "fingerprint":
            out["library"] = self.library
        if self.library_min is not None:
            out["library_min"] = self.library_min
        if self.max_age is not None:
            out["max_age"] = self.max_age.text
        if self.platform:
            out["platform"] = dict(sorted(self.platform.items()))
        return out

    def describe(self) -> str:
        """One line a person reads: ``library fingerprint, max age 30d, platform gpu=...``."""
        parts = [f"library {self.library}"]
        if self.library_min:
            parts.append(f"library >= {self.library_min}")
        if self.max_age:
            parts.append(f"max age {self.max_age.text}")
        parts += [f"platform {k}={v}" for k, v in sorted(self.platform.items())]
        return ", ".join(parts)


def excluded_by(
    rules: HistoryRules,
    target: HistorySession,
    source: HistorySession,
    *,
    retired: bool = False,
    taken: dt.datetime | None = None,
    platform: Mapping[str, Any] | None = None,
    now: dt.datetime | None = None,
) -> str | None:
    """None when a history row of ``source`` counts for ``target`` under ``rules``, else the
    name of the first rule that excludes it (``retired``, ``arch``, ``library``, ...).

    ``taken`` (when the row was measured or written) is checked against ``max_age`` at
    ``now``; ``platform`` (the JSON of the platform it was measured on) against the
    platform fields. Leave either out to decide at the session level only.
    """
    if retired:
        return "retired"
    if source.id != target.id:
        for name in ("backend", "arch", "num_cu"):
            if getattr(source, name) != getattr(target, name):
                return name
        if not _library_matches(rules.library, target, source):
            return "library"
        if rules.library_min is not None and (
            source.library_version is None
            or version_key(source.library_version) < version_key(rules.library_min)
        ):
            return "library_min"
    if taken is not None and rules.max_age is not None:
        if now is None:
            raise ValueError("excluded_by: give now with taken")
        if taken < rules.max_age.cutoff(now):
            return "max_age"
    if platform is not None:
        for key, value in rules.platform.items():
            if platform_field(platform, key) != value:
                return f"platform {key}"
    return None


def _library_matches(mode: str, target: HistorySession, source: HistorySession) -> bool:
    if mode == "fingerprint":
        return source.fingerprint == target.fingerprint
    if mode == "same":
        return (source.library_version, source.library_commit) == (
            target.library_version,
            target.library_commit,
        )
    if mode == "version":
        return source.library_version == target.library_version
    return True


def platform_field(info: Mapping[str, Any], key: str) -> str | None:
    """The value at a dotted path of a platform's JSON, as text (None when absent)."""
    value: Any = info
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)


EXCLUSION_HINTS = {
    "retired": "`tuna session unretire -s S` brings a retired session back",
    "backend": "history of another backend never counts",
    "arch": "history of another arch never counts",
    "num_cu": "history of another CU count never counts",
    "library": "`tuna session rules -s S --library same|version|any` relaxes the library rule",
    "library_min": "`tuna session rules -s S --library-min V` sets the oldest library that counts",
    "max_age": "`tuna session rules -s S --max-age 90d` (or --no-max-age) keeps older rows",
    "platform": "`tuna session rules -s S --no-platform` drops the platform fields",
}


def exclusion_hint(rule: str) -> str:
    return EXCLUSION_HINTS.get(rule.split(" ", 1)[0], "")
