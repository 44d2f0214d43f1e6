"""Constraints parsed with ast and evaluated without eval."""

from __future__ import annotations

import pytest

from tuna.searchers.constraint import parse_constraint
from tuna.searchers.errors import ObjectiveError

BASE = {"accuracy": 90.0, "time_ms": 10.0}


@pytest.mark.parametrize(
    ("text", "stats", "holds"),
    [
        ("qos_loss <= 3", {"qos_loss": 3}, True),
        ("qos_loss <= 3", {"qos_loss": 3.01}, False),
        ("accuracy >= baseline.accuracy - 0.5", {"accuracy": 89.5}, True),
        ("accuracy >= baseline.accuracy - 0.5", {"accuracy": 89.4}, False),
        ("0 < x <= 3", {"x": 3}, True),
        ("0 < x <= 3", {"x": 0}, False),
        ("time_ms * 2 < baseline.time_ms", {"time_ms": 4.9}, True),
        ("time_ms / baseline.time_ms <= 0.5", {"time_ms": 5}, True),
        ("abs(a - b) < 1", {"a": 3, "b": 2.5}, True),
        ("max(a, b) == 3", {"a": 3, "b": 2}, True),
        ("-a != 1", {"a": 1}, True),
        ("qos_loss <= 3", {}, False),  # missing: not met
        ("qos_loss <= 3", {"qos_loss": "low"}, False),  # not a number
        ("qos_loss <= 3", {"qos_loss": True}, False),  # a bool is no number
        ("a / b < 1", {"a": 1, "b": 0}, False),  # division by zero: not met
    ],
)
def test_holds(text: str, stats: dict[str, object], holds: bool) -> None:
    assert parse_constraint(text).holds(stats, BASE) is holds


def test_names() -> None:
    c = parse_constraint("accuracy >= baseline.accuracy - abs(qos_loss)")
    assert c.stats == {"accuracy", "qos_loss"}
    assert c.baseline_stats == {"accuracy"}


def test_why_not() -> None:
    c = parse_constraint("accuracy >= baseline.accuracy - 0.5")
    assert c.unmet({"accuracy": 80}, BASE) == "accuracy >= baseline.accuracy - 0.5: not met"
    assert c.unmet({"accuracy": 80}, None) == (
        "accuracy >= baseline.accuracy - 0.5: no baseline measured"
    )
    assert (
        c.unmet({}, BASE) == "accuracy >= baseline.accuracy - 0.5: the run has no number 'accuracy'"
    )
    assert c.unmet({"accuracy": 90}, BASE) is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("qos_loss <=", "not an expression"),
        ("qos_loss", "not a comparison"),
        ("__import__('os').system('true') == 0", "is not a function a constraint may call"),
        ("a.b < 1", "only baseline.NAME may have a dot"),
        ("baseline < 1", "name one of the baseline's stats"),
        ("a in [1, 2]", "the comparison In is not allowed"),
        ("a ** 2 < 1", "the operator Pow is not allowed"),
        ("a < 'x'", "'x' is not a number"),
        ("a < True", "True is not a number"),
        ("not a < 1", "not a comparison"),
        ("(lambda: 1)() < 2", "is not a function a constraint may call"),
        ("a[0] < 1", "is not allowed"),
        ("abs(a, key=1) < 1", "is not a function a constraint may call"),
    ],
)
def test_refused_in_one_line(text: str, says: str) -> None:
    with pytest.raises(ObjectiveError) as e:
        parse_constraint(text)
    message = str(e.value)
    assert says in message
    assert "\n" not in message
    assert message.endswith("'accuracy >= baseline.accuracy - 0.5'")
