"""Stats from a run's output."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuna.backends.bench import BenchError, StatsFormat

SYSBENCH = """\
SQL statistics:
    queries performed:
        read:                            14000
    transactions:                        1000   (99.67 per sec.)
Latency (ms):
         min:                                    1.21
         95th percentile:                        2.48
"""


@pytest.mark.parametrize(
    ("fmt", "output", "expected"),
    [
        (
            StatsFormat("json"),
            '{"qps": 12, "p95": 8.5, "ok": true}\n',
            {"qps": 12, "p95": 8.5, "ok": True},
        ),
        (StatsFormat("json"), 'warming up\n{"qps": 12}\ndone\n', {"qps": 12}),
        (StatsFormat("json"), '{\n  "qps": 3\n}\n', {"qps": 3}),
        (StatsFormat("json"), "no json here\n", {}),
        (
            StatsFormat("lines"),
            "qps: 12\np95_ms : 8.5\nmode: fast run\n",
            {"qps": 12, "p95_ms": 8.5, "mode": "fast run"},
        ),
        (StatsFormat("lines"), "qps: 1\nqps: 2\n", {"qps": 2}),
        (StatsFormat("lines"), "just text\nurl http://x\n", {}),
        (StatsFormat("auto"), '{"qps": 12}\n', {"qps": 12}),
        (StatsFormat("auto"), "qps: 12\n", {"qps": 12}),
        (
            StatsFormat.regex(
                r"\((?P<tps>[\d.]+) per sec", r"95th percentile:\s+(?P<p95_ms>[\d.]+)"
            ),
            SYSBENCH,
            {"tps": 99.67, "p95_ms": 2.48},
        ),
        (StatsFormat.regex(r"t=(?P<t>\d+)"), "t=1\nt=2\n", {"t": 2}),
        (StatsFormat.regex(r"a=(?P<a>\d+)|b=(?P<b>\d+)"), "a=1\n", {"a": 1}),
    ],
)
def test_parse(fmt: StatsFormat, output: str, expected: dict[str, Any]) -> None:
    assert fmt.parse(output) == expected


def test_sysbench_lines() -> None:
    stats = StatsFormat("lines").parse(SYSBENCH)
    assert stats["95th percentile"] == 2.48
    assert stats["transactions"] == "1000   (99.67 per sec.)"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "xml"}, "stats format 'xml': use one of auto, json, lines, regex"),
        ({"mode": "regex"}, "give at least one pattern"),
        ({"mode": "regex", "patterns": ("qps=(\\d+)",)}, "has no named group"),
        ({"mode": "regex", "patterns": ("(?P<q>",)}, "is not a valid regex"),
    ],
)
def test_bad_formats(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(BenchError, match=message):
        StatsFormat(**kwargs)


names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
values = st.integers(-(10**9), 10**9) | st.floats(allow_nan=False, allow_infinity=False)


@given(st.dictionaries(names, values, min_size=1))
def test_lines_and_json_round_trip(stats: dict[str, Any]) -> None:
    import json

    lines = "".join(f"{k}: {v!r}\n" for k, v in stats.items())
    assert StatsFormat("lines").parse(lines) == stats
    assert StatsFormat("json").parse("noise\n" + json.dumps(stats) + "\n") == stats
