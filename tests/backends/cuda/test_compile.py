"""The compile phase's judge: NVRTC compiles a fixed sample of the space for sm_90, and the
candidates expected to be rejected are, for the expected reasons (registers, shared memory,
occupancy). Register counts are NVRTC 13.0's (pinned in pyproject's cuda extra)."""

from __future__ import annotations

import shutil

import pytest

from tests.backends.cuda.cases import MEDIUM, MEDIUM_BWD_DATA
from tuna.backends.cuda import compile as cc
from tuna.backends.cuda import occupancy as occ
from tuna.backends.cuda import solvers as sv

SM90 = occ.limits("sm_90")
# params -> the start of the reason it is rejected for (None: valid), on MEDIUM.
SAMPLE = {
    "16,16,4,1,1,1,0,0": None,  # the default
    "64,64,8,4,4,4,1,1": None,
    "128,128,16,4,4,4,1,1": None,  # 1,024 threads that fit (56 registers)
    "64,64,8,16,8,4,0,1": "spills:",  # 128 accumulators, double-buffered: over 255 registers
    "128,128,32,4,4,4,1,1": "shared memory:",  # 2 x 32 x (128 + 128 + 2) floats = 66,048 B
    "128,128,32,4,4,1,1,0": "occupancy 0:",  # 1,024 threads at 80 registers
}


# The same for backward data on MEDIUM_BWD_DATA (its weights read one float at a time: VW 1).
SAMPLE_BWD_DATA = {
    "16,16,4,1,1,1,0,0": None,
    "64,64,8,4,4,1,1,1": None,
    "64,64,8,16,8,1,0,1": "spills:",
    "128,128,32,4,4,1,1,1": "shared memory:",
    "128,128,32,4,4,1,1,0": "occupancy 0:",  # 1,024 threads at 80 registers
}


@pytest.fixture(scope="module")
def nvrtc():
    compiler = cc.find_compiler("nvrtc")
    assert compiler.kind == "nvrtc", "the cuda extra (NVRTC wheels) is part of the test environment"
    return compiler


@pytest.fixture(scope="module")
def sample(nvrtc):
    return {
        c.params: c
        for c in cc.compile_candidates(nvrtc, MEDIUM, sv.IGEMM, list(SAMPLE), "sm_90", jobs=2)
    }


def test_the_sample_is_judged_as_expected(sample):
    for params, expected in SAMPLE.items():
        c = sample[params]
        if expected is None:
            assert c.valid, (params, c.reason)
            assert c.cubin is not None and c.cubin[:4] == b"\x7fELF"
            assert c.report is not None and c.report.spill_stores == 0
            assert c.blocks_per_sm >= 1
        else:
            assert not c.valid and c.cubin is None, params
            assert c.reason is not None and c.reason.startswith(expected), (params, c.reason)


def test_backward_data_is_judged_for_the_same_reasons(nvrtc):
    built = cc.compile_candidates(
        nvrtc, MEDIUM_BWD_DATA, sv.BWD_DATA, list(SAMPLE_BWD_DATA), "sm_90", jobs=2
    )
    for c in built:
        expected = SAMPLE_BWD_DATA[c.params]
        if expected is None:
            assert c.valid and c.cubin is not None and c.blocks_per_sm >= 1, (c.params, c.reason)
        else:
            assert not c.valid and c.reason is not None, c.params
            assert c.reason.startswith(expected), (c.params, c.reason)


def test_backward_weights_compiles_vector_loads_of_dy(nvrtc):
    p = MEDIUM.with_direction("W")  # P x Q = 196: dy's rows in 4-float vectors
    c = cc.compile_candidate(nvrtc, p, sv.BWD_WEIGHTS, "64,64,8,4,4,4,1,1", "sm_90")
    assert c.valid and c.report is not None and c.report.spill_stores == 0, c.reason


def test_reasons_name_the_numbers(sample):
    spill = sample["64,64,8,16,8,4,0,1"]
    assert spill.report is not None and spill.report.registers == 255
    assert f"{spill.report.spill_stores} bytes of spill stores" in spill.reason
    assert "66048 bytes, over the 49152 bytes" in sample["128,128,32,4,4,4,1,1"].reason
    occupancy = sample["128,128,32,4,4,1,1,0"]
    assert occupancy.reason == (
        f"occupancy 0: 1024 threads at {occupancy.report.registers} registers and "
        f"{occupancy.report.smem} bytes of shared memory do not fit one sm_90 SM (registers)"
    )


def test_a_shared_memory_overflow_is_caught_before_compiling(nvrtc):
    c = cc.compile_candidate(nvrtc, MEDIUM, sv.IGEMM, "128,128,32,4,4,4,1,1", "sm_90")
    assert c.report is None and c.seconds == 0.0  # no compiler ran


def test_the_support_kernels_compile(nvrtc):
    built = cc.compile_support(nvrtc, MEDIUM, "sm_90")
    assert built.cubin is not None and built.cubin[:4] == b"\x7fELF"
    for kernel in ("conv_reference", "fill", "compare"):
        assert f"Compiling entry function '{kernel}' for 'sm_90'" in built.log


@pytest.mark.parametrize("direction", ["B", "W"])
def test_the_backward_reference_kernels_compile(nvrtc, direction):
    built = cc.compile_support(nvrtc, MEDIUM.with_direction(direction), "sm_90")
    assert built.cubin is not None, built.log


def test_a_candidate_outside_the_space_is_refused_with_the_reason_before_compiling(nvrtc):
    # VW 4 parses, but backward data's kernel reads the weights one float at a time: compiled,
    # it would leave three of every four A values unset
    c = cc.compile_candidate(nvrtc, MEDIUM_BWD_DATA, sv.BWD_DATA, "64,64,8,4,4,4,1,1", "sm_90")
    assert not c.valid and c.report is None and c.seconds == 0.0
    assert c.reason == (
        "not in CudaImplicitGemmBwdData's space for this problem: VW over 1: backward data "
        "reads the weights transposed, one float at a time"
    )


def test_another_arch_is_compiled_for_it(nvrtc):
    c = cc.compile_candidate(nvrtc, MEDIUM, sv.IGEMM, "16,16,4,1,1,1,0,0", "sm_80")
    assert c.valid


@pytest.mark.skipif(
    shutil.which("nvcc") is None and not __import__("os").path.exists("/usr/local/cuda/bin/nvcc"),
    reason="no nvcc here",
)
def test_nvcc_compiles_the_same_candidate():
    compiler = cc.find_compiler("nvcc")
    assert compiler.kind == "nvcc"
    c = cc.compile_candidate(compiler, MEDIUM, sv.IGEMM, "64,64,8,4,4,4,1,1", "sm_90")
    assert c.valid and c.report is not None and c.report.registers > 0


LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'conv' for 'sm_90'
ptxas info    : Function properties for conv
ptxas         .     64 bytes stack frame, 60 bytes spill stores, 56 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 8192 bytes smem, 400 bytes cmem[0]
"""


def test_the_ptxas_report_parses():
    assert cc.PtxasReport.parse(LOG) == cc.PtxasReport(255, 8192, 64, 60, 56)
    assert cc.PtxasReport.parse("no report") is None
    no_smem = "ptxas info    : Used 32 registers, used 0 barriers, 380 bytes cmem[0]"
    assert cc.PtxasReport.parse(no_smem) == cc.PtxasReport(32, 0, 0, 0, 0)


def test_judge_puts_spills_before_shared_memory_before_occupancy():
    spill_and_big = cc.PtxasReport(255, 60000, 64, 8, 8)
    assert cc.judge(spill_and_big, 256, SM90)[1].startswith("spills:")
    big = cc.PtxasReport(40, 60000, 0, 0, 0)
    assert cc.judge(big, 256, SM90)[1].startswith("shared memory: 60000 bytes")
    assert cc.judge(cc.PtxasReport(40, 8192, 0, 0, 0), 256, SM90) == (
        occ.occupancy(SM90, 256, 40, 8192),
        None,
    )


def test_nvrtc_installed_without_its_library_is_named_in_the_error(monkeypatch, tmp_path):
    """As in an image whose NVRTC wheel sits where cuda-pathfinder does not look: the error
    says NVRTC's library did not load, not that nothing is installed."""
    from cuda.bindings import nvrtc

    def missing():
        raise RuntimeError('Failure finding "libnvrtc.so.13": No such file\nmore detail')

    monkeypatch.setattr(nvrtc, "nvrtcVersion", missing)
    monkeypatch.setattr(cc.shutil, "which", lambda name: None)
    monkeypatch.setattr(cc, "NVCC_FALLBACK", tmp_path / "no-nvcc")
    with pytest.raises(cc.CompilerUnavailableError) as raised:
        cc.find_compiler()
    assert str(raised.value) == (
        "no CUDA compiler: cuda-bindings is installed but NVRTC did not load (Failure finding "
        '"libnvrtc.so.13": No such file): install nvidia-cuda-nvrtc where cuda-bindings finds '
        "it (pip install 'tuna[cuda]' in the same environment) or put nvcc on PATH"
    )
