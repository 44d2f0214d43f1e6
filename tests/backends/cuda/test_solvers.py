from __future__ import annotations

import pytest

from tests.backends.cuda.cases import (
    EVEN_1X1,
    MEDIUM,
    MEDIUM_BWD_DATA,
    ODD_1X1,
    ODD_LARGE_TILES,
    conv,
)
from tuna.backends.cuda import features
from tuna.backends.cuda import solvers as sv


def test_the_default_is_valid_wherever_a_solver_applies():
    problems = [q.with_direction(d) for q in (MEDIUM, ODD_1X1, EVEN_1X1) for d in "FBW"]
    applied = 0
    for p in problems:
        for solver in sv.BY_NAME:
            if sv.applicability(p, solver) is None:
                applied += 1
                assert sv.default_params(p, solver) == "16,16,4,1,1,1,0,0"
                assert sv.default_params(p, solver) in sv.space_params(p, solver)
    assert applied == 13  # each direction's implicit GEMM on all three; the 1x1 solvers forward
    # and backward data on the two 1x1 problems


def test_each_solver_computes_one_direction_and_says_so():
    assert sv.applicability(MEDIUM, sv.BWD_DATA) == (
        "CudaImplicitGemmBwdData computes backward data (direction B), the problem is "
        "forward (direction F)"
    )
    assert sv.applicability(MEDIUM.with_direction("W"), sv.IGEMM) == (
        "CudaImplicitGemmFwd computes forward (direction F), the problem is backward weights "
        "(direction W)"
    )
    assert sv.tuning_space(MEDIUM, sv.BWD_WEIGHTS) == []
    assert sv.algorithm_name(sv.BWD_DATA) == "miopenConvolutionBwdDataAlgoImplicitGEMM"
    assert sv.algorithm_name(sv.BWD_WEIGHTS) == "miopenConvolutionBwdWeightsAlgoImplicitGEMM"
    assert sv.problem_macros(MEDIUM_BWD_DATA)["DIR_"] == 1
    assert sv.applicability(MEDIUM_BWD_DATA, sv.GEMM1X1_BWD_DATA) == (
        "CudaGemm1x1BwdData needs a 1x1 filter, stride 1 and no padding"
    )
    b = EVEN_1X1.with_direction("B")  # 6 x 6 positions: dy's rows in vectors of up to 4
    space = sv.tuning_space(b, sv.GEMM1X1_BWD_DATA)
    vws = {sv.parse_params(sv.GEMM1X1_BWD_DATA, t)["VW"] for t in space}
    assert vws == {1, 2, 4}
    assert sv.gemm_shape(b, sv.GEMM1X1_BWD_DATA) == (12, 36, 40, 2)  # C, H x W, K, images


def test_the_backward_gemms_and_their_vectors():
    b, w = MEDIUM_BWD_DATA, MEDIUM.with_direction("W")
    assert sv.gemm_shape(b, sv.BWD_DATA) == (128, 2 * 14 * 14, 64 * 9, 1)  # dx's positions
    assert sv.gemm_shape(w, sv.BWD_WEIGHTS) == (128, 64 * 9, 2 * 14 * 14, 1)  # over positions
    # Backward data reads the weights transposed: no vectors. Backward weights reads dy's rows
    # of P x Q positions in vectors where P x Q allows: 14 x 14 does, 11 x 13 does not.
    vws = {sv.parse_params(sv.BWD_DATA, t)["VW"] for t in sv.space_params(b, sv.BWD_DATA)}
    assert vws == {1}
    vws = {sv.parse_params(sv.BWD_WEIGHTS, t)["VW"] for t in sv.space_params(w, sv.BWD_WEIGHTS)}
    assert vws == {1, 2, 4}
    odd = ODD_LARGE_TILES.with_direction("W")
    odd_vws = {
        sv.parse_params(sv.BWD_WEIGHTS, t)["VW"] for t in sv.space_params(odd, sv.BWD_WEIGHTS)
    }
    assert odd_vws == {1}


def test_the_space_holds_only_runnable_candidates():
    space = sv.space_params(MEDIUM, sv.IGEMM)
    assert len(space) == 14112 and len(set(space)) == len(space)
    for text in space[::97]:
        v = sv.parse_params(sv.IGEMM, text)
        assert sv.threads(v) % 32 == 0 and 32 <= sv.threads(v) <= 1024
        assert v["TM"] * v["TN"] <= sv.MAX_ACCUMULATORS and v["VW"] <= v["BK"]


def test_vector_width_needs_rows_that_start_on_a_vector():
    odd = {sv.parse_params(sv.GEMM1X1, t)["VW"] for t in sv.space_params(ODD_1X1, sv.GEMM1X1)}
    assert odd == {1}  # C = 7, 35 output positions
    even = {sv.parse_params(sv.GEMM1X1, t)["VW"] for t in sv.space_params(EVEN_1X1, sv.GEMM1X1)}
    assert even == {1, 2, 4}


def test_tiles_far_wider_than_the_matrix_are_left_out():
    small = conv(batchsize=1, in_channels=4, out_channels=8, in_size=(4, 4), fil_size=(1, 1))
    values = [sv.parse_params(sv.IGEMM, t) for t in sv.space_params(small, sv.IGEMM)]
    assert {v["BM"] for v in values} == {16} and {v["BN"] for v in values} == {16}
    assert {v["BK"] for v in values} == {4}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("16,16,4,1,1,1,0", "takes 8 parameters"),
        ("16,16,4,1,1,3,0,0", "VW=3 is not one of"),
        ("a,b", "not comma-separated integers"),
    ],
)
def test_bad_parameters_say_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        sv.parse_params(sv.IGEMM, text)


def test_grid_and_shared_memory_of_a_candidate():
    v = sv.parse_params(sv.IGEMM, "64,128,8,4,8,4,1,1")
    assert sv.grid(MEDIUM, sv.IGEMM, v) == (4, 2, 1)  # N = 2 x 196 = 392, M = 128
    assert sv.static_smem_bytes(v) == 4 * 2 * 8 * (64 + 128 + 2)
    assert sv.grid(EVEN_1X1, sv.GEMM1X1, v) == (1, 1, 2)  # one GEMM per image


def test_features_describe_edges_and_waves():
    f = features.problem_features(MEDIUM, sv.IGEMM)
    assert (f["gemm_m"], f["gemm_n"], f["gemm_k"], f["batches"]) == (128, 392, 576, 1)
    b = features.problem_features(MEDIUM_BWD_DATA, sv.BWD_DATA)
    assert (f["direction"], b["direction"]) == (0.0, 1.0)
    assert (b["gemm_m"], b["gemm_n"], b["gemm_k"]) == (128, 392, 576)  # M = C, N = N x H x W
    c = features.candidate_features(f, sv.parse_params(sv.IGEMM, "128,128,8,4,4,1,0,0"))
    assert c["rows_used"] == 1.0 and c["cols_used"] == 392 / 512
    assert c["threads"] == 1024 and c["blocks"] == 4 and 0 < c["occupancy_est"] <= 1
    assert features.candidate_features({}, {"BM": 16}) == {}
