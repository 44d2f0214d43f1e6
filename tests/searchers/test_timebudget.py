"""A search's wall-clock budget: durations as written, and the budget on a fake clock."""

from __future__ import annotations

import pytest

from tuna.searchers.errors import SearchError
from tuna.searchers.timebudget import TimeBudget, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (90, 90.0),
        (0.5, 0.5),
        ("90", 90.0),
        ("90s", 90.0),
        ("10m", 600.0),
        ("1h30m", 5400.0),
        ("1h 30m", 5400.0),
        ("2.5h", 9000.0),
        ("1d", 86400.0),
        ("10M", 600.0),
    ],
)
def test_durations(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-5", "0s", "abc", "10x", "1h30", "m", True, -1.0])
def test_a_bad_duration_is_one_clear_error(text: object) -> None:
    with pytest.raises(SearchError) as e:
        parse_duration(text, "--time-budget")  # type: ignore[arg-type]
    assert str(e.value) == (
        f"--time-budget {text!r}: give a duration above 0, e.g. 90 (seconds), 90s, 10m, 1h30m or 2h"
    )


@pytest.mark.parametrize(
    ("seconds", "text"), [(600, "10m"), (5400, "1h30m"), (90, "1m30s"), (2.5, "2.5s"), (3, "3s")]
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_a_budget_on_a_fake_clock() -> None:
    now = [100.0]
    budget = TimeBudget(60.0, used=15.0, clock=lambda: now[0])
    assert not budget.spent and budget.elapsed == 15.0
    now[0] += 44.0
    assert not budget.spent
    now[0] += 1.0
    assert budget.spent and budget.elapsed == 60.0
    assert budget.reason(7) == "time budget of 1m spent after 7 run(s)"
    assert budget.reason(1, "timeout") == "timeout of 1m spent after 1 run(s)"
