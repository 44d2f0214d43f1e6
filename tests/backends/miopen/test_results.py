"""Parsing fin's output, first of all the real one recorded from a gfx906 run."""

from __future__ import annotations

import copy
import hashlib

import pytest

from tests.backends.miopen.recorded import REAL_OUTPUT, real_output
from tuna.backends.miopen.kernels import KernelObjectError
from tuna.backends.miopen.results import (
    FinOutputError,
    job_results,
    parse_applicability,
    parse_solver_items,
    parse_solvers,
    parse_step,
    reasons,
    usable_time,
)

# Read off fin_output_find_eval.json by hand (not produced by the parser).
DB_KEY = "2048-7-7-1x1-1024-14-14-128-0x0-2x2-1x1-0-NCHW-FP32-B"
NETWORK_CONFIG = "2048x7x7x1x1x1024x14x14x128xNCHWxFP32x0x0x2x2x1x1x1xB"
KERNEL_MD5 = "9afa6cbaa2e2c982366ad27e15620ee5"
KERNEL_SIZE = 145576


def test_the_recording_is_the_real_fin_output():
    # sha256 of data/miopen/fin_output_find_eval.json as it was handed to the project
    digest = hashlib.sha256(REAL_OUTPUT.read_bytes()).hexdigest()
    assert digest == "a3e168730911b1b124ac29b54d76b77eb16aab778828f829cbb1b6fb7c613383"


def test_real_find_eval_output_gives_the_recorded_row():
    jobs = job_results(real_output(), path="rec.json")
    assert len(jobs) == 1  # process_env dropped
    step = parse_step(jobs[0], "miopen_find_eval", path="rec.json")
    assert step.config_id == 125733
    assert step.db_key == DB_KEY
    assert step.network_config == NETWORK_CONFIG
    assert len(step.solvers) == 1
    r = step.solvers[0]
    assert r.solver == "ConvAsm1x1UV2"
    assert r.algorithm == "miopenConvolutionBwdDataAlgoDirect"
    assert r.ok and r.reason == "Success" and not r.not_applicable
    assert r.params == "32,1,16,2,1,1,2,4,4,1"
    assert r.time_ms == 2.8596839904785156
    assert r.workspace == 0
    assert r.tunable is True
    assert r.kernels == ()  # fin's find eval returns no kernels
    assert usable_time(r) is None
    assert step.for_solver("ConvAsm1x1UV2") is r and step.for_solver("ConvAsm3x3U") is None


def test_real_compile_result_echoed_in_the_input_gives_the_kernel():
    job = job_results(real_output(), path="rec.json")[0]
    (r,) = parse_solver_items(
        job["input"]["miopen_find_compile_result"], flag="find_compiled", where="rec.json"
    )
    assert (r.solver, r.ok, r.reason) == ("ConvAsm1x1UV2", True, "Success")
    assert r.algorithm == "miopenConvolutionBwdDataAlgoDirect"
    assert r.workspace == 0 and r.time_ms is None
    (kernel,) = r.kernels
    (meta,) = r.kernel_meta
    assert kernel.name == "conv1x1u_stride2.s"
    assert kernel.args.startswith(" -Wa,-defsym,stride_h=1 -Wa,-defsym,stride_w=1")
    assert "-Wa,-defsym,batch_size=128 " in kernel.args
    assert kernel.args.endswith("-Wa,-defsym,waves_c_in_group=1")
    assert len(kernel.binary) == KERNEL_SIZE
    assert kernel.binary[:4] == b"\x7fELF"
    assert hashlib.md5(kernel.binary).hexdigest() == KERNEL_MD5
    assert (meta.kernel_file, meta.md5_sum, meta.uncompressed_size) == (
        "conv1x1u_stride2.s",
        KERNEL_MD5,
        KERNEL_SIZE,
    )
    assert meta.comp_options == kernel.args


def test_a_corrupted_recorded_blob_names_the_solver_and_kernel():
    data = real_output()
    obj = data[1]["input"]["miopen_find_compile_result"][0]["kernel_objects"][0]
    blob = obj["blob"]
    obj["blob"] = blob[:5000] + ("A" if blob[5000] != "A" else "B") + blob[5001:]
    with pytest.raises(
        KernelObjectError, match=r"solver ConvAsm1x1UV2, kernel 'conv1x1u_stride2.s'"
    ):
        parse_solver_items(
            data[1]["input"]["miopen_find_compile_result"], flag="find_compiled", where="x"
        )


def test_every_solvers_reason_is_kept():
    items = [
        {"solver_name": "A", "algorithm": "miopenConvolutionFwdAlgoDirect",
         "reason": "Not Applicable", "find_compiled": False},
        {"solver_name": "B", "algorithm": "miopenConvolutionFwdAlgoGEMM",
         "reason": "Solver throws exception: out of registers", "find_compiled": False},
        {"solver_name": "C", "reason": "Skip Fused", "find_compiled": False},
        {"solver_name": "D", "reason": "Not Dynamic", "find_compiled": False},
        {"solver_name": "E", "reason": "Empty Solver", "find_compiled": False},
    ]  # fmt: skip
    results = parse_solver_items(items, flag="find_compiled", where="x")
    assert [(r.solver, r.reason) for r in results] == [
        (i["solver_name"], i["reason"]) for i in items
    ]
    assert [r.not_applicable for r in results] == [True, False, True, True, True]
    assert reasons(results) == (
        "A: Not Applicable; B: Solver throws exception: out of registers; C: Skip Fused; "
        "D: Not Dynamic; E: Empty Solver"
    )
    assert reasons(results[:1]) == "Not Applicable"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda j: j.pop("db_key"), r"db_key is None, expected str"),
        (lambda j: j.pop("miopen_find_eval_result"), r"no miopen_find_eval_result"),
        (
            lambda j: j["miopen_find_eval_result"][0].pop("evaluated"),
            r"solver ConvAsm1x1UV2: evaluated is None, expected a flag",
        ),
        (
            lambda j: j["miopen_find_eval_result"][0].update(time="fast"),
            r"solver ConvAsm1x1UV2: time is 'fast', expected int or float",
        ),
        (
            lambda j: j["miopen_find_eval_result"][0].update(workspace=True),
            r"solver ConvAsm1x1UV2: workspace is True, expected int",
        ),
        (
            lambda j: j["miopen_find_eval_result"][0].pop("solver_name"),
            r"solver_name is None",
        ),
    ],
)
def test_output_not_as_fin_writes_it_is_refused_naming_the_field(change, message):
    job = copy.deepcopy(job_results(real_output(), path="rec.json")[0])
    change(job)
    with pytest.raises(
        FinOutputError, match=rf"^out\.json: config 125733, miopen_find_eval.*{message}"
    ):
        parse_step(job, "miopen_find_eval", path="out.json")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "not a non-empty JSON array"),
        ([], "not a non-empty JSON array"),
        ([{"arch": "gfx906"}], "element 0 is not fin's"),
        ([{"process_env": []}, "x"], "element 1 is not a JSON object"),
    ],
)
def test_a_file_not_shaped_as_fin_writes_it(data, message):
    with pytest.raises(FinOutputError, match=message):
        job_results(data, path="out.json")


def test_solver_list_values_are_fins_strings():
    job = {
        "all_solvers": [
            {"id": "3", "name": "ConvAsm1x1UV2", "tunable": "1", "dynamic": "0",
             "type": "convolution"},
            {"id": "62", "name": "ConvAsmImplicitGemmV4R1DynamicFwd", "tunable": "0",
             "dynamic": "1", "type": "convolution"},
            {"id": "113", "name": "BnFwdTrainingSpatialSingle", "tunable": "0", "dynamic": "0",
             "type": "batch_norm"},
        ]
    }  # fmt: skip
    solvers = parse_solvers(job, path="x")
    assert [(s.numeric_id, s.name, s.tunable, s.dynamic, s.primitive) for s in solvers] == [
        (3, "ConvAsm1x1UV2", True, False, "convolution"),
        (62, "ConvAsmImplicitGemmV4R1DynamicFwd", False, True, "convolution"),
        (113, "BnFwdTrainingSpatialSingle", False, False, "batch_norm"),
    ]
    job["all_solvers"][0]["id"] = "x3"
    with pytest.raises(FinOutputError, match="solver ConvAsm1x1UV2: id 'x3' is not a solver id"):
        parse_solvers(job, path="x")
    with pytest.raises(FinOutputError, match="no all_solvers list"):
        parse_solvers({}, path="x")


def test_applicability_answer():
    job = {"config_tuna_id": 125733, "applicable_solvers": ["ConvAsm1x1U", "ConvAsm1x1UV2"]}
    assert parse_applicability(job, path="x") == (125733, ["ConvAsm1x1U", "ConvAsm1x1UV2"])
    with pytest.raises(FinOutputError, match="config 125733: applicable_solvers is not a list"):
        parse_applicability({"config_tuna_id": 125733, "applicable_solvers": "all"}, path="x")
    with pytest.raises(FinOutputError, match="config_tuna_id None is not a config id"):
        parse_applicability({"applicable_solvers": []}, path="x")


@pytest.mark.parametrize(
    ("time", "ok"), [(2.5, True), (0.0, False), (-1.0, False), (float("nan"), False), (None, False)]
)
def test_usable_time(time, ok):
    from tuna.backends.miopen.results import SolverResult

    r = SolverResult("S", "a", True, "Success", time_ms=time)
    assert (usable_time(r) is None) == ok
