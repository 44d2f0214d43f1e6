"""``tuna search create --objective-fn module:function``: a Python function as each run of
a search, its module shipped in the sources, called by go_fish's local workers."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from tests.searches.helpers import jobs_by_step_state, runs
from tuna.cli import main
from tuna.config import load_settings
from tuna.db import open_database
from tuna.db.models import Search

MODULE = """\
import os


def measure(config):
    if config["x"] == 4:
        raise RuntimeError("x=4 trips the fuse")
    return {"loss": (config["x"] - 3) ** 2 + config["offset"], "pid": os.getpid()}


def plain(config):
    return config["x"] * 10
"""


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A user's project: the function's module and a parameter file. ``tuna search create``
    imports the module to check it: forgotten after each test, as a new process would."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "tuned.py").write_text(MODULE)
    (root / "space.json").write_text(json.dumps({"x": [1, 2, 3, 4, 5]}))
    sys.modules.pop("tuned", None)
    yield root
    sys.modules.pop("tuned", None)


def invoke(runner: CliRunner, *args: str, code: int = 0) -> str:
    r = runner.invoke(main, list(args))
    assert r.exit_code == code, r.output
    return r.output


def _count_searches() -> int:
    db = open_database(load_settings().db_url)
    try:
        with db.session() as s:
            return int(s.execute(select(func.count()).select_from(Search)).scalar_one())
    finally:
        db.dispose()


def test_go_fishs_local_workers_call_the_shipped_function(runner, project, monkeypatch):
    monkeypatch.chdir(project.parent)  # not the project: the module comes with --source
    invoke(runner, "session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "bench")
    out = invoke(
        runner, "search", "create", str(project / "space.json"), "offset=0.5", "-s", "1",
        "--name", "fn", "--objective-fn", "tuned:measure", "--source", str(project),
        "--objective", "loss", "--owns", "nothing",
    )  # fmt: skip
    assert "search 1 'fn' in session 1: 5 runs, 1 builds" in out  # every parameter is runtime
    out = invoke(runner, "go_fish", "-s", "1", "--search", "--local", "-w", "2")
    assert "search 1 done" in out
    db = open_database(load_settings().db_url)
    try:
        recorded = {r.config["x"]: r for r in runs(db, 1)}
        assert sorted(recorded) == [1, 2, 3, 4, 5]
        assert jobs_by_step_state(db, 1) == {("build", "evaluated"): 1, ("run", "evaluated"): 5}
    finally:
        db.dispose()
    good = [r for x, r in recorded.items() if x != 4]
    assert all(r.valid and r.value == (r.config["x"] - 3) ** 2 + 0.5 for r in good)
    pids = {r.stats["pid"] for r in good}
    assert os.getpid() not in pids  # each run in a child of a worker, not in this process
    bad = recorded[4]
    assert not bad.valid and "objective raised RuntimeError: x=4 trips the fuse" in bad.reason
    out = invoke(runner, "search", "run", "-s", "1", "--search", "fn")
    assert (
        "search 1 'fn': done; 5/5 runs finished (1 invalid), 1 builds; best loss=0.5 at x=3" in out
    )


def test_a_number_returned_is_the_default_stat_value(runner, project):
    invoke(runner, "session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "bench")
    invoke(
        runner, "search", "create", str(project / "space.json"), "-s", "1", "--name", "plain",
        "--objective-fn", "tuned:plain", "--source", str(project), "--maximize",
        "--owns", "nothing",
    )  # fmt: skip
    invoke(runner, "go_fish", "-s", "1", "--search", "--local", "-w", "1")
    out = invoke(runner, "search", "run", "-s", "1", "--search", "plain")
    assert "5/5 runs finished (0 invalid), 1 builds; best value=50.0 at x=5" in out


def test_the_module_is_not_run_where_the_search_is_made(runner, project):
    """The head node need not have what the module imports: it is read there, run on the
    workers, and a run that cannot import it is an invalid run saying why."""
    (project / "ongpu.py").write_text(
        "import not_installed_gpu_lib\n\n\ndef measure(config):\n    return 1.0\n"
    )
    invoke(runner, "session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "bench")
    invoke(
        runner, "search", "create", str(project / "space.json"), "-s", "1", "--name", "gpu",
        "--objective-fn", "ongpu:measure", "--source", str(project), "--budget", "2",
        "--owns", "nothing",
    )  # fmt: skip
    assert "ongpu" not in sys.modules
    invoke(runner, "go_fish", "-s", "1", "--search", "--local", "-w", "1")
    db = open_database(load_settings().db_url)
    try:
        recorded = runs(db, 1)
    finally:
        db.dispose()
    assert len(recorded) == 2 and not any(r.valid for r in recorded)
    assert all("No module named 'not_installed_gpu_lib'" in r.reason for r in recorded)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--objective-fn", "tuned:nope", "--source", "{p}"], "has no 'nope'; name a function"),
        (["--objective-fn", "tuned:measure"], "no module 'tuned'; give --source DIR"),
        (["--objective-fn", "tuned", "--source", "{p}"], "write it as module:function"),
        (
            ["--objective-fn", "tuned:measure", "--run", "./x", "--source", "{p}"],
            "leave out --run, --build and --strategy",
        ),
    ],
)
def test_a_bad_objective_function_is_one_line_and_stores_nothing(runner, project, args, message):
    invoke(runner, "session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "bench")
    args = [a.replace("{p}", str(project)) for a in args]
    out = invoke(
        runner, "search", "create", str(project / "space.json"), "-s", "1", "--name", "bad",
        *args, code=1,
    )  # fmt: skip
    assert out.startswith("Error: ") and message in out and out.count("\n") == 1, out
    assert _count_searches() == 0
