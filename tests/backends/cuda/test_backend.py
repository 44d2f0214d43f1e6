"""The cuda backend through the Backend contract: compile for real (NVRTC), evaluate on
FakeGpu — a fake device, since no GPU exists here (tuna.backends.cuda.fake)."""

from __future__ import annotations

import json
import os

import pytest

from tests.backends.cuda.cases import MEDIUM, ODD_1X1, conv, session, work
from tuna.backends import get_backend
from tuna.backends.base import Measurement, Owns, SessionInfo
from tuna.backends.cuda import CudaBackend
from tuna.backends.cuda import solvers as sv
from tuna.backends.cuda.device import GpuFacts, refusal
from tuna.backends.finalists import RETIME_TURNS

FAKE = {"CUDA_FAKE_GPU": "1"}
# The compile test's sample on MEDIUM: three valid, three rejected at compile time.
VALID = ["16,16,4,1,1,1,0,0", "64,64,8,4,4,4,1,1", "128,128,16,4,4,4,1,1"]
REJECTED = ["64,64,8,16,8,4,0,1", "128,128,32,4,4,4,1,1", "128,128,32,4,4,1,1,0"]


@pytest.fixture(scope="module")
def compiled():
    """One real compile of the sample (a strategy's round: the candidates are given)."""
    outcome = CudaBackend().compile(work(MEDIUM, sv.IGEMM, candidates=tuple(VALID + REJECTED)))
    assert outcome.ok, outcome.reason
    return outcome


def evaluate(compiled, env=None, **kw):
    env = {**FAKE, **(env or {})}
    kw.setdefault("kernels", compiled.kernels)
    kw.setdefault("payload", compiled.payload)
    return CudaBackend().evaluate(work(MEDIUM, sv.IGEMM, phase="eval", env=env, **kw))


def test_registered_as_cuda():
    b = get_backend("cuda")
    assert isinstance(b, CudaBackend) and b.evaluation_owns is Owns.DEVICE
    assert [s.name for s in b.solvers()] == [
        sv.IGEMM,
        sv.GEMM1X1,
        sv.BWD_DATA,
        sv.BWD_WEIGHTS,
        sv.GEMM1X1_BWD_DATA,
    ]
    assert all(s.tunable for s in b.solvers())
    space = b.tuning_space(MEDIUM, sv.IGEMM)
    assert list(space.candidates) == sv.space_params(MEDIUM, sv.IGEMM)
    assert space.names == sv.NAMES and space.features == b.problem_features(MEDIUM, sv.IGEMM)
    assert b.tuning_space(MEDIUM, sv.GEMM1X1).candidates == ()  # 3x3
    assert (
        b.applicability(MEDIUM, sv.GEMM1X1)
        == f"{sv.GEMM1X1} needs a 1x1 filter, stride 1 and no padding"
    )
    assert b.applicability(MEDIUM.with_direction("B"), sv.IGEMM) == (
        f"{sv.IGEMM} computes forward (direction F), the problem is backward data (direction B)"
    )
    assert b.tuning_space(MEDIUM.with_direction("B"), sv.IGEMM).candidates == ()


def test_compile_keeps_a_cubin_per_valid_candidate_and_the_report_of_each(compiled):
    payload = json.loads(compiled.payload)
    assert payload["arch"] == "sm_90" and payload["compiler"] == "nvrtc"
    assert payload["compiler_version"][0] == 13
    table = payload["candidates"]
    assert list(table) == VALID + REJECTED
    names = {k.name for k in compiled.kernels}
    assert payload["support"] in names and len(names) == 1 + len(VALID)
    for params in VALID:
        entry = table[params]
        assert entry["kernel"] in names and entry["reason"] is None
        assert entry["report"]["registers"] > 0 and entry["blocks_per_sm"] >= 1
    reasons = [table[p]["reason"].split(":")[0] for p in REJECTED]
    assert reasons == ["spills", "shared memory", "occupancy 0"]
    assert all("kernel" not in table[p] for p in REJECTED)
    for k in compiled.kernels:
        assert k.binary[:4] == b"\x7fELF" and k.args.startswith("--gpu-architecture=sm_90 -DN_=2")


def test_the_perf_step_samples_the_space_with_the_default_first():
    b = CudaBackend()
    knobs_env = {"CUDA_MAX_CANDIDATES": "5"}
    from tuna.backends.cuda import Knobs

    chosen = b.candidates(MEDIUM, sv.IGEMM, "perf", Knobs.of(knobs_env))
    assert len(chosen) == 5 and chosen[0] == sv.default_params(MEDIUM, sv.IGEMM)
    assert chosen == b.candidates(MEDIUM, sv.IGEMM, "perf", Knobs.of(knobs_env))  # seeded
    assert b.candidates(MEDIUM, sv.IGEMM, "find", Knobs.of(knobs_env)) == chosen[:1]


def test_evaluate_times_the_right_candidates_and_records_the_rejected(compiled):
    e = evaluate(compiled, env={"CUDA_REPEATS": "5"})
    assert e.ok, e.reason
    by = {m.params: m for m in e.measurements}
    assert set(by) == set(VALID + REJECTED)
    for p in REJECTED:
        assert not by[p].valid and by[p].reason.startswith("rejected at compile time: ")
    timed = {p: by[p].time_ms for p in VALID}
    assert all(t is not None and t > 0 for t in timed.values())
    best = min(timed, key=timed.get)
    assert e.perf is not None and e.perf.params == best
    assert e.find is not None and e.find.time_ms == timed[best] and e.find.workspace == 0
    assert e.find.algorithm == "miopenConvolutionFwdAlgoImplicitGEMM"
    payload = json.loads(compiled.payload)
    assert [k.name for k in e.kernels] == [payload["candidates"][best]["kernel"]]


def test_a_wrong_candidate_is_invalid_and_never_wins(compiled):
    fastest = evaluate(compiled).perf.params
    e = evaluate(compiled, env={"CUDA_FAKE_WRONG": fastest})
    by = {m.params: m for m in e.measurements}
    assert not by[fastest].valid and by[fastest].reason == "verification failed (max error 0.5)"
    assert e.ok and e.perf.params != fastest


def test_a_crash_or_fault_loses_one_candidate_not_the_evaluation(compiled):
    e = evaluate(compiled, env={"CUDA_FAKE_CRASH": VALID[1], "CUDA_FAKE_FAULT": VALID[2]})
    by = {m.params: m for m in e.measurements}
    assert by[VALID[1]].reason == "crashed (SIGSEGV)"
    assert by[VALID[2]].reason == "failed on the GPU (CUDA_ERROR_ILLEGAL_ADDRESS)"
    assert by[VALID[0]].valid and e.ok and e.perf.params == VALID[0]


def test_cubins_for_another_arch_or_a_newer_compiler_are_refused(compiled):
    e = evaluate(compiled, env={"CUDA_FAKE_ARCH": "sm_80"})
    assert not e.ok and e.reason.startswith("the cubins are for sm_90, this GPU (FakeGpu")
    assert {m.params for m in e.measurements} == set(REJECTED)  # those still count
    e = evaluate(compiled, env={"CUDA_FAKE_DRIVER": "12.8"})
    assert not e.ok
    assert e.reason.startswith(
        "the cubins were built by nvrtc 13.0, newer than this driver accepts (CUDA 12.8)"
    )


def test_refusal_rules():
    gpu = GpuFacts("H100", "sm_90", 132, 80 << 30, (13, 0))
    assert refusal(gpu, "sm_90", "nvrtc 13.0", (13, 0)) is None
    assert refusal(gpu, "sm_90", "nvrtc 12.9", (12, 9)) is None
    assert refusal(gpu, "sm_90", "nvrtc 13.2", (13, 2)) is None  # minor version compatibility
    assert "newer than this driver accepts" in refusal(gpu, "sm_90", "nvrtc 14.0", (14, 0))
    assert "this GPU (H100) is sm_90" in refusal(gpu, "sm_89", "nvrtc 13.0", (13, 0))


def test_measured_candidates_are_not_timed_again(compiled):
    before = (Measurement(VALID[0], 0.001, True), Measurement(VALID[1], None, False, "crashed"))
    e = evaluate(compiled, measured=before)
    timed = [m.params for m in e.measurements if m.valid]
    # VALID[2] once, then with VALID[0] (the other finalist, measured before) in each turn
    assert sorted(timed) == sorted([VALID[2]] * (1 + RETIME_TURNS) + [VALID[0]] * RETIME_TURNS)
    assert {m.params for m in e.measurements if not m.valid} == set(REJECTED)
    assert e.perf.params == VALID[0]  # 1 us before: faster than anything the fake times


def test_the_finalists_are_timed_again_in_turns_before_a_winner_is_stored(compiled):
    """Issue #24: as cpuconv's, a cuda evaluation that stores a winner times its finalists
    again in turns, and each counts by its fastest timing (tuna.backends.finalists)."""
    e = evaluate(compiled, env={"CUDA_FAKE_WRONG": VALID[1]})
    timed = [m for m in e.measurements if m.valid]
    counts = {p: sum(m.params == p for m in timed) for p in VALID}
    assert counts == {VALID[0]: 1 + RETIME_TURNS, VALID[1]: 0, VALID[2]: 1 + RETIME_TURNS}
    fastest = min(timed, key=lambda m: m.time_ms)
    assert (e.find.time_ms, e.perf.params) == (fastest.time_ms, fastest.params)
    round_only = evaluate(compiled, choose=False)  # a strategy's round stores no winner
    assert len(round_only.measurements) == len(VALID + REJECTED)


def test_a_strategy_round_returns_measurements_only(compiled):
    e = evaluate(compiled, choose=False, strategy="anneal", budget=40)
    assert e.ok and e.perf is None and e.find is None
    assert {m.strategy for m in e.measurements} == {"anneal"}
    assert {m.budget for m in e.measurements} == {40}


def test_without_a_driver_the_evaluation_fails_in_one_line(compiled):
    e = CudaBackend().evaluate(
        work(MEDIUM, sv.IGEMM, phase="eval", kernels=compiled.kernels, payload=compiled.payload)
    )
    assert not e.ok and "\n" not in e.reason
    assert e.reason.startswith("no CUDA driver on this host (Failed to dlopen libcuda.so.1)")


def test_a_missing_payload_or_kernel_is_a_clear_failure(compiled):
    e = CudaBackend().evaluate(work(MEDIUM, sv.IGEMM, phase="eval", env=FAKE, payload="{}"))
    assert e.reason == "no usable compile payload: run the compile phase again"
    e = evaluate(compiled, kernels=compiled.kernels[:1])
    assert e.reason.startswith("compiled kernels missing: conv-")
    old = json.dumps({**json.loads(compiled.payload), "version": 1})
    e = evaluate(compiled, payload=old)
    assert e.reason == (
        "compiled by another version of the cuda backend (payload version 1, this one reads 2): "
        "run the compile phase again"
    )


def test_the_1x1_solver_compiles_and_evaluates():
    b = CudaBackend()
    c = b.compile(work(ODD_1X1, sv.GEMM1X1, "find"))
    assert c.ok and len(c.kernels) == 2
    e = b.evaluate(
        work(
            ODD_1X1,
            sv.GEMM1X1,
            "find",
            phase="eval",
            env=FAKE,
            kernels=c.kernels,
            payload=c.payload,
        )
    )
    assert e.ok and e.perf is None and e.find.algorithm == "miopenConvolutionFwdAlgoGEMM"


@pytest.mark.parametrize(
    ("direction", "solver", "algorithm"),
    [
        ("B", sv.BWD_DATA, "miopenConvolutionBwdDataAlgoImplicitGEMM"),
        ("W", sv.BWD_WEIGHTS, "miopenConvolutionBwdWeightsAlgoImplicitGEMM"),
        ("B", sv.GEMM1X1_BWD_DATA, "miopenConvolutionBwdDataAlgoGEMM"),
    ],
)
def test_the_backward_solvers_compile_and_evaluate(direction, solver, algorithm):
    b, p = CudaBackend(), ODD_1X1.with_direction(direction)
    c = b.compile(work(p, solver, "perf", env={"CUDA_MAX_CANDIDATES": "3"}))
    assert c.ok, c.reason
    table = json.loads(c.payload)["candidates"]
    assert len(table) == 3  # kernels: the reference and a cubin per valid candidate
    assert len(c.kernels) == 1 + sum(1 for e in table.values() if e.get("kernel"))
    assert "-DDIR_=" + str("FBW".index(direction)) in c.kernels[0].args
    e = b.evaluate(
        work(p, solver, "perf", phase="eval", env=FAKE, kernels=c.kernels, payload=c.payload)
    )
    assert e.ok and e.find.algorithm == algorithm
    assert table[e.perf.params]["kernel"] == e.kernels[0].name


def test_an_unknown_session_arch_fails_the_compile():
    b = CudaBackend()
    w = work(ODD_1X1, sv.GEMM1X1, "find")
    import dataclasses

    w = dataclasses.replace(w, session=SessionInfo(id=1, arch="gfx90a", num_cu=104, backend="cuda"))
    assert b.compile(w).reason.startswith("session arch: unknown CUDA architecture 'gfx90a'")


def test_an_evaluation_is_blocked_on_a_gpu_other_than_the_sessions():
    b = CudaBackend()
    assert b.evaluation_blocked(session(CUDA_FAKE_GPU="1")) is None
    assert b.platform_facts(session(CUDA_FAKE_GPU="1"))["gpu"]["arch"] == "sm_90"
    assert CudaBackend().evaluation_blocked(session(CUDA_FAKE_GPU="1", CUDA_FAKE_SMS="114")) == (
        "its GPU (FakeGpu (a test double, not a GPU)) has 114 SMs, the session tunes 132 "
        "(its --num-cu): evaluate on a GPU of the session's size"
    )
    blocked = CudaBackend().evaluation_blocked(session())
    assert blocked.startswith("no CUDA driver on this host") and "\n" not in blocked
    assert CudaBackend().platform_facts(session())["gpu"] == {"unavailable": blocked}


def test_an_evaluation_worker_gets_its_gpu():
    b = CudaBackend()
    s = SessionInfo(id=1, arch="sm_90", num_cu=132, backend="cuda")
    assert b.worker_environment(s, "eval", 3, "/tmp/x") == {"CUDA_VISIBLE_DEVICES": "3"}
    assert b.container_args("eval", 3) == ["--gpus", "device=3"]
    assert b.worker_environment(s, "compile", None, "/tmp/x") == {}
    assert b.container_args("compile", None) == []


def test_the_driver_is_opened_in_a_child_process_only(compiled, monkeypatch, tmp_path):
    """The evaluation forks before any CUDA call: the worker's own process never calls cuInit
    (a CUDA context does not survive a fork, and a fault would poison it)."""
    from tuna.backends.cuda import device

    calls = tmp_path / "pids"

    def init():
        with calls.open("a") as f:
            f.write(f"{os.getpid()}\n")
        raise device.DriverUnavailableError("no CUDA driver on this host (test)")

    monkeypatch.setattr(device, "init", init)
    e = CudaBackend().evaluate(
        work(MEDIUM, sv.IGEMM, phase="eval", kernels=compiled.kernels, payload=compiled.payload)
    )
    assert e.reason == "no CUDA driver on this host (test)"
    pids = calls.read_text().split()
    assert len(pids) == 1 and int(pids[0]) != os.getpid()


def test_a_problem_too_large_for_32_bit_indices_is_not_applicable():
    huge = conv(
        batchsize=512, in_channels=512, out_channels=512, in_size=(128, 128), fil_size=(3, 3)
    )
    assert sv.applicability(huge, sv.IGEMM).endswith("the cuda kernels index with 32-bit integers")
