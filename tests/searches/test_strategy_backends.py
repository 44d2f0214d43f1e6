"""A strategy search works on every backend that declares its tuning spaces (issue #25): the
``noop`` backend declares a small one, and ``load_jobs --strategy hillclimb`` on a noop
session runs end to end through the CLI, as a user runs it (go_fish's local workers)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from tests.support.cli import embedded_runner, ok
from tuna.backends import backend_names, backends_with_spaces, get_backend
from tuna.backends.noop import NoopBackend
from tuna.config import load_settings
from tuna.db import open_database
from tuna.db.models import FindDb, Measurement, PerfDb, Search
from tuna.problems.conv import ConvProblem
from tuna.problems.driver import parse_driver_line

LINE = "MIOpenDriver conv -n 1 -c 16 -H 8 -W 8 -k 16 -y 1 -x 1 -F 1"


@pytest.fixture
def runner(tmp_path, monkeypatch) -> CliRunner:
    return embedded_runner(tmp_path, monkeypatch)


def test_every_backend_that_declares_spaces_gives_each_tunable_solver_one() -> None:
    assert {"cpuconv", "cuda", "noop"} <= set(backends_with_spaces())
    assert "miopen" not in backends_with_spaces()  # its spaces are fin's, not declared
    problem = ConvProblem(
        spatial_dim=2, batchsize=1, in_channels=16, out_channels=16, in_size=(8, 8),
        fil_size=(1, 1), pad=(0, 0), stride=(1, 1),
    )  # fmt: skip
    for name in backend_names():
        backend = get_backend(name)
        tunable = [s.name for s in backend.solvers() if s.tunable]
        if not backend.declares_spaces:
            continue
        for solver in tunable:
            if backend.applicability(problem, solver) is not None:
                continue
            space = backend.tuning_space(problem, solver)
            assert space.names and len(space) > 0, (name, solver)
            assert len(set(space.candidates)) == len(space)
            for text in space.candidates:
                assert tuple(backend.parse_params(solver, text)) == space.names


def test_load_jobs_strategy_hillclimb_runs_end_to_end_on_noop(runner: CliRunner) -> None:
    ok(runner, "import_configs", "-t", "net", "-d", LINE)
    ok(runner, "session", "create", "--arch", "gfx-noop", "--num-cu", "1", "--backend", "noop")
    out = ok(runner, "load_jobs", "-t", "net", "-s", "1", "--strategy", "hillclimb",
              "--budget", "6", "--round-size", "2", "--seed", "1")  # fmt: skip
    assert "searches created 1" in " ".join(out.split()), out
    out = ok(runner, "go_fish", "-s", "1", "--search", "--local", "-w", "1")
    db = open_database(load_settings().db_url)
    try:
        with db.session() as s:
            (state,) = s.scalars(select(Search.state)).all()
            measured = s.execute(select(Measurement.params, Measurement.time_ms)).all()
            perf = s.scalars(select(PerfDb.params)).all()
            find = s.scalars(select(FindDb.time_ms)).all()
    finally:
        db.dispose()
    assert state == "done", out
    space = NoopBackend().tuning_space(parse_driver_line(LINE)[0], "NoopTunable")
    assert 2 <= len(measured) <= 6 < len(space) + 1
    assert {m.params for m in measured} <= set(space.candidates)
    best = min(measured, key=lambda m: m.time_ms)
    assert (perf, find) == ([best.params], [best.time_ms])  # the measured winner
