"""Creating a search: every bad input of issue #15 is refused with a clear error and writes
nothing; a good one stores the search with its objective stat required of every run."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from tests.searches.helpers import SPEC, TWO_BUILDS, bench_session, new_search
from tuna.db import Database
from tuna.db.models import Job, Search, SearchRun
from tuna.errors import TunaError
from tuna.searches import SearchRequest, check_request, make_searcher
from tuna.searches.create import load_space


def _count(db: Database) -> tuple[int, int, int]:
    with db.session() as s:
        return tuple(  # type: ignore[return-value]
            s.execute(select(func.count()).select_from(m)).scalar_one()
            for m in (Search, SearchRun, Job)
        )


BAD = [
    # (what, keyword arguments of new_search, expected message)
    (
        "nested values in a JSON space",
        {"space": '{"sizes": [[1, 2]]}', "space_file": "space.json"},
        r"space.json: parameter 'sizes': item 0 is a nested array",
    ),
    (
        "a Python space with a syntax error",
        {"space": "a = [1,\nb = ", "space_file": "broken.py"},
        r"broken.py:\d+: Python syntax error",
    ),
    (
        "a META_ hook that raises",
        {
            "space": "a = [1]\ndef META_is_config_valid(c):\n    return c['nope']\n",
            "spec": {"run": "echo {a}"},
        },
        r"META_is_config_valid: raised KeyError",
    ),
    (
        "no-rebuild names that are not parameters",
        {"space": "a = [1]\ndef META_get_no_rebuild_params():\n    return ['rate']\n"},
        r"META_get_no_rebuild_params names 'rate', which is not a parameter",
    ),
    (
        "a searcher yielding unknown parameters",
        {
            "space": "a = [1]",
            "searcher": "Step('rate', 1, 4, lambda x: x * 2)",
            "spec": {"run": "echo {a}"},
        },
        r"yielded 'rate', which is not a parameter",
    ),
    (
        "templates naming unknown parameters",
        {"space": "a = [1]", "spec": {"run": "./bench {a} {threads}"}},
        r"run command './bench \{a\} \{threads\}' names 'threads'",
    ),
    (
        "a build command naming a runtime-only parameter",
        {"spec": {"build": "make A={a}", "run": "./bench {b}"}},
        r"build command 'make A=\{a\}' names runtime-only parameter\(s\) 'a'",
    ),
    (
        "a searcher expression that does not evaluate",
        {"searcher": "Bisekt('a', 1, 3, 1, None)"},
        r"searcher \"Bisekt.*NameError",
    ),
    (
        "a range whose lo is above its hi",
        {"space": '{"a": {"int": [8, 1]}, "b": [10]}', "space_file": "space.json"},
        r"^space.json: parameter 'a': the range \[8, 1\] is empty \(lo is above hi\)",
    ),
    (
        "a step of 0",
        {"space": "from tuna.search import Int\na = Int(1, 8, step=0)\nb = [1]\n"},
        r"^params.py: parameter 'a': step 0: an Int's step is a whole number of at least 1$",
    ),
    (
        "a log range from 0",
        {"space": '{"a": [1], "b": {"float": [0, 1], "log": true}}', "space_file": "s.json"},
        r"^s.json: parameter 'b': log=True needs lo > 0",
    ),
    (
        "a conditional on a missing parameter",
        {
            "space": '{"a": [1], "b": {"values": [1], "when": {"algo": "x"}}}',
            "space_file": "s.json",
        },
        r"^s.json: parameter 'b' is conditional on 'algo', which is not a parameter",
    ),
    (
        "a constraint naming an unknown parameter",
        {"space": "a = [1]\nb = [10]\nMETA_constraints = ['a * c < 3']\n"},
        r"^params.py: META_constraints: constraint 'a \* c < 3' names 'c', which is not a param",
    ),
    (
        "a constraint using a forbidden construct",
        {"space": '{"a": [1], "b": [10], "META_constraints": ["open(a)"]}', "space_file": "s.json"},
        r"^s.json: META_constraints: constraint 'open\(a\)' uses a function call",
    ),
    (
        "a continuous range for the exhaustive search",
        {"space": '{"a": [1], "b": {"float": [0.5, 2]}}', "space_file": "s.json"},
        r"^s.json: parameter 'b' is Float\(0.5, 2\), a continuous range, so the exhaustive",
    ),
    (
        "a continuous range for a named product",
        {
            "space": '{"a": [1], "b": {"float": [0.5, 2]}}',
            "space_file": "s.json",
            "searcher": "CartesianProduct(space)",
        },
        r"^s.json: parameter 'b' is Float\(0.5, 2\), a continuous range",
    ),
    ("no budget left", {"budget": 0}, r"budget 0: give at least 1 run"),
    ("an unknown goal", {"goal": "most"}, r"objective goal 'most': use min or max"),
    ("a bad stats format", {"spec": {**SPEC, "stats": {"mode": "xml"}}}, r"stats format 'xml'"),
]


@pytest.mark.parametrize(("what", "kw", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_refused_and_changes_nothing(lite, what, kw, message):
    session = bench_session(lite)
    before = _count(lite)
    with pytest.raises(TunaError, match=message) as e:
        new_search(lite, session, **kw)
    assert "\n" not in str(e.value)
    assert _count(lite) == before


def test_a_name_is_unique_per_session(lite):
    session = bench_session(lite)
    first = new_search(lite, session, name="x")
    with pytest.raises(TunaError, match=rf"already has a search named 'x' \(search {first}\)"):
        new_search(lite, session, name="x")
    with pytest.raises(TunaError, match="session 99 does not exist"):
        new_search(lite, 99, name="y")


def test_a_search_is_stored_with_its_text_and_required_objective(lite):
    session = bench_session(lite)
    sid = new_search(lite, session, objective="t", goal="max", budget=4, parallelism=2)
    with lite.session() as s:
        row = s.get(Search, sid)
        assert row is not None
        assert (row.space_text, row.state, row.budget, row.parallelism) == (
            TWO_BUILDS,
            "active",
            4,
            2,
        )
        assert row.objective == {"stat": "t", "goal": "max", "valid": None}
        assert row.spec["required_stats"] == ["t"]
    assert _count(lite)[1:] == (0, 0)  # nothing enqueued before a driver runs


def test_a_space_loaded_runtime_only_rebuilds_for_no_parameter():
    """What a backend's runtime_only says of a search's spec (a bench search calling a
    Python function): the file's META_get_no_rebuild_params (a) no longer decides."""
    assert load_space("p.py", TWO_BUILDS).no_rebuild == ("a",)
    assert set(load_space("p.py", TWO_BUILDS, runtime_only=True).no_rebuild) == {"a", "b"}


def test_the_searcher_expression_sees_tuna_search_the_space_and_the_parameters():
    space = load_space("p.py", TWO_BUILDS)
    searcher = make_searcher("Random(space, 2, seed=3)", space)
    assert type(searcher).__name__ == "Random"
    assert type(make_searcher("CartesianProduct({'a': a})", space)).__name__ == "CartesianProduct"
    assert make_searcher(None, space) is None


def test_a_strategy_by_name_searches_a_parameter_files_space_for_its_objective():
    """--searcher tpe (issue #28): Optuna's sampler over the file's parameters, optimising
    the search's objective; Strategy(...) takes a seed and a round size; a strategy of
    candidates (hillclimb) searches the file's cartesian product."""
    from tuna.searchers import Objective
    from tuna.searchers.strategies import RoundSearcher
    from tuna.searchers.strategies.sampled_space import SampledSpace

    space = load_space("p.py", TWO_BUILDS)
    searcher = make_searcher("tpe", space, Objective("t", "max"))
    assert isinstance(searcher, SampledSpace) and searcher.name == "tpe"
    assert (searcher.objective.stat, searcher.objective.goal) == ("t", "max")
    seeded = make_searcher("Strategy('nsga2', space, seed=3, round_size=2)", space)
    assert isinstance(seeded, SampledSpace) and (seeded.seed, seeded.round_size) == (3, 2)
    climb = make_searcher("hillclimb", space, Objective("t"))
    assert isinstance(climb, RoundSearcher) and len(climb.space) == space.size()
    with pytest.raises(TunaError, match=r"strategy's name \(exhaustive, .*, tpe, cmaes, gp"):
        make_searcher("tpee", space)
    with pytest.raises(TunaError, match="^unknown strategy 'tpee'; the strategies are"):
        make_searcher("Strategy('tpee', space)", space)


def test_the_check_gives_the_dry_run():
    plan = check_request(
        SearchRequest(
            session=1,
            name="p",
            space_file="p.py",
            space_text=TWO_BUILDS,
            spec=SPEC,
            objective_stat="t",
        )  # fmt: skip
    ).plan
    assert plan.render()[-1] == "builds: 2 for 6 runs (naive order: 6)"
