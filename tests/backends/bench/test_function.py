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


TRAINING = """\
import time


def train(config, trial):
    for epoch in range(6):
        trial.report(epoch, config["x"] / (epoch + 1))
        assert not trial.should_prune()  # the worker kills a pruned run instead
        time.sleep(0.3)
    return config["x"] / 6
"""


@pytest.mark.parametrize("prune_at", [None, 1])
def test_a_function_of_two_arguments_reports_lines_its_worker_may_prune_on(
    tmp_path: Path, prune_at: int | None
) -> None:
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "trainmod.py").write_text(TRAINING)
    heard: list[tuple[int, float]] = []

    def report(step: int, value: float) -> str | None:
        heard.append((step, value))
        return f"pruned at step {step}" if step == prune_at else None

    spec = {"function": {"ref": "trainmod:train", "stat": "loss"}, "owns": "nothing"}
    work = SearchWork(
        job_id=1, attempt=1, step="run", search_id=1, spec={**spec, "required_stats": ["loss"]},
        config={"x": 6}, scratch=tmp_path / "scratch", build_dir=sources, report=report,
    )  # fmt: skip
    out = BenchBackend().run(work)
    if prune_at is None:
        assert out.valid and out.stats == {"loss": 1.0} and not out.pruned
        assert heard == [(e, 6 / (e + 1)) for e in range(6)]
    else:
        assert (out.valid, out.pruned, out.failure) == (False, True, "pruned at step 1")
        assert heard == [(0, 6.0), (1, 3.0)] and dict(out.intermediate) == {0: 6.0, 1: 3.0}


def test_the_child_says_in_one_line_what_it_lacks_and_exits_2(tmp_path, monkeypatch, capsys):
    """Run by hand (or by a worker without the config file), the child names what is
    missing rather than printing a traceback."""
    from tuna.backends.bench.function import main

    (tmp_path / "fnmod.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TUNA_CONFIG", raising=False)
    try:
        assert main(["fnmod:measure"]) == 2
        err = capsys.readouterr().err.strip()
        assert err == (
            "fnmod:measure: TUNA_CONFIG is not set; a bench run sets it to the run's config "
            "file (JSON)"
        )
        monkeypatch.setenv("TUNA_CONFIG", str(tmp_path / "missing.json"))
        assert main(["fnmod:measure"]) == 2
        assert "No such file or directory" in capsys.readouterr().err
        assert main(["fnmod"]) == 2
        assert "write it as module:function" in capsys.readouterr().err
        (tmp_path / "config.json").write_text('{"x": 2}')
        monkeypatch.setenv("TUNA_CONFIG", str(tmp_path / "config.json"))
        assert main(["fnmod:measure", "--stat", "inv"]) == 0
        assert capsys.readouterr().out.splitlines()[-1].startswith('{"inv": 0.5, "pid": ')
    finally:
        sys.modules.pop("fnmod", None)
