"""A search's parameter importance: a fit to its best runs."""

from __future__ import annotations

import pytest

from tuna.searches.importance import MIN_RUNS, fitted_importance


@pytest.mark.parametrize(
    "runs_given",
    [
        [({"a": i}, 1.0) for i in range(MIN_RUNS - 1)],  # too few
        [({"a": 1, "b": i}, 1.0) for i in range(0)],  # none
        [({"a": 1}, float(i + 1)) for i in range(MIN_RUNS)],  # nothing varies
    ],
)
def test_too_little_to_fit_is_said_not_fitted(runs_given: list) -> None:
    assert fitted_importance(runs_given) == (
        f"needs {MIN_RUNS} finished runs over parameters that vary"
    )
