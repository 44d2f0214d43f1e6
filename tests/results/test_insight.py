"""tuna.results.insight: the read side's values (the database-backed reads are exercised by
the report's and the dashboard's tests)."""

from __future__ import annotations

import math

import pytest

from tuna.results.insight import geomean


def test_geomean_of_speed_ups():
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean(iter([3.0])) == pytest.approx(3.0)  # any iterable, read once


def test_geomean_leaves_out_what_has_no_logarithm_and_says_none_when_nothing_is_left():
    """A speed-up over a zero time is infinite; a zero or negative ratio is not one."""
    assert geomean([2.0, math.inf, 8.0, 0.0, -1.0, math.nan]) == pytest.approx(4.0)
    assert geomean([]) is None
    assert geomean([math.inf]) is None
