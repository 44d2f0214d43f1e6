"""The FAKE fin: fin's command line and file format, replaying the recordings as documented."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.backends.miopen.recorded import RECORDINGS, real_output, recorded_problem
from tuna.backends.miopen import protocol
from tuna.backends.miopen.fake_fin import main


def fake(tmp_path, jobs, *extra: str, env=None) -> subprocess.CompletedProcess[str]:
    inp, out = tmp_path / "in.json", tmp_path / "out.json"
    inp.write_text(json.dumps(jobs))
    return subprocess.run(
        [sys.executable, "-m", "tuna.backends.miopen.fake_fin", "-i", str(inp), "-o", str(out),
         *extra],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip


def find_compile(config_id=125733, problem=None, solvers=("ConvAsm1x1UV2",)):
    return protocol.problem_job(
        ["miopen_find_compile"], arch="gfx906", num_cu=60, config_id=config_id,
        problem=problem or recorded_problem(), solvers=list(solvers),
    )  # fmt: skip


def test_command_line_as_fins(tmp_path, capsys):
    assert main(["fin", "-h"]) == 0 and "Usage: ./fin *input_json" in capsys.readouterr().out
    assert main(["fin", "-i", "x.json"]) == 0  # wrong arguments: usage, status 0, no output
    assert "Invalid arguments" in capsys.readouterr().err
    assert main(["fin", "-i", str(tmp_path / "none.json"), "-o", "o.json"]) == 255
    assert "does not exist" in capsys.readouterr().err


def test_output_is_fins_format(tmp_path):
    job = find_compile()
    assert fake(tmp_path, [job]).returncode == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert list(out[0]) == ["process_env"] and isinstance(out[0]["process_env"], list)
    item = out[1]
    assert item["input"] == job and item["config_tuna_id"] == 125733
    assert item["arch"] == "gfx906:sram-ecc+:xnack-" and item["direction"] == 2
    assert item["db_key"] == real_output()[1]["db_key"]
    assert item["network_config"] == real_output()[1]["network_config"]
    (result,) = item["miopen_find_compile_result"]
    recorded = real_output()[1]["input"]["miopen_find_compile_result"][0]
    assert result["kernel_objects"] == recorded["kernel_objects"]  # bytes unchanged
    assert (result["find_compiled"], result["reason"], result["workspace"]) == (True, "Success", 0)
    assert result["params"] == "32,1,16,2,1,1,2,4,4,1" and result["tunable"] is True


def test_a_corrupt_kernel_handed_to_evaluate_aborts_as_fin_does(tmp_path):
    assert fake(tmp_path, [find_compile()]).returncode == 0
    compiled = json.loads((tmp_path / "out.json").read_text())[1]["miopen_find_compile_result"][0]
    compiled["kernel_objects"][0]["md5_sum"] = "0" * 32
    job = protocol.eval_job(
        "miopen_find_eval", arch="gfx906", num_cu=60, config_id=1, problem=recorded_problem(),
        solver="ConvAsm1x1UV2", compiled=compiled,
    )  # fmt: skip
    (tmp_path / "out.json").unlink()
    run = fake(tmp_path, [job])
    assert run.returncode == 134 and "Corrupt binary object" in run.stderr
    assert not (tmp_path / "out.json").exists()


def test_an_unknown_solver_aborts(tmp_path):
    run = fake(tmp_path, [find_compile(solvers=["NoSuchSolver"])])
    assert run.returncode == 134 and "invalid solver id 'NoSuchSolver'" in run.stderr


def test_recordings_can_be_replaced(tmp_path):
    root = tmp_path / "rec"
    root.mkdir()
    shutil.copy(RECORDINGS / "get_solvers.json", root)  # and no tuning recordings at all
    env = {"FAKE_FIN_RECORDINGS": str(root), "PATH": "/usr/bin:/bin"}
    job = protocol.applicability_input(arch="gfx906", num_cu=60, problems=[(1, recorded_problem())])
    assert fake(tmp_path, job, env=env).returncode == 0
    assert json.loads((tmp_path / "out.json").read_text())[1]["applicable_solvers"] == []
    assert fake(tmp_path, job).returncode == 0
    assert json.loads((tmp_path / "out.json").read_text())[1]["applicable_solvers"] == [
        "ConvAsm1x1UV2"
    ]


@pytest.mark.parametrize("step", ["miopen_perf_compile", "miopen_find_compile"])
def test_without_solvers_every_known_solver_gets_an_item(tmp_path, step):
    job = protocol.problem_job([step], arch="gfx906", num_cu=60, config_id=3,
                               problem=recorded_problem())  # fmt: skip
    assert fake(tmp_path, [job]).returncode == 0
    items = json.loads((tmp_path / "out.json").read_text())[1][f"{step}_result"]
    assert len(items) == 104
    ok = [i["solver_name"] for i in items if i["reason"] == "Success"]
    assert ok == ["ConvAsm1x1UV2"]
