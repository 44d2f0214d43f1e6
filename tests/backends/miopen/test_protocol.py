"""fin's input: what Tuna writes must be what fin was given in the real recording."""

from __future__ import annotations

import dataclasses

import pytest

from tests.backends.miopen.recorded import real_output, recorded_problem
from tuna.backends.miopen import protocol
from tuna.backends.miopen.protocol import (
    UnsupportedProblemError,
    applicability_input,
    eval_job,
    fin_config,
    problem_job,
    target_id,
)
from tuna.problems.driver import parse_driver_line


def test_config_is_the_one_fin_was_given_in_the_recording():
    recorded = real_output()[1]["input"]["config"]
    ours = fin_config(recorded_problem(), config_id=125733)
    # "driver" is the predecessor's own long-flag line and "valid" its soft-delete column:
    # fin reads neither. Every other field must be exactly what fin got.
    expected = {k: v for k, v in recorded.items() if k not in ("driver", "valid")}
    assert {k: v for k, v in ours.items() if k != "driver"} == expected
    assert parse_driver_line(ours["driver"]) == [recorded_problem()]


def test_job_head_is_the_one_fin_was_given_in_the_recording():
    recorded = real_output()[1]["input"]
    job = problem_job(
        ["alloc_buf", "miopen_find_eval"],
        arch="gfx906",
        num_cu=60,
        config_id=125733,
        problem=recorded_problem(),
        solvers=["ConvAsm1x1UV2"],
    )
    for key in (
        "arch",
        "num_cu",
        "config_tuna_id",
        "direction",
        "dynamic_only",
        "solvers",
        "steps",
    ):
        assert job[key] == recorded[key], key


@pytest.mark.parametrize(
    ("arch", "target"),
    [
        ("gfx906", "gfx906:sram-ecc+:xnack-"),
        ("gfx90a", "gfx90a:sram-ecc+:xnack-"),
        ("gfx942", "gfx942:sram-ecc+:xnack-"),
        ("gfx900", "gfx900:xnack-"),
        ("gfx1030", "gfx1030"),
        ("gfx1100", "gfx1100"),
        ("gfx90a:sramecc+:xnack+", "gfx90a:sramecc+:xnack+"),
    ],
)
def test_target_id(arch, target):
    assert target_id(arch) == target


def test_directions_and_3d():
    line = (
        "./bin/MIOpenDriver convfp16 -n 4 -c 8 --in_d 5 -H 6 -W 7 -k 16 --fil_d 3 -y 3 -x 3 "
        "--pad_d 1 -p 1 -q 1 --conv_stride_d 1 -u 2 -v 2 --dilation_d 1 -l 1 -j 1 "
        "--spatial_dim 3 -m conv -g 2 -F 4"
    )
    (p,) = parse_driver_line(line)
    c = fin_config(p, config_id=1)
    assert (c["cmd"], c["direction"], c["spatial_dim"], c["group_count"]) == ("convfp16", "W", 3, 2)
    assert (c["in_d"], c["in_h"], c["in_w"], c["fil_d"], c["pad_d"], c["conv_stride_d"]) == (
        5, 6, 7, 3, 1, 1,
    )  # fmt: skip
    assert c["in_layout"] == c["wei_layout"] == c["out_layout"] == "NCDHW"
    job = problem_job(["miopen_perf_compile"], arch="gfx90a", num_cu=104, config_id=1, problem=p)
    assert job["direction"] == 4 and "solvers" not in job
    assert (
        problem_job(["x"], arch="a", num_cu=1, config_id=1, problem=p.with_direction("F"))[
            "direction"
        ]
        == 1
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"in_type": "INT8", "wei_type": "INT8", "out_type": "INT32"},
            "data types INT8/INT8/INT32",
        ),
        ({"in_cast": "FP8"}, "cast types"),
        ({"bias": 1}, "bias 0"),
    ],
)
def test_problems_fin_cannot_take_exactly(change, message):
    p = dataclasses.replace(recorded_problem(), **change)
    with pytest.raises(UnsupportedProblemError, match=rf"config 9: .*{message}"):
        fin_config(p, config_id=9)


def test_transposed_output_padding_is_refused():
    (p,) = parse_driver_line(
        "./bin/MIOpenDriver conv -n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 "
        "-l 1 -j 1 -Y 1 -X 1 -m trans -g 1 -F 1"
    )
    assert "trans_output_pad" in (protocol.unsupported_reason(p) or "")


def test_applicability_and_eval_inputs():
    p = recorded_problem()
    jobs = applicability_input(arch="gfx908", num_cu=120, problems=[(1, p), (2, p)])
    assert [j["config_tuna_id"] for j in jobs] == [1, 2]
    assert all(j["steps"] == ["applicability"] and "solvers" not in j for j in jobs)
    compiled = {"solver_name": "ConvAsm1x1UV2", "find_compiled": True, "kernel_objects": []}
    job = eval_job(
        "miopen_find_eval", arch="gfx906", num_cu=60, config_id=1, problem=p,
        solver="ConvAsm1x1UV2", compiled=compiled,
    )  # fmt: skip
    assert job["steps"] == ["alloc_buf", "fill_buf", "miopen_find_eval"]
    assert job["miopen_find_compile_result"] == [compiled]
    perf = eval_job(
        "miopen_perf_eval", arch="gfx906", num_cu=60, config_id=1, problem=p,
        solver="ConvAsm1x1UV2", compiled=compiled,
    )  # fmt: skip
    assert "miopen_perf_compile_result" in perf and "miopen_find_compile_result" not in perf
    assert protocol.get_solvers_input() == [{"steps": ["get_solvers"]}]
