"""Stats from a run's output: named regex groups, ``key: value`` lines, or one JSON object.

The formats (``StatsFormat.mode``):

* ``json``: one JSON object — the whole output, or else the last line of it that is one.
  Its properties are the stats (nested values kept as they are).
* ``lines``: every line ``key: value`` (a colon then a space; the key any text without a
  colon, trimmed; e.g.
  ``p95_ms: 8.1`` or ``95th percentile: 1.23``); a later line wins.
* ``regex``: one or more patterns with named groups, searched over the whole output line by
  line (``re.MULTILINE``); each match's named groups are stats, a later match wins. E.g.
  ``transactions:\\s+\\d+\\s+\\((?P<tps>[\\d.]+) per sec`` for sysbench.
* ``auto`` (the default): ``json`` if the output has a JSON object, else ``lines``.

A value that reads as a number (``12``, ``8.5``, ``1e3``) becomes one; the rest stay strings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tuna.backends.bench.templates import BenchError

Mode = Literal["auto", "json", "lines", "regex"]
MODES: tuple[str, ...] = ("auto", "json", "lines", "regex")

_LINE = re.compile(r"^[ \t]*([^:\n]*?[^:\s])[ \t]*:[ \t]+(\S.*?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class StatsFormat:
    """How to read stats from a run's output; see the module docstring."""

    mode: Mode = "auto"
    patterns: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise BenchError(f"stats format {self.mode!r}: use one of {', '.join(MODES)}")
        if self.mode == "regex":
            if not self.patterns:
                raise BenchError("stats format regex: give at least one pattern")
            for p in self.patterns:
                try:
                    rx = re.compile(p)
                except re.error as e:
                    raise BenchError(f"stats pattern {p!r} is not a valid regex: {e}") from e
                if not rx.groupindex:
                    raise BenchError(
                        f"stats pattern {p!r} has no named group; name what it captures, "
                        "e.g. (?P<qps>[0-9.]+)"
                    )

    @classmethod
    def regex(cls, *patterns: str) -> StatsFormat:
        return cls("regex", tuple(patterns))

    def parse(self, output: str) -> dict[str, Any]:
        """The stats in ``output`` (an empty dict when it has none)."""
        if self.mode == "regex":
            return parse_regex(output, self.patterns)
        if self.mode == "json":
            return parse_json(output) or {}
        if self.mode == "lines":
            return parse_lines(output)
        found = parse_json(output)
        return found if found is not None else parse_lines(output)


def to_value(text: str) -> Any:
    """``"12"`` -> 12, ``"8.5"`` -> 8.5, anything else unchanged."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_json(output: str) -> dict[str, Any] | None:
    """The JSON object that is the output, or else its last line that is one; None if none."""
    candidates = [output.strip()] + [ln.strip() for ln in reversed(output.splitlines())]
    for c in candidates:
        if not c.startswith("{"):
            continue
        try:
            value = json.loads(c)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def parse_lines(output: str) -> dict[str, Any]:
    """Every ``key: value`` line as a stat."""
    return {m.group(1): to_value(m.group(2)) for m in _LINE.finditer(output)}


def parse_regex(output: str, patterns: Sequence[str]) -> dict[str, Any]:
    """The named groups of every match of ``patterns``."""
    stats: dict[str, Any] = {}
    for p in patterns:
        for m in re.finditer(p, output, re.MULTILINE):
            stats.update({k: to_value(v) for k, v in m.groupdict().items() if v is not None})
    return stats
