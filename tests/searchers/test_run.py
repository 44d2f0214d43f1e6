"""Runs as values: matching points, and the plain-data form a driver stores."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuna.searchers import Run, SearchError

prims = st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
runs = st.builds(
    lambda config, stats, reason: Run(config, stats, valid=reason is None, reason=reason),
    st.dictionaries(st.text(max_size=5), prims, max_size=4),
    st.dictionaries(st.text(max_size=5), prims, max_size=4),
    st.none() | st.text(min_size=1, max_size=10),
)


@given(runs)
def test_round_trip_through_json(run: Run) -> None:
    assert Run.from_dict(json.loads(json.dumps(run.as_dict()))) == run


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"config": [1]},
        {"config": {}, "stats": 3},
        {"config": {}, "valid": "no"},
        {"config": {}, "valid": False},
        {"config": {}, "reason": 5},
    ],
)
def test_malformed_recorded_runs(data: dict[str, Any]) -> None:
    with pytest.raises(SearchError, match="a recorded run is malformed"):
        Run.from_dict(data)


@pytest.mark.parametrize(
    ("config", "point", "matches"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": 1}, {"a": True}, False),
        ({"a": True}, {"a": 1}, False),
        ({"a": 1}, {"b": 1}, False),
        ({"a": "1"}, {"a": 1}, False),
    ],
)
def test_matches(config: dict[str, Any], point: dict[str, Any], matches: bool) -> None:
    assert Run(config).matches(point) is matches


def test_an_invalid_run_needs_a_reason() -> None:
    with pytest.raises(ValueError, match="needs a reason"):
        Run({}, valid=False)
