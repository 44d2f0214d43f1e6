"""A study's inputs checked before anything is opened (tuna.searches.studyspec): no database."""

from __future__ import annotations

import json

import pytest

from tuna.search import Float, Int
from tuna.searchers.errors import SearchError
from tuna.searches.studyspec import check_study, with_objectives


def quadratic(params):
    return (params["x"] - 3) ** 2


def test_a_study_is_named_after_its_objective_and_its_space_stored_as_a_parameter_file():
    spec = check_study(quadratic, {"x": [1, 2], "r": Int(1, 8, step=1)}, "maximize", None, 3,
                       None, "t")  # fmt: skip
    assert (spec.name, spec.budget, spec.strategy) == ("quadratic", 3, None)
    assert (spec.objective.stat, spec.objective.goal) == ("t", "max")
    assert json.loads(spec.space_text) == {"x": [1, 2], "r": Int(1, 8, step=1).to_json()}
    assert list(spec.space.names) == ["x", "r"]


@pytest.mark.parametrize(
    "objective, space, direction, budget, name, stat, says",
    [
        (42, {"x": [1]}, "min", None, "s", "value", "is not callable"),
        (None, {"x": [1]}, "down", None, "s", "value", "use 'minimize' or 'maximize'"),
        (None, {"x": [1]}, "min", True, "s", "value", "give at least 1 run"),
        (None, {"x": [1]}, "min", None, "s", " ", "name the stat"),
        (None, {"x": [1]}, "min", None, None, "value", "study name ''"),
        (None, {"x": [1]}, "min", None, "n" * 129, "value", "give 1 to 128 characters"),
        (None, [1], "min", None, "s", "value", "give a dict of each parameter's values"),
        (None, {"x": "abc"}, "min", None, "s", "value", "must be a list of numbers"),
        (None, {"x": Float(0, 1)}, "min", None, "s", "value", "^s.json: parameter 'x'"),
    ],
)
def test_each_bad_input_is_one_search_error(objective, space, direction, budget, name, stat, says):
    with pytest.raises(SearchError, match=says):
        check_study(objective, space, direction, None, budget, name, stat)


def test_without_directions_constraints_or_baseline_the_spec_is_unchanged():
    spec = check_study(None, {"x": [1, 2]}, "min", None, None, "s", "value")
    assert with_objectives(spec, "value", None, (), None) is spec
    both = with_objectives(spec, "value", {"t": "min", "acc": "max"}, (), {"x": 1})
    assert both.objective.named_stats() and both.baseline == {"x": 1}
