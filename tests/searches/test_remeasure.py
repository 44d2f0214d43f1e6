"""A command search validated on a second input set (tuna.searches.remeasure): its front
built and run again here, by its own commands and stored sources, with a setting its
commands read given another value; what cannot be validated so is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.searches.helpers import TWO_BUILDS, bench_session, drain, driving, new_search
from tests.searches.test_strategy import SOLVER, cpuconv_session
from tuna.db import Database
from tuna.errors import TunaError
from tuna.searchers.pareto import Target
from tuna.searchers.strategies import StrategyOptions
from tuna.searches import query
from tuna.searches.strategy import StrategyRequest, create_strategy_search
from tuna.searches.validation import stored_validation, validate_commands

# The sources hold an offset the build adds to b; the run reads its inputs' size n, a
# setting: on the test inputs (n=2) time doubles and accuracy drops by one point; from n=5
# on it fails.
SPEC = {
    "build": "echo $(( $(cat offset.txt) + {b} )) > built.txt",
    "run": 'test {n} -lt 5 || exit 3; echo "t: $(( {a} * $(cat built.txt) * {n} ))"; '
    'echo "acc: $(( 80 + 3 * {a} + $(cat built.txt) / 10 - {n} ))"',
    "owns": "nothing",
    "run_timeout_s": 30,
}
EXACT = {"a": 3, "b": 20}


def _search(db: Database, tmp_path: Path, **kw) -> int:
    sources = tmp_path / "src"
    sources.mkdir(exist_ok=True)
    (sources / "offset.txt").write_text("0\n")
    session = bench_session(db)
    search = new_search(db, session, space=TWO_BUILDS,
                        spec={**SPEC, "source_dir": str(sources)}, base={"n": 1},
                        objective="t", more=(Target("acc", "max"),), **kw)  # fmt: skip
    (sources / "offset.txt").write_text("1000\n")  # changed since: the stored sources count
    with driving(db, session):
        drain(db, session, claim_batch=4)
    return search


def test_the_front_runs_again_with_the_setting_changed_and_is_stored(lite, tmp_path) -> None:
    search = _search(lite, tmp_path, constraints=("acc >= baseline.acc - 4",), baseline=EXACT)
    front = query.pareto(lite, query.find_search(lite, search))
    v = validate_commands(lite, search, {"n": 2})
    assert v.inputs == "test" and v.stats == ("t", "acc")
    assert [r.seq for r in v.runs] == [r.seq for r in front]
    assert v.baseline is not None and v.baseline.seq == -1
    for r in [*v.runs, v.baseline]:
        assert r.config["n"] == 2 and r.reason is None and r.measured is not None
        assert r.measured["t"] == 2 * r.tuned["t"]  # the stored sources: offset 0
        assert r.measured["acc"] == r.tuned["acc"] - 1
        assert r.kept  # every run lost as much as the baseline did
        assert r.predicted is None  # no model chose them
    again = stored_validation(lite, search)
    assert again is not None
    assert [(r.seq, r.measured) for r in again.runs] == [(r.seq, r.measured) for r in v.runs]


def test_a_run_that_fails_on_the_second_inputs_is_not_kept(lite, tmp_path) -> None:
    search = _search(lite, tmp_path)
    v = validate_commands(lite, search, {"n": 9}, inputs="large")
    assert v.inputs == "large"
    assert v.runs and all(not r.kept and r.measured is None for r in v.runs)
    assert all("exit" in (r.reason or "") for r in v.runs), [r.reason for r in v.runs]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "^search 1 \\('s'\\) runs commands: give the second input set as other values of "
         "its settings \\(n\\), e.g. tuna search validate 7 --set data=test.bin$"),
        ({"a": 2}, "^--set a: 'a' is a tuned parameter of search 1 \\('s'\\), which the front "
         "chose; set one of its settings instead \\(n\\)$"),
        ({"m": 2}, "^--set m: search 1 \\('s'\\) has no setting 'm'; its settings are n$"),
        ({"n": 1}, "^search 1 \\('s'\\): n=1 is what it was tuned on; validation measures the "
         "front on a second input set"),
    ],
)  # fmt: skip
def test_settings_that_are_no_second_input_set_are_one_line(lite, tmp_path, settings, message):
    search = _search(lite, tmp_path)
    with pytest.raises(TunaError, match=message):
        validate_commands(lite, search, settings)
    assert stored_validation(lite, search) is None


def test_a_command_reading_no_setting_has_no_second_input_set(lite: Database) -> None:
    session = bench_session(lite)
    search = new_search(lite, session, space=TWO_BUILDS)
    with pytest.raises(
        TunaError,
        match="^search 1 \\('s'\\): its commands read no setting "
        "besides the tuned parameters \\(a, b\\), so there is no second input "
        "set to give them; create the search with a setting for its inputs",
    ):
        validate_commands(lite, search, {"n": 2})


def test_a_strategy_search_has_no_second_input_set(lite: Database) -> None:
    session, config = cpuconv_session(lite)
    search = create_strategy_search(
        lite, StrategyRequest(session, config, SOLVER, StrategyOptions("random", budget=4))
    )
    with pytest.raises(TunaError, match="times a tunable solver's candidates on its one problem"):
        validate_commands(lite, search, {"n": 2})
