"""The miopen backend's phases, run through fin's command line with the FAKE fin.

The FAKE fin replays the real recording (ConvAsm1x1UV2 on the recorded problem); wrappers
around it break one thing at a time to show each failure becomes a failed outcome whose reason
says what and where.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import pytest

from tests.backends.miopen.recorded import recorded_problem, script
from tuna.backends import ApplicabilityAnswer, LibraryQueries, get_backend
from tuna.backends.base import JobWork, KernelBinary, Measurement, SessionInfo
from tuna.backends.miopen import MiopenBackend
from tuna.backends.miopen.runner import FinNotStartedError
from tuna.problems.driver import parse_driver_line

SOLVER = "ConvAsm1x1UV2"
TIME = 2.8596839904785156  # the recorded time
KERNEL_MD5 = "9afa6cbaa2e2c982366ad27e15620ee5"


def work(session: SessionInfo, phase: str = "compile", step: str = "find", **kw) -> JobWork:
    fields = dict(
        job_id=5, attempt=1, phase=phase, session=session, config_id=125733,
        problem=recorded_problem(), solver=SOLVER, step=step,
    )  # fmt: skip
    fields.update(kw)
    return JobWork(**fields)  # type: ignore[arg-type]


def with_env(session: SessionInfo, **env: str) -> SessionInfo:
    return dataclasses.replace(session, environment={**session.environment, **env})


def wrapped_fin(tmp_path: Path, edit: str) -> str:
    """A fin that runs the FAKE fin, then applies ``edit`` to its output list ``out``."""
    path = tmp_path / "wrapped_fin"
    path.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "from tuna.backends.miopen.fake_fin import main\n"
        "rc = main(sys.argv)\n"
        "if rc:\n    sys.exit(rc)\n"
        "path = sys.argv[sys.argv.index('-o') + 1]\n"
        "out = json.load(open(path))\n"
        f"{edit}\n"
        "json.dump(out, open(path, 'w'))\n"
    )
    path.chmod(0o755)
    return str(path)


def compile_and_evaluate(session: SessionInfo, step: str, **kw):
    backend = MiopenBackend()
    c = backend.compile(work(session, step=step, **kw))
    assert c.ok, c.reason
    e = backend.evaluate(
        work(session, "eval", step, attempt=2, kernels=c.kernels, payload=c.payload, **kw)
    )
    return c, e


def test_registered_and_asks_its_library():
    backend = get_backend("miopen")
    assert isinstance(backend, MiopenBackend) and isinstance(backend, LibraryQueries)
    assert backend.applicability(recorded_problem(), SOLVER) is None
    assert "not a MIOpen convolution solver" in (
        backend.applicability(recorded_problem(), "CpuGemm1x1") or ""
    )


def test_find_step_gives_the_recorded_kernel_and_find_row(session):
    c, e = compile_and_evaluate(session, "find")
    (kernel,) = c.kernels
    assert kernel.name == "conv1x1u_stride2.s" and len(kernel.binary) == 145576
    assert hashlib.md5(kernel.binary).hexdigest() == KERNEL_MD5
    payload = json.loads(c.payload or "")
    assert payload["step"] == "miopen_find_compile"
    assert payload["db_key"] == "2048-7-7-1x1-1024-14-14-128-0x0-2x2-1x1-0-NCHW-FP32-B"
    assert payload["algorithm"] == "miopenConvolutionBwdDataAlgoDirect"
    assert payload["kernels"] == [
        {"kernel_file": "conv1x1u_stride2.s", "comp_options": kernel.args,
         "md5_sum": KERNEL_MD5, "uncompressed_size": 145576}
    ]  # fmt: skip
    assert e.ok and e.perf is None and e.find is not None
    assert e.kernels == (kernel,)  # the find compile built the one solution: its kernels
    assert e.find.time_ms == TIME
    assert e.find.workspace == 0
    assert e.find.algorithm == "miopenConvolutionBwdDataAlgoDirect"
    assert e.find.params == "32,1,16,2,1,1,2,4,4,1"


def test_perf_step_gives_the_tuned_parameters(session):
    c, e = compile_and_evaluate(session, "perf")
    assert json.loads(c.payload or "")["step"] == "miopen_perf_compile"
    assert e.perf is not None and e.perf.params == "32,1,16,2,1,1,2,4,4,1"
    assert e.kernels == c.kernels and len(c.kernels) == 1
    assert e.find is not None and e.find.time_ms == TIME
    # fin times the solution it tuned: that one measurement, kept
    assert e.measurements == (Measurement("32,1,16,2,1,1,2,4,4,1", TIME, True),)


def test_perf_step_names_the_tuned_solutions_kernels_among_the_candidates(session, tmp_path):
    """The perf compile built every candidate (here the recorded kernel and a second perf
    config); fin's perf eval names the tuned solution's kernels, and only those are named."""
    decoy = (
        "r = out[1]['miopen_perf_compile_result'][0]\n"
        "k = dict(r['kernel_objects'][0], comp_options=' -Wa,-defsym,k_mult=8')\n"
        "r['kernel_objects'].append(k)"
    )
    backend = MiopenBackend()
    c = backend.compile(work(with_env(session, FIN_PATH=wrapped_fin(tmp_path, decoy)), step="perf"))
    recorded, other = c.kernels
    assert (recorded.name, other.args) == ("conv1x1u_stride2.s", " -Wa,-defsym,k_mult=8")
    e = backend.evaluate(
        work(session, "eval", "perf", attempt=2, kernels=c.kernels, payload=c.payload)
    )
    assert e.ok and e.perf is not None and e.kernels == (recorded,)


@pytest.mark.parametrize(
    "edit",
    [
        "del out[1]['miopen_perf_eval_result'][0]['kernel_objects']",
        "out[1]['miopen_perf_eval_result'][0]['kernel_objects'][0]['comp_options'] += ' -DNEW'",
    ],
    ids=["none named", "one fin built anew"],
)
def test_perf_step_names_no_kernel_where_fin_does_not_name_compiled_ones(session, tmp_path, edit):
    backend = MiopenBackend()
    c = backend.compile(work(session, step="perf"))
    fin = wrapped_fin(tmp_path, edit)
    e = backend.evaluate(
        work(with_env(session, FIN_PATH=fin), "eval", "perf", kernels=c.kernels, payload=c.payload)
    )
    assert e.ok and e.perf is not None and e.kernels == ()


def test_kernel_step_checks_and_writes_no_row(session):
    c, e = compile_and_evaluate(session, "kernel")
    assert len(c.kernels) == 1
    assert e.ok and e.perf is None and e.find is None


def test_another_direction_and_batch(session):
    p = dataclasses.replace(recorded_problem(), direction="F", batchsize=64)
    _c, e = compile_and_evaluate(session, "find", problem=p)
    assert e.find is not None
    assert e.find.algorithm == "miopenConvolutionFwdAlgoDirect"
    assert e.find.time_ms == pytest.approx(TIME / 2)  # the FAKE scales by multiply-adds


def test_fins_not_applicable_ends_the_job_not_applicable(session):
    (p,) = parse_driver_line(
        "./bin/MIOpenDriver conv -n 8 -c 64 -H 28 -W 28 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 "
        "-l 1 -j 1 -m conv -g 1 -F 1"
    )
    c = MiopenBackend().compile(work(session, problem=p))
    assert c.not_applicable and c.reason == "fin miopen_find_compile: ConvAsm1x1UV2: Not Applicable"


def test_a_problem_fin_cannot_take_is_not_applicable_without_running_fin(session):
    p = dataclasses.replace(recorded_problem(), in_type="INT8", wei_type="INT8", out_type="INT32")
    s = with_env(session, FIN_PATH="/nope/fin")
    c = MiopenBackend().compile(work(s, problem=p))
    assert c.not_applicable and "data types INT8/INT8/INT32" in (c.reason or "")


def test_fin_failures_are_failed_outcomes_with_what_and_where(session, tmp_path):
    failing = script(tmp_path / "fin", "echo 'HIP error: no device' >&2\nexit 1\n")
    c = MiopenBackend().compile(work(with_env(session, FIN_PATH=failing)))
    assert not c.ok and not c.not_applicable
    assert c.reason is not None
    assert c.reason.startswith(
        "fin miopen_find_compile of job 5 (config 125733, ConvAsm1x1UV2): fin exited with status 1"
    )
    assert c.reason.endswith("HIP error: no device")
    kept = Path(c.reason.split("input ")[1].split(";")[0])
    assert kept.is_file() and json.loads(kept.read_text())[0]["solvers"] == [SOLVER]


def test_fin_time_limit(session, tmp_path):
    slow = script(tmp_path / "fin", "sleep 20\n")
    c = MiopenBackend().compile(work(with_env(session, FIN_PATH=slow, FIN_TIMEOUT_S="0.3")))
    assert not c.ok and "fin timed out after 0.3 s" in (c.reason or "")


def test_malformed_fin_output(session, tmp_path):
    fin = script(
        tmp_path / "fin",
        'out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done\n'
        'echo "[{" >"$out"\n',
    )
    c = MiopenBackend().compile(work(with_env(session, FIN_PATH=fin)))
    assert not c.ok and "is not JSON" in (c.reason or "") and "output.json" in (c.reason or "")


def test_a_db_key_other_than_the_configs_fails_the_job(session, tmp_path):
    fin = wrapped_fin(
        tmp_path, "out[1]['db_key'] = out[1]['db_key'].replace('NCHW', 'NHWC-NHWC-NHWC')"
    )
    c = MiopenBackend().compile(work(with_env(session, FIN_PATH=fin)))
    assert not c.ok
    assert "fin's db key 2048-7-7-1x1-1024-14-14-128-0x0-2x2-1x1-0-NHWC-NHWC-NHWC-FP32-B is " \
        "not config 125733's key 2048-7-7-1x1-1024-14-14-128-0x0-2x2-1x1-0-NCHW-FP32-B" in (
        c.reason or ""
    )  # fmt: skip


def test_a_corrupt_kernel_in_fins_output_names_solver_and_kernel(session, tmp_path):
    fin = wrapped_fin(
        tmp_path,
        "out[1]['miopen_find_compile_result'][0]['kernel_objects'][0]['md5_sum'] = '0' * 32",
    )
    c = MiopenBackend().compile(work(with_env(session, FIN_PATH=fin)))
    assert not c.ok
    assert "solver ConvAsm1x1UV2, kernel 'conv1x1u_stride2.s': md5 of the code object is " \
        f"{KERNEL_MD5}, not md5_sum {'0' * 32}" in (c.reason or "")  # fmt: skip


def test_a_failure_reason_from_fin_is_kept_verbatim(session, tmp_path):
    fin = wrapped_fin(
        tmp_path,
        "item = out[1]['miopen_find_compile_result'][0]\n"
        "item.update(find_compiled=False, reason='Solver throws exception: LDS exceeded')",
    )
    c = MiopenBackend().compile(work(with_env(session, FIN_PATH=fin)))
    assert not c.ok and not c.not_applicable
    assert (
        c.reason == "fin miopen_find_compile: ConvAsm1x1UV2: Solver throws exception: LDS exceeded"
    )


def test_a_result_without_the_jobs_solver(session, tmp_path):
    fin = wrapped_fin(tmp_path, "out[1]['miopen_find_compile_result'][0]['solver_name'] = 'X'")
    c = MiopenBackend().compile(work(with_env(session, FIN_PATH=fin)))
    assert not c.ok and "fin's result has no item for ConvAsm1x1UV2 (it has: Success)" in (
        c.reason or ""
    )


def test_an_evaluation_without_a_usable_time(session, tmp_path):
    backend = MiopenBackend()
    c = backend.compile(work(session))
    fin = wrapped_fin(tmp_path, "out[1]['miopen_find_eval_result'][0]['time'] = 0.0")
    e = backend.evaluate(
        work(with_env(session, FIN_PATH=fin), "eval", kernels=c.kernels, payload=c.payload)
    )
    assert not e.ok and e.reason == (
        "fin miopen_find_eval: ConvAsm1x1UV2: time 0.0 ms is not a positive duration"
    )


def test_a_stored_kernel_that_no_longer_matches_its_md5(session):
    backend = MiopenBackend()
    c = backend.compile(work(session))
    (k,) = c.kernels
    bad = KernelBinary(k.name, k.args, k.binary[:-1] + bytes([k.binary[-1] ^ 1]))
    e = backend.evaluate(work(session, "eval", kernels=(bad,), payload=c.payload))
    assert not e.ok
    assert e.reason == (
        f"job 5: solver ConvAsm1x1UV2, kernel 'conv1x1u_stride2.s': no stored kernel with md5 "
        f"{KERNEL_MD5} (missing or corrupted in the kernel cache); compile again"
    )


def test_payload_problems(session):
    backend = MiopenBackend()
    perf = backend.compile(work(session, step="perf"))
    e = backend.evaluate(work(session, "eval", "find", kernels=perf.kernels, payload=perf.payload))
    assert not e.ok and "payload is from 'miopen_perf_compile'" in (e.reason or "")
    e = backend.evaluate(work(session, "eval", "find", payload=None))
    assert not e.ok and "no usable compile payload" in (e.reason or "")
    e = backend.evaluate(
        work(session, "eval", "find", solver="ConvAsm1x1U", kernels=perf.kernels,
             payload=perf.payload.replace("miopen_perf_compile", "miopen_find_compile"))
    )  # fmt: skip
    assert not e.ok and "payload is for ConvAsm1x1UV2, not ConvAsm1x1U" in (e.reason or "")


def test_scratch_dirs_are_removed_after_success_and_kept_after_failure(session, tmp_path):
    root = Path(session.environment["FIN_SCRATCH_DIR"])
    compile_and_evaluate(session, "find")
    assert list(root.iterdir()) == []
    failing = script(tmp_path / "fin", "exit 2\n")
    MiopenBackend().compile(work(with_env(session, FIN_PATH=failing)))
    (kept,) = root.iterdir()
    assert kept.name.startswith("job5-a1-compile-") and (kept / "input.json").is_file()


def test_session_solvers_are_fins_convolution_solvers(session):
    solvers = MiopenBackend().session_solvers(session)
    by_name = {s.name: s for s in solvers}
    assert len(solvers) == 104 and "BnFwdInference" not in by_name  # batch norm left out
    s = by_name[SOLVER]
    assert (s.numeric_id, s.tunable, s.algorithm) == (3, True, "Direct")
    assert by_name["GemmFwdRest"].tunable is False


def test_session_applicability_in_batches_a_failing_config_alone(session, tmp_path):
    fin = wrapped_fin(
        tmp_path,
        "if any(j.get('config_tuna_id') == 13 for j in out[1:]): sys.exit(6)",
    )
    s = with_env(session, FIN_PATH=fin, FIN_APPLICABILITY_BATCH="2")
    one, three = (
        recorded_problem(),
        parse_driver_line(
            "./bin/MIOpenDriver conv -n 8 -c 64 -H 28 -W 28 -k 64 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 "
            "-l 1 -j 1 -m conv -g 1 -F 1"
        )[0],
    )
    int8 = dataclasses.replace(one, in_type="INT8", wei_type="INT8", out_type="INT32")
    problems = [(11, one), (12, three), (13, one), (14, one.with_direction("W")), (15, int8)]
    answer = MiopenBackend().session_applicability(s, problems)
    assert isinstance(answer, ApplicabilityAnswer)
    assert answer.applicable == {
        11: frozenset({SOLVER}), 12: frozenset(), 14: frozenset({SOLVER}), 15: frozenset()
    }  # fmt: skip
    assert list(answer.failed) == [13]
    assert "fin exited with status 6" in answer.failed[13]
    assert "config(s) 13" in answer.failed[13]
    assert answer.reason(12) == "Not Applicable (fin applicability)"
    assert "data types INT8/INT8/INT32" in answer.reason(15)


def test_a_bad_setting_fails_the_job_saying_which(session):
    s = with_env(session, FIN_TIMEOUT_S="soon")
    c = MiopenBackend().compile(work(s))
    assert not c.ok and c.reason == "FIN_TIMEOUT_S='soon' in the session environment: not a number"
    e = MiopenBackend().evaluate(work(s, "eval"))
    assert not e.ok and e.reason == c.reason


def test_applicability_stops_at_once_when_fin_cannot_be_started(session):
    s = with_env(session, FIN_PATH="/nope/fin", FIN_APPLICABILITY_BATCH="2")
    problems = [(i, recorded_problem()) for i in range(1, 6)]
    with pytest.raises(FinNotStartedError, match="cannot start fin `/nope/fin`"):
        MiopenBackend().session_applicability(s, problems)
    assert len(list(Path(session.environment["FIN_SCRATCH_DIR"]).iterdir())) == 1
