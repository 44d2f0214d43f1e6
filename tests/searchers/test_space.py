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
    assert parse_json_space(text).parameters == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": [1, [2]]}', "parameter 'a': item 1 is a nested array"),
        ('{"a": [{"b": 1}]}', "parameter 'a': item 0 is a nested object"),
        ('{"a": [null]}', "parameter 'a': item 0 is a nested null"),
        ('{"a": 3}', "parameter 'a' is a number; each parameter's value must be an array"),
        ('{"a": {"b": [1]}}', "parameter 'a' is a object"),
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
    assert space.parameters == {
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
