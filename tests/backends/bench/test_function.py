"""A bench search's run that calls a Python function: the run command the worker makes and
what the child process it starts prints, through the backend as the queue calls it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tuna.backends.base import SearchWork
from tuna.backends.bench.backend import BenchBackend, spec_from_dict
from tuna.backends.bench.function import run_command
from tuna.errors import TunaError

MODULE = """\
import os


def measure(config):
    if config["x"] == 0:
        raise ZeroDivisionError("x=0 has no inverse")
    if config["x"] < 0:
        return "negative"
    print("a line of the function's own")
    return {"inv": 1 / config["x"], "pid": os.getpid()}
"""

SPEC = {"function": {"ref": "fnmod:measure", "stat": "inv"}, "owns": "nothing"}


def run(tmp_path: Path, x: int, spec: dict = SPEC) -> tuple[bool, dict, str | None]:
    sources = tmp_path / "sources"
    sources.mkdir(exist_ok=True)
    (sources / "fnmod.py").write_text(MODULE)
    work = SearchWork(
        job_id=1, attempt=1, step="run", search_id=1, spec={**spec, "required_stats": ["inv"]},
        config={"x": x}, scratch=tmp_path / "scratch", build_dir=sources,
    )  # fmt: skip
    out = BenchBackend().run(work)
    return out.valid, dict(out.stats), out.failure


def test_the_run_command_is_this_interpreter_running_the_function_module() -> None:
    spec = spec_from_dict(SPEC)
    assert spec.run.names() == []  # nothing of the config is pasted into it
    assert spec.run.render({}).startswith(f"{sys.executable} -m tuna.backends.bench.function ")
    assert spec.run.render({}).endswith(" fnmod:measure --stat inv")
    assert spec.stats.mode == "auto" and run_command("m:f", "t").count("{") == 0


def test_a_run_calls_the_function_in_a_child_on_the_runs_config(tmp_path: Path) -> None:
    valid, stats, failure = run(tmp_path, 4)
    assert valid and failure is None
    assert stats["inv"] == 0.25 and stats["pid"] != os.getpid()


@pytest.mark.parametrize(
    "x, reason",
    [
        (0, "run exited with status 1: objective raised ZeroDivisionError: x=0 has no inverse"),
        (-1, "run exited with status 1: objective returned 'negative'; return a number or a dict"),
    ],
)
def test_a_function_that_raises_or_returns_nonsense_is_an_invalid_run(tmp_path, x, reason):
    valid, _, failure = run(tmp_path, x)
    assert not valid and failure is not None and failure.startswith(reason), failure


def test_a_module_missing_on_the_worker_is_an_invalid_run_naming_it(tmp_path: Path) -> None:
    spec = {**SPEC, "function": {"ref": "not_shipped:measure", "stat": "inv"}}
    valid, _, failure = run(tmp_path, 1, spec)
    assert not valid and "no module 'not_shipped'" in (failure or "")


def test_checking_the_spec_imports_the_function_from_the_sources(tmp_path: Path) -> None:
    (tmp_path / "fnmod.py").write_text(MODULE)
    spec = {**SPEC, "source_dir": str(tmp_path)}
    try:
        BenchBackend().check_spec(spec, ["x"], [])
        with pytest.raises(TunaError, match="has no 'nope'"):
            BenchBackend().check_spec(
                {**spec, "function": {"ref": "fnmod:nope", "stat": "inv"}}, ["x"], []
            )
    finally:
        sys.modules.pop("fnmod", None)
    with pytest.raises(TunaError, match="give \\{'ref': 'mod:fn'\\}"):
        spec_from_dict({"function": "fnmod:measure"})
