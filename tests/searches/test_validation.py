"""The validation stage (tuna.searches.validation): a study's front measured again on a
second input set, predicted beside measured, stored and read back."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from sqlalchemy import func, select

import tuna
from tuna.db.models import SearchValidation
from tuna.searchers.errors import SearchError
from tuna.searches.trial import Trial
from tuna.searches.validation import stored_validation, validate_search

STRATEGY = "Strategy('predictive', space, seed=1, margin=0.02)"
SPACE = {f"layer{i}": list(range(6)) for i in range(3)}
EXACT = dict.fromkeys(SPACE, 0)
COST = (256, 192, 128, 96, 64, 32)
LOSS = (0.0, 0.05, 0.2, 0.5, 1.1, 2.3)
DROP = 0.3  # the test inputs' extra loss of accuracy per level of the last layer


def net(params: dict[str, Any], trial: Trial) -> dict[str, float]:
    """A deterministic three-knob 'network' whose test inputs cost the last layer's
    approximation DROP points of accuracy per level more than the tuning inputs do."""
    levels = [int(params[f"layer{i}"]) for i in range(3)]
    accuracy = 92 - sum(LOSS[v] * (1 + 0.3 * i) for i, v in enumerate(levels))
    if trial.inputs == "test":
        accuracy -= DROP * levels[2]
    return {"mflop": float(sum(COST[v] for v in levels)), "accuracy": round(accuracy, 3)}


def study(db: Any, name: str = "net") -> tuna.TuneResult:
    return tuna.tune(
        net, SPACE, directions={"mflop": "min", "accuracy": "max"},
        constraints=["accuracy >= baseline.accuracy - 2.5"], baseline=EXACT,
        strategy=STRATEGY, storage=db, name=name,
    )  # fmt: skip


def rows(db: Any) -> int:
    with db.session() as s:
        return int(s.execute(select(func.count()).select_from(SearchValidation)).scalar_one())


def test_the_front_is_measured_on_the_test_inputs_and_stored_with_its_predictions(db) -> None:
    result = study(db)
    assert len(result.runs) < len(list(itertools.product(*SPACE.values()))) // 2
    v = tuna.validate(result, net, storage=db)
    assert v.inputs == "test" and v.stats == ("mflop", "accuracy")
    assert [r.config for r in v.runs] == [dict(r.config) for r in result.pareto]
    for r in v.runs:
        assert r.measured is not None and r.reason is None
        assert r.tuned["mflop"] == r.measured["mflop"]
        drop = DROP * r.config["layer2"]
        assert r.measured["accuracy"] == pytest.approx(r.tuned["accuracy"] - drop)
    predicted = [r for r in v.runs if r.predicted is not None]
    assert predicted, "the strategy chose some of the front by prediction"
    assert all(set(r.predicted or {}) == {"mflop", "accuracy"} for r in predicted)
    assert v.baseline is not None and v.baseline.seq == -1 and v.baseline.predicted is None
    assert stored_validation(db, result.search) == v
    assert stored_validation(db, result.search, "other") is None


def test_kept_is_judged_against_the_baseline_measured_on_the_same_inputs(db) -> None:
    result = study(db)
    v = tuna.validate(result, net, storage=db)
    assert v.baseline is not None and v.baseline.measured is not None
    limit = v.baseline.measured["accuracy"] - 2.5
    assert [r.kept for r in v.runs] == [(r.measured or {})["accuracy"] >= limit for r in v.runs]
    assert v.kept != v.runs, "the test inputs' extra loss drops some of the front"


def test_validating_again_replaces_the_rows(db) -> None:
    result = study(db)
    first = tuna.validate(result, net, storage=db)
    again = validate_search(db, result.search, net)
    assert again == first and rows(db) == len(first.runs) + (first.baseline not in first.runs)


def test_a_study_by_name_and_its_objective_as_module_function(db, tmp_path, monkeypatch) -> None:
    result = study(db, name="by-name")
    (tmp_path / "netfn.py").write_text(
        "def measure(params, trial):\n"
        "    return {'mflop': 1.0, 'accuracy': 99.0 if trial.inputs == 'holdout' else 0.0}\n"
    )
    monkeypatch.chdir(tmp_path)
    v = tuna.validate("by-name", "netfn:measure", storage=db, inputs="holdout")
    assert v.search == result.search and all(r.measured == {"mflop": 1.0, "accuracy": 99.0}
                                             for r in v.runs)  # fmt: skip


def test_a_study_of_another_strategy_is_validated_without_predictions(db) -> None:
    space = {"layer0": [0, 1, 5], "layer1": [0, 5], "layer2": [0]}
    two = {"mflop": "min", "accuracy": "max"}
    result = tuna.tune(net, space, directions=two, storage=db, name="every point")
    v = tuna.validate(result, net, storage=db)
    assert len(v.runs) == len(result.pareto) > 1 and v.notes == []
    assert all(r.predicted is None and r.measured is not None for r in v.runs)
    assert v.baseline is None and all(r.kept for r in v.runs)  # no constraint to fail


def fails_on_test(params: dict[str, Any], trial: Trial) -> dict[str, float]:
    if trial.inputs == "test" and params["layer0"] == 0:
        raise RuntimeError("no test inputs for the exact layer")
    return net(params, trial)


def test_a_measurement_that_fails_is_stored_with_its_reason_and_not_kept(db) -> None:
    result = study(db)
    v = tuna.validate(result, fails_on_test, storage=db)
    failed = [r for r in [*v.runs, v.baseline] if r is not None and r.config["layer0"] == 0]
    assert failed and all(r.measured is None and not r.kept for r in failed)
    assert all("RuntimeError: no test inputs" in (r.reason or "") for r in failed)


def one_argument(params: dict[str, Any]) -> float:
    return 1.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"objective": one_argument}, r"^objective one_argument takes params only, so it cannot "
         r"be told which input set to measure on; give it a second argument, trial"),
        ({"inputs": "tune"}, r"^inputs 'tune' is the set the study was tuned on; validation "
         r"measures the front on a second input set"),
        ({"inputs": ""}, r"^inputs '': name the second input set"),
        ({"stats": ["acc"]}, r"^stat 'acc' is not a stat of search \d+'s front \(its runs hold: "
         r"accuracy, mflop\); name one of those$"),
        ({"study": "nope"}, r"^no tuna.tune study is named 'nope' in this database"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_stores_nothing(db, kwargs, message) -> None:
    result = study(db)
    args: dict[str, Any] = {"study": result, "objective": net, **kwargs}
    with pytest.raises(SearchError, match=message) as e:
        tuna.validate(args.pop("study"), args.pop("objective"), storage=db, **args)
    assert "\n" not in str(e.value) and rows(db) == 0
