"""A strategy search on the cuda space, as a user runs it: ``load_jobs --strategy model``
(the cost model reads the backend's features) and go_fish's local workers; the rounds are
compiled for real (NVRTC) and timed on FakeGpu, a fake device (no GPU here)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from tests.support.cli import embedded_runner, ok
from tuna.backends.cuda import CudaBackend
from tuna.backends.finalists import FINALISTS, RETIME_TURNS
from tuna.config import load_settings
from tuna.db import open_database
from tuna.db.models import FindDb, Measurement, PerfDb, Search
from tuna.problems.driver import parse_driver_line

LINE = "MIOpenDriver conv -n 1 -c 8 -H 6 -W 6 -k 16 -y 1 -x 1 -F 1"


@pytest.fixture
def runner(tmp_path, monkeypatch) -> CliRunner:
    return embedded_runner(tmp_path, monkeypatch)


def test_a_model_search_on_the_cuda_space_records_its_measured_winner(runner):
    ok(runner, "import_configs", "-t", "net", "-d", LINE)
    ok(runner, "session", "create", "--arch", "sm_90", "--num-cu", "132", "--backend", "cuda",
        "--env", "CUDA_FAKE_GPU=1", "--env", "CUDA_REPEATS=3")  # fmt: skip
    out = ok(runner, "load_jobs", "-t", "net", "-s", "1", "--strategy", "model",
              "--budget", "6", "--round-size", "3", "--seed", "1")  # fmt: skip
    assert "searches created 2" in " ".join(out.split()), out  # both solvers apply to a 1x1
    out = ok(runner, "go_fish", "-s", "1", "--search", "--local", "-w", "2")
    db = open_database(load_settings().db_url)
    try:
        with db.session() as s:
            states = s.scalars(select(Search.state)).all()
            measured = s.execute(
                select(Measurement.solver, Measurement.params, Measurement.time_ms)
            ).all()
            perf = s.scalars(select(PerfDb.params)).all()
            find = s.scalars(select(FindDb.time_ms)).all()
    finally:
        db.dispose()
    assert states == ["done", "done"], out
    problem = parse_driver_line(LINE)[0]
    space = set(CudaBackend().tuning_space(problem, "CudaImplicitGemmFwd").candidates)
    # each search's rounds (at most 6), then its final job's finalists (at most 3) timed
    # again in turns (issue #24)
    assert 4 <= len(measured) <= 2 * (6 + FINALISTS * RETIME_TURNS)
    assert {m.params for m in measured} <= space
    assert len(perf) == len(find) == 2
    assert min(find) == min(m.time_ms for m in measured)  # measured, never predicted
