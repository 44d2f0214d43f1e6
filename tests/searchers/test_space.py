"""Parameter files (JSON and Python) as reference/search.md section 1 describes them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tuna.errors import TunaError
from tuna.searchers import (
    HookError,
    ParameterFileError,
    ParameterSpace,
    UnknownParameterError,
    load_parameter_file,
)
from tuna.searchers.space import parse_json_space


def listed(space: ParameterSpace) -> dict[str, list[object]]:
    """Each parameter's listed values (every parameter of these files is a list)."""
    return {n: list(p.choices) for n, p in space.parameters.items()}  # type: ignore[attr-defined]


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": [1, 2], "b": ["x"]}', {"a": [1, 2], "b": ["x"]}),
        ('{"flag": [true, false], "r": [0.5]}', {"flag": [True, False], "r": [0.5]}),
        ('{"empty": []}', {"empty": []}),
        ("{}", {}),
    ],
)
def test_json_space(text: str, expected: dict[str, list[object]]) -> None:
    assert listed(parse_json_space(text)) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": [1, [2]]}', "parameter 'a': item 1 is a nested array"),
        ('{"a": [{"b": 1}]}', "parameter 'a': item 0 is a nested object"),
        ('{"a": [null]}', "parameter 'a': item 0 is a nested null"),
        ('{"a": 3}', "parameter 'a' is a number; each parameter's value must be an array"),
        ('{"a": {"b": [1]}}', "parameter 'a' is an object with 'b'; give exactly one of"),
        ("[1, 2]", "the top level is a array"),
        ('{"a": [1,}', "not valid JSON"),
    ],
)
def test_json_space_refused(text: str, message: str) -> None:
    with pytest.raises(ParameterFileError) as e:
        parse_json_space(text, source="space.json")
    assert str(e.value).startswith("space.json")
    assert message in str(e.value)
    assert isinstance(e.value, TunaError)


def test_json_syntax_error_has_the_line(tmp_path: Path) -> None:
    p = write(tmp_path, "s.json", '{\n  "a": [1, 2],\n  "b": [3,,]\n}\n')
    with pytest.raises(ParameterFileError) as e:
        load_parameter_file(p)
    assert str(e.value).startswith(f"{p}:3: not valid JSON")


PY = """
import math
from tuna.searchers import Bisect

gpu_batch_size = [256, 512]
streams = [1, 2]
server_target_qps = []          # declared, for a searcher to fill in
flags = [True, False]
_private = [1, 2, 3]             # leading underscore: not a parameter
derived = [2 ** k for k in range(3)]
nested = [[1], [2]]              # not a list of primitives: ignored
name = "x"                       # not a list: ignored
pi = math.pi

def helper():                    # not META_: ignored
    return 1

def META_get_no_rebuild_params():
    return ["streams", "server_target_qps"]

def META_is_config_valid(config):
    return config["gpu_batch_size"] * config["streams"] <= 512
"""


def test_python_space(tmp_path: Path) -> None:
    space = load_parameter_file(write(tmp_path, "p.py", PY))
    assert listed(space) == {
        "gpu_batch_size": [256, 512],
        "streams": [1, 2],
        "server_target_qps": [],
        "flags": [True, False],
        "derived": [1, 2, 4],
    }
    assert space.no_rebuild == ("streams", "server_target_qps")
    assert space.build_params == ["gpu_batch_size", "flags", "derived"]
    assert space.is_config_valid({"gpu_batch_size": 256, "streams": 2})
    assert not space.is_config_valid({"gpu_batch_size": 512, "streams": 2})


def test_python_file_may_import_library_as_the_tool_did(tmp_path: Path) -> None:
    text = "from library import Bisect, Step\nx = [1]\n"
    text += "def META_search_callback():\n    from library import Composer\n"
    text += "    return Composer([Step('x', 1, 2, lambda v: v + 1)])\n"
    space = load_parameter_file(write(tmp_path, "p.py", text))
    assert space.names == ["x"]
    assert "library" not in sys.modules
    from tuna.searchers import default_searcher

    assert type(default_searcher(space)).__name__ == "Composer"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("a = [1, 2]\nb = [3,\n", 2, "Python syntax error"),
        ("a = [1]\ndef f(:\n    pass\n", 2, "Python syntax error"),
        ("a = [1]\nb = 1 / 0\n", 2, "running the file raised ZeroDivisionError"),
        ("import no_such_module_here\n", 1, "running the file raised ModuleNotFoundError"),
    ],
)
def test_python_file_errors_name_file_and_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    p = write(tmp_path, "p.py", text)
    with pytest.raises(ParameterFileError) as e:
        load_parameter_file(p)
    assert str(e.value).startswith(f"{p}:{line}: {message}")
    assert e.value.line_no == line


def test_hook_that_raises_names_the_hook(tmp_path: Path) -> None:
    p = write(tmp_path, "p.py", "a = [1]\ndef META_get_no_rebuild_params():\n    return {}['x']\n")
    with pytest.raises(HookError) as e:
        load_parameter_file(p)
    assert str(e.value) == (
        f"{p}: META_get_no_rebuild_params: raised KeyError: 'x' at {p}:3; "
        "fix the hook and try again"
    )


def test_validity_hook_that_raises(tmp_path: Path) -> None:
    p = write(tmp_path, "p.py", "a = [1]\ndef META_is_config_valid(c):\n    return c['zz'] > 1\n")
    space = load_parameter_file(p)
    with pytest.raises(HookError, match=r"META_is_config_valid: raised KeyError: 'zz' at .*:3"):
        space.is_config_valid({"a": 1})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return ['a', 'nope']", "META_get_no_rebuild_params names 'nope', which is not a param"),
        ("return 'a'", "returned 'a'; return a list of parameter names"),
        ("return [1]", "return a list of parameter names (strings)"),
    ],
)
def test_no_rebuild_names_must_be_parameters(tmp_path: Path, body: str, message: str) -> None:
    p = write(tmp_path, "p.py", f"a = [1]\ndef META_get_no_rebuild_params():\n    {body}\n")
    with pytest.raises((UnknownParameterError, HookError)) as e:
        load_parameter_file(p)
    assert message in str(e.value)
    assert str(e.value).startswith(str(p))


def test_unknown_meta_hook_is_refused(tmp_path: Path) -> None:
    p = write(tmp_path, "p.py", "a = [1]\ndef META_is_valid(c):\n    return True\n")
    with pytest.raises(ParameterFileError, match="unknown hook META_is_valid; the hooks are"):
        load_parameter_file(p)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ParameterFileError, match="cannot read the parameter file"):
        load_parameter_file(tmp_path / "missing.py")


def test_space_checks_points() -> None:
    space = ParameterSpace({"a": [1, 2], "b": []})
    assert space.check_point({"a": 3, "b": "x"}) == {"a": 3, "b": "x"}
    with pytest.raises(UnknownParameterError, match="yielded 'c', which is not a parameter"):
        space.check_point({"a": 1, "c": 2}, searcher="Mine")
    with pytest.raises(UnknownParameterError, match="not a dict"):
        space.check_point([1, 2])
    with pytest.raises(UnknownParameterError, match="must be a bool, number or string"):
        space.check_point({"a": [1]})
    assert space.grid == {"a": [1, 2]}


def test_validity_hook_that_returns_nothing(tmp_path: Path) -> None:
    p = write(tmp_path, "p.py", "a = [1]\ndef META_is_config_valid(c):\n    c['a'] > 1\n")
    with pytest.raises(HookError, match="returned None for \\{'a': 1\\}; return True or False"):
        load_parameter_file(p).is_config_valid({"a": 1})


# -- ranges, conditions and constraints (issue #28) ----------------------------------------------

RANGES_JSON = """{
  "algo": ["naive", "tiled"],
  "tile": {"int": [4, 16], "step": 4},
  "lr": {"float": [1e-4, 1e-1], "log": true},
  "frac": {"float": [0, 1], "step": 0.5},
  "unroll": {"values": [1, 2, 4], "when": {"algo": "tiled"}},
  "META_constraints": ["tile * unroll <= 32"]
}"""

RANGES_PY = """
from tuna.search import Categorical, Float, Int

algo = ["naive", "tiled"]
tile = Int(4, 16, step=4)
lr = Float(1e-4, 1e-1, log=True)
frac = Float(0, 1, step=0.5)
unroll = Categorical([1, 2, 4], when={"algo": "tiled"})
META_constraints = ["tile * unroll <= 32"]
"""


def test_json_and_python_declare_the_same_ranges(tmp_path: Path) -> None:
    from tuna.searchers import Categorical, Float, Int

    json_space = load_parameter_file(write(tmp_path, "s.json", RANGES_JSON))
    py_space = load_parameter_file(write(tmp_path, "s.py", RANGES_PY))
    expected = {
        "algo": Categorical(["naive", "tiled"]),
        "tile": Int(4, 16, step=4),
        "lr": Float(1e-4, 1e-1, log=True),
        "frac": Float(0, 1, step=0.5),
        "unroll": Categorical([1, 2, 4], when={"algo": "tiled"}),
    }
    for space in (json_space, py_space):
        assert space.parameters == expected
        assert [c.text for c in space.constraints] == ["tile * unroll <= 32"]
        assert not space.finite and space.conditional
    assert json_space.constraints == py_space.constraints


def test_a_conditional_parameter_is_only_where_its_condition_holds() -> None:
    from tuna.searchers import Categorical, Int

    space = ParameterSpace(
        {
            "algo": ["naive", "tiled"],
            "tile": Int(8, 16, step=8),
            "unroll": Categorical([1, 2], when={"algo": "tiled"}),
        }
    )
    points = list(space.product())
    assert points == [
        {"algo": "naive", "tile": 8},
        {"algo": "naive", "tile": 16},
        {"algo": "tiled", "tile": 8, "unroll": 1},
        {"algo": "tiled", "tile": 8, "unroll": 2},
        {"algo": "tiled", "tile": 16, "unroll": 1},
        {"algo": "tiled", "tile": 16, "unroll": 2},
    ]
    assert space.size() == 6
    # Preferring 'unroll' first still puts it after the parameter its condition names.
    assert space.ordered(["unroll", "tile", "algo"]) == ["tile", "algo", "unroll"]


def test_constraints_refuse_configs_with_their_text_and_the_hook_still_counts(
    tmp_path: Path,
) -> None:
    text = (
        "a = [1, 2, 3]\nb = [1, 2]\nMETA_constraints = ['a * b <= 4']\n"
        "def META_is_config_valid(c):\n    return c['a'] != 1\n"
    )
    space = load_parameter_file(write(tmp_path, "p.py", text))
    assert space.refusal({"a": 3, "b": 2}) == "refused by constraint 'a * b <= 4'"
    assert space.refusal({"a": 1, "b": 2}) == "refused by META_is_config_valid"
    assert space.refusal({"a": 2, "b": 2}) is None
    from tuna.searchers import dry_run

    plan = dry_run(space)
    assert [p.config for p in plan.proposals] == [
        {"a": 2, "b": 1},
        {"a": 2, "b": 2},
        {"a": 3, "b": 1},
    ]
    assert sorted(r.reason for r in plan.refused) == [  # type: ignore[type-var]
        "refused by META_is_config_valid",
        "refused by META_is_config_valid",
        "refused by constraint 'a * b <= 4'",
    ]


def test_a_searcher_must_propose_inside_a_range() -> None:
    from tuna.searchers import Float, Int

    space = ParameterSpace({"t": Int(4, 64, step=4), "x": Float(0, 1)}, source="s.py")
    assert space.check_point({"t": 8, "x": 0.5}) == {"t": 8, "x": 0.5}
    with pytest.raises(UnknownParameterError, match=r"yielded t=10, which is not a value of Int"):
        space.check_point({"t": 10}, searcher="Mine")
    with pytest.raises(UnknownParameterError, match=r"yielded x=1.5, which is not a value of"):
        space.check_point({"x": 1.5})


# Every bad range, condition or constraint: one line naming the file and the parameter.
BAD_RANGES = [
    ('{"tile": {"int": [64, 4]}}', "tile = Int(64, 4)",
     "parameter 'tile': the range [64, 4] is empty (lo is above hi); give lo <= hi"),
    ('{"tile": {"int": [4, 64], "step": 0}}', "tile = Int(4, 64, step=0)",
     "parameter 'tile': step 0: an Int's step is a whole number of at least 1"),
    ('{"x": {"float": [0, 1], "step": -0.5}}', "x = Float(0, 1, step=-0.5)",
     "parameter 'x': step -0.5: a Float's step is a number above 0"),
    ('{"lr": {"float": [0, 1], "log": true}}', "lr = Float(0, 1, log=True)",
     "parameter 'lr': log=True needs lo > 0"),
    ('{"tile": {"int": [1.5, 4]}}', "tile = Int(1.5, 4)",
     "parameter 'tile': Int lo must be a whole number, not 1.5 (use Float for reals)"),
    ('{"u": {"values": [1], "when": {"algo": "t"}}}', "u = Categorical([1], when={'algo': 't'})",
     "parameter 'u' is conditional on 'algo', which is not a parameter declared before it"),
    ('{"u": {"values": [1], "when": {"algo": "t"}}, "algo": ["t"]}',
     "u = Categorical([1], when={'algo': 't'})\nalgo = ['t']",
     "parameter 'u' is conditional on 'algo', which is not a parameter declared before it "
     "(the parameters before it are (none)); declare 'algo' first"),
    ('{"algo": ["a"], "u": {"values": [1], "when": {"algo": "b"}}}',
     "algo = ['a']\nu = Categorical([1], when={'algo': 'b'})",
     "parameter 'u' is conditional on algo='b', a value 'algo' never takes"),
    ('{"n": {"int": [1, 4]}, "u": {"int": [1, 2], "when": {"n": 9}}}',
     "n = Int(1, 4)\nu = Int(1, 2, when={'n': 9})",
     "parameter 'u' is conditional on n=9, a value 'n' never takes (Int(1, 4))"),
    ('{"u": {"int": [1, 2], "when": {"u": 1}}}', "u = Int(1, 2, when={'u': 1})",
     "parameter 'u' is conditional on itself"),
    ('{"a": [1], "META_constraints": ["a * b <= 4"]}',
     "a = [1]\nMETA_constraints = ['a * b <= 4']",
     "META_constraints: constraint 'a * b <= 4' names 'b', which is not a parameter "
     "(the parameters are 'a'); fix the name or declare the parameter"),
    ('{"a": [1], "META_constraints": ["__import__(\'os\').getcwd() == a"]}',
     "a = [1]\nMETA_constraints = [\"__import__('os').getcwd() == a\"]",
     "META_constraints: constraint \"__import__('os').getcwd() == a\" uses a function call, "
     "which a constraint may not"),
    ('{"a": [1], "META_constraints": "a < 2"}', "a = [1]\nMETA_constraints = 'a < 2'",
     "META_constraints"),
]  # fmt: skip


@pytest.mark.parametrize(("json_text", "py_text", "message"), BAD_RANGES)
def test_a_bad_range_condition_or_constraint_is_one_line(
    tmp_path: Path, json_text: str, py_text: str, message: str
) -> None:
    header = "from tuna.search import Categorical, Float, Int\n"
    for name, text in (("s.json", json_text), ("s.py", header + py_text)):
        p = write(tmp_path, name, text)
        with pytest.raises(ParameterFileError) as e:
            load_parameter_file(p)
        said = str(e.value)
        assert said.startswith(f"{p}: "), said
        assert message in said
        assert "\n" not in said


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"t": {"int": [1, 4], "stpe": 2}}', "parameter 't': unknown key 'stpe'; a 'int' param"),
        ('{"t": {"int": [1, 4], "float": [1, 2]}}', "parameter 't' is an object with 'int',"),
        ('{"t": {"step": 2}}', 'give exactly one of "values", "int" or "float"'),
        ('{"t": {"int": [1, 2, 3]}}', "parameter 't': \"int\" is [1, 2, 3]; give the bounds"),
        ('{"t": {"int": "1..4"}}', "give the bounds as [lo, hi]"),
        ('{"t": {"values": [1], "when": "a"}}', "parameter 't': \"when\" is a string; give an"),
        ('{"t": {"values": 3}}', "parameter 't': \"values\" is a number; give an array"),
        ('{"t": {"values": [[1]]}}', "parameter 't': item 0 is a nested array"),
        ('{"t": {"int": [1, 4], "log": "yes"}}', "parameter 't': log must be true or false"),
        ('{"t": {"float": [0, 1], "step": "x"}}', "parameter 't': step 'x'"),
        ('{"a": [1], "u": {"values": [2], "when": {"a": [[1]]}}}', "its condition on 'a' lists"),
        ('{"a": [1], "META_constraints": [3]}', "constraint 3 is not an expression"),
    ],
)
def test_json_range_forms_refused(text: str, message: str) -> None:
    with pytest.raises(ParameterFileError) as e:
        parse_json_space(text, source="s.json")
    assert str(e.value).startswith("s.json: ")
    assert message in str(e.value)


def test_a_python_parameter_that_is_not_a_list_or_range_is_refused() -> None:
    with pytest.raises(ParameterFileError, match="parameter 'x' is 3; give a list of values"):
        ParameterSpace({"x": 3}, source="p.py")  # type: ignore[dict-item]
    with pytest.raises(ParameterFileError, match="p.py: parameter 'u': when must map"):
        from tuna.searchers import Int

        ParameterSpace({"u": Int(1, 2, when="a")}, source="p.py")  # type: ignore[arg-type]


def test_a_constraint_moved_to_a_space_without_its_parameter_is_refused() -> None:
    import dataclasses

    space = ParameterSpace({"a": [1], "b": [2]}, constraints=("a < b",), source="s.json")  # type: ignore[arg-type]
    assert dataclasses.replace(space, no_rebuild=("a",)).constraints == space.constraints
    with pytest.raises(ParameterFileError, match="constraint 'a < b' names 'b', which is not"):
        dataclasses.replace(space, parameters={"a": [1]})
