"""An objective named ``module:function``: imported from a directory, its results read as stats."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tuna.errors import TunaError
from tuna.searchers.function import find_function, load_function, stats_of

MODULE = """\
CALLS = []


def measure(config):
    return config["x"] * 2


class Bench:
    @staticmethod
    def time(config):
        return {"time": 1.5}


not_a_function = 3
"""


@pytest.fixture
def module_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory holding the module ``objmod`` (forgotten after the test: imports are
    cached per process)."""
    (tmp_path / "objmod.py").write_text(MODULE)
    (tmp_path / "broken_at_import.py").write_text("raise RuntimeError('no licence server')\n")
    (tmp_path / "needs_lib.py").write_text("import not_installed_lib\n")
    yield tmp_path
    for m in ["objmod", "broken_at_import", "needs_lib"]:
        sys.modules.pop(m, None)


def test_a_function_is_imported_from_the_directory_first(module_dir: Path) -> None:
    assert load_function("objmod:measure", module_dir)({"x": 4}) == 8
    assert load_function("objmod:Bench.time", module_dir)({}) == {"time": 1.5}
    assert str(module_dir.resolve()) not in sys.path  # the directory is not left on the path


def test_an_installed_module_needs_no_directory() -> None:
    assert load_function("json:dumps")({"a": 1}) == '{"a": 1}'


@pytest.mark.parametrize(
    "ref, message",
    [
        ("measure", "write it as module:function"),
        (":measure", "write it as module:function"),
        ("objmod:", "write it as module:function"),
        ("no_such_module_here:f", "no module 'no_such_module_here' in "),
        ("objmod:nope", "has no 'nope'; name a function it defines"),
        ("objmod:not_a_function", "is 3, not a function"),
        ("broken_at_import:f", "importing broken_at_import in .* raised RuntimeError: no licence"),
        (
            "needs_lib:f",
            "importing needs_lib in .* raised ModuleNotFoundError: No module named 'not_installed_",
        ),
    ],
)
def test_a_bad_reference_is_one_clear_error(module_dir: Path, ref: str, message: str) -> None:
    with pytest.raises(TunaError, match=message) as e:
        load_function(ref, module_dir)
    assert "\n" not in str(e.value)


def test_without_a_directory_a_missing_module_asks_for_the_sources() -> None:
    with pytest.raises(TunaError, match="give --source DIR, the directory that holds it"):
        load_function("no_such_module_here:f")


@pytest.mark.parametrize(
    "out, expected",
    [
        (3, {"value": 3.0}),
        (2.5, {"value": 2.5}),
        ({"time": 1, "ok": "yes"}, {"time": 1, "ok": "yes"}),
        (True, "returned True; return a number or a dict of stats"),
        ("fast", "returned 'fast'; return a number or a dict of stats"),
        (None, "returned None; return a number or a dict of stats"),
        ({"t": object()}, "returned stats that are not JSON data"),
    ],
)
def test_what_an_objective_returns_is_stats_or_what_is_wrong(out, expected) -> None:
    got = stats_of(out, "value")
    if isinstance(expected, str):
        assert isinstance(got, str) and got.startswith(expected)
    else:
        assert got == expected


GPU_MODULE = """\
import not_installed_gpu_lib  # the workers' image has it; the head node does not

try:
    from fast import measure_fast
except ImportError:
    def measure_fast(config):
        return 1.0


def measure(config):
    return not_installed_gpu_lib.time(config)
"""


@pytest.mark.parametrize("name", ["measure", "measure_fast", "not_installed_gpu_lib"])
def test_finding_a_function_reads_its_module_without_running_it(tmp_path: Path, name) -> None:
    (tmp_path / "gpumod.py").write_text(GPU_MODULE)
    assert find_function(f"gpumod:{name}", tmp_path) == tmp_path / "gpumod.py"
    assert "gpumod" not in sys.modules


@pytest.mark.parametrize(
    "text, ref, message",
    [
        (GPU_MODULE, "gpumod:nope", r"module gpumod \(.*gpumod.py\) has no 'nope'; name a funct"),
        ("def f(:\n", "gpumod:f", r"gpumod.py line 1: .*; fix the module"),
        (GPU_MODULE, "elsewhere:measure", "no module 'elsewhere' in .* or installed; check the"),
        (GPU_MODULE, "gpumod", "write it as module:function"),
    ],
)
def test_finding_a_bad_reference_is_one_clear_error(tmp_path: Path, text, ref, message) -> None:
    (tmp_path / "gpumod.py").write_text(text)
    with pytest.raises(TunaError, match=message) as e:
        find_function(ref, tmp_path)
    assert "\n" not in str(e.value)


def test_finding_an_installed_module_or_one_that_may_define_anything() -> None:
    assert find_function("json:dumps") is not None and find_function("sys:exit") is None
    with pytest.raises(TunaError, match="has no 'nope'"):
        find_function("json:nope")
    # ``from x import *`` may define any name: nothing to check without running it
    assert find_function("tuna.search:Anything") is not None
