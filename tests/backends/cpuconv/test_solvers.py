from __future__ import annotations

import dataclasses

import pytest

from tests.backends.cpuconv.cases import SHAPES, conv
from tuna.backends.cpuconv import solvers as sv

P3 = conv(
    batchsize=1, in_channels=64, out_channels=64, in_size=(56, 56), fil_size=(3, 3), pad=(1, 1)
)
P1 = conv(batchsize=1, in_channels=256, out_channels=64, in_size=(56, 56), fil_size=(1, 1))


def test_solvers_have_names_ids_and_algorithms():
    assert [(s.name, s.tunable, s.numeric_id, s.algorithm) for s in sv.SOLVERS] == [
        ("CpuDirectNaive", False, 1, "Direct"),
        ("CpuDirectTiled", True, 2, "Direct"),
        ("CpuIm2colGemm", True, 3, "GEMM"),
        ("CpuGemm1x1", True, 4, "GEMM"),
        ("CpuWinograd2x3", True, 5, "Winograd"),
    ]
    assert sv.algorithm_name(sv.TILED, "F") == "miopenConvolutionFwdAlgoDirect"
    assert sv.algorithm_name(sv.IM2COL, "B") == "miopenConvolutionBwdDataAlgoGEMM"
    assert sv.algorithm_name(sv.GEMM1X1, "W") == "miopenConvolutionBwdWeightsAlgoGEMM"
    assert sv.algorithm_name(sv.WINOGRAD, "B") == "miopenConvolutionBwdDataAlgoWinograd"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            dict(spatial_dim=3, in_size=(4, 8, 8), fil_size=(3, 3, 3), pad=(), stride=(),
                 dilation=(), trans_output_pad=(), in_layout="", fil_layout="", out_layout=""),
            "3D convolution: cpuconv kernels are 2D only",
        ),
        (dict(in_type="FP16", wei_type="FP16", out_type="FP16"), "data types FP16/FP16/FP16"),
        (dict(in_cast="FP8"), "FP32 only, no casts"),
        (dict(in_layout="NHWC", out_layout="NHWC"), "layouts NHWC/NCHW/NHWC"),
        (dict(mode="trans"), "transposed convolution"),
    ],
)  # fmt: skip
def test_what_no_solver_supports_is_not_applicable_with_a_reason(change, reason):
    p = dataclasses.replace(P3, **change)
    for s in sv.SOLVERS:
        assert reason in (sv.applicability(p, s.name) or "")
        assert sv.tuning_space(p, s.name) == []


def test_applicability_rules():
    assert {s.name for s in sv.SOLVERS if sv.applicability(P3, s.name) is None} == {
        sv.NAIVE, sv.IM2COL, sv.WINOGRAD
    }  # fmt: skip
    assert {s.name for s in sv.SOLVERS if sv.applicability(P1, s.name) is None} == {
        sv.NAIVE, sv.IM2COL, sv.GEMM1X1
    }  # fmt: skip
    strided = dataclasses.replace(P1, stride=(2, 2))
    assert sv.applicability(strided, sv.GEMM1X1) == (
        "CpuGemm1x1 needs a 1x1 filter, stride 1 and no padding"
    )
    dilated = dataclasses.replace(P3, dilation=(2, 2), pad=(2, 2))
    assert "3x3 filter, stride 1 and dilation 1" in (sv.applicability(dilated, sv.WINOGRAD) or "")
    assert "F and B only" in (sv.applicability(P3.with_direction("W"), sv.WINOGRAD) or "")
    assert sv.applicability(P3.with_direction("B"), sv.WINOGRAD) is None
    clamped = conv(batchsize=1, in_channels=1, out_channels=1, in_size=(1, 1), fil_size=(3, 3))
    assert "full size" in (sv.applicability(clamped, sv.WINOGRAD) or "")
    assert "unknown cpuconv solver 'Nope'" in (sv.applicability(P3, "Nope") or "")


def test_direct_tiled_is_not_offered_where_the_gemm_solvers_win():
    """Forward, one group, an output of 14x14 or more: CpuDirectTiled won no such layer
    (bench/cpuconv.md), so the quick start and every perf job stop paying for its space."""
    reason = sv.applicability(P3, sv.TILED) or ""
    assert "not offered for a forward convolution of one group" in reason
    assert "(56x56)" in reason and sv.tuning_space(P3, sv.TILED) == []
    at_14 = conv(batchsize=1, in_channels=256, out_channels=256, in_size=(14, 14),
                 fil_size=(3, 3), pad=(1, 1))  # fmt: skip
    at_7 = dataclasses.replace(at_14, in_size=(7, 7))
    assert sv.applicability(at_14, sv.TILED) is not None
    assert sv.applicability(at_7, sv.TILED) is None  # where it did win: a 7x7 output
    assert sv.applicability(P3.with_direction("B"), sv.TILED) is None
    assert sv.applicability(P3.with_direction("W"), sv.TILED) is None
    grouped = dataclasses.replace(P3, group_count=2)
    assert sv.applicability(grouped, sv.TILED) is None
    assert sv.applicability(P3, sv.IM2COL) is None  # a GEMM solver is always there instead


def test_spaces_are_large_pruned_and_hold_the_default():
    sizes = {s: len(sv.tuning_space(P3, s)) for s in sv.SPECS}
    sizes[sv.TILED] = len(sv.tuning_space(P3.with_direction("B"), sv.TILED))
    assert sizes[sv.TILED] >= 200 and sizes[sv.IM2COL] >= 200 and sizes[sv.WINOGRAD] >= 200
    assert len(sv.tuning_space(P1, sv.GEMM1X1)) >= 150
    assert sv.tuning_space(P3, sv.NAIVE) == [] and sv.space_params(P3, sv.NAIVE) == [""]
    for p in (P3, P1, *SHAPES.values()):
        for d in "FBW":
            q = p.with_direction(d)
            for s in sv.SPECS:
                if sv.applicability(q, s) is None:
                    space = sv.tuning_space(q, s)
                    assert sv.default_params(q, s) == space[0], (s, q)
                    assert len(set(space)) == len(space)


def test_validity_prunes_impossible_combinations():
    tiny = conv(batchsize=1, in_channels=3, out_channels=6, in_size=(3, 3), fil_size=(3, 3))
    space = [sv.parse_params(sv.TILED, t) for t in sv.tuning_space(tiny, sv.TILED)]
    assert space and all(v["TW"] == 4 for v in space)  # output 1 wide: no wider tile
    assert {v["TK"] for v in space} == {1, 2}  # 6 output channels: TK divides it
    assert all(v["TH"] == 1 and v["NT"] * v["TK"] <= 6 for v in space)
    gemm = [sv.parse_params(sv.IM2COL, t) for t in sv.tuning_space(P3, sv.IM2COL)]
    assert all(v["MR"] * v["NV"] <= sv.MAX_ACCUMULATORS for v in gemm)
    small_k = [sv.parse_params(sv.GEMM1X1, t) for t in sv.tuning_space(
        conv(batchsize=1, in_channels=16, out_channels=4, in_size=(2, 2), fil_size=(1, 1)),
        sv.GEMM1X1,
    )]  # fmt: skip
    assert {v["KC"] for v in small_k} == {64} and {v["MR"] for v in small_k} <= {1, 2, 4}
    assert {v["VW"] for v in small_k} == {4}  # 4 columns: no 8-wide vectors


def test_params_round_trip_and_bad_ones_are_named():
    assert sv.parse_params(sv.IM2COL, "4,2,8,128,2,1,1") == {
        "MR": 4, "NV": 2, "VW": 8, "KC": 128, "NT": 2, "LO": 1, "PB": 1
    }  # fmt: skip
    # written before the loop order and packing existed: the kernel it named then
    assert sv.parse_params(sv.GEMM1X1, "4,2,8,128,2") == sv.parse_params(
        sv.GEMM1X1, "4,2,8,128,2,0,0"
    )
    with pytest.raises(ValueError, match="takes 7 parameters"):
        sv.parse_params(sv.IM2COL, "4,2,8,128,2,1")
    with pytest.raises(ValueError, match="LO=2 is not one of"):
        sv.parse_params(sv.IM2COL, "4,2,8,128,2,2,0")
    assert sv.format_params(sv.parse_params(sv.TILED, "2,1,16,4,1")) == "2,1,16,4,1"
    assert sv.parse_params(sv.TILED, "2,1,16,4,1,1")[sv.FAULT_FIELD] == 1
    assert sv.parse_params(sv.IM2COL, "4,2,8,128,2,1,1,1")[sv.FAULT_FIELD] == 1
    assert sv.parse_params(sv.NAIVE, "") == {}
    with pytest.raises(ValueError, match="takes 5 parameters"):
        sv.parse_params(sv.WINOGRAD, "1,2,3")
    with pytest.raises(ValueError, match="MR=3 is not one of"):
        sv.parse_params(sv.IM2COL, "3,1,4,64,1")
    with pytest.raises(ValueError, match="not comma-separated integers"):
        sv.parse_params(sv.TILED, "a,b")
    with pytest.raises(ValueError, match="takes no parameters"):
        sv.parse_params(sv.NAIVE, "1")


def test_workspace_and_size_limits():
    assert sv.workspace_bytes(P3, sv.IM2COL, {}) == 4 * 64 * 9 * 56 * 56
    # PB 1 (forward): the unfolded input in 16-wide panels (3136 columns, a multiple of 16);
    # PB 2 then the 64 x 576 weights in 6-row panels (66 rows, zeros past 64)
    packed = {"MR": 6, "NV": 1, "VW": 16, "PB": 1}
    assert sv.workspace_bytes(P3, sv.IM2COL, packed) == 4 * 576 * 3136
    weights = {**packed, "PB": 2}
    assert sv.workspace_bytes(P3, sv.IM2COL, weights) == 4 * (576 * 3136 + 66 * 576)
    assert sv.workspace_bytes(P3, sv.IM2COL, {**packed, "MR": 16, "VW": 8, "NV": 1}) == (
        4 * 576 * 3136
    )
    assert not any(prm.endswith(",2") for prm in sv.space_params(P1, sv.GEMM1X1))
    assert any(prm.endswith(",2") for prm in sv.space_params(P3, sv.IM2COL))
    assert not any(prm.endswith(",2") for prm in sv.space_params(P3.with_direction("B"), sv.IM2COL))
    assert sv.workspace_bytes(P3, sv.TILED, {}) == 0
    assert sv.workspace_bytes(P1, sv.GEMM1X1, {}) == 0
    assert sv.workspace_bytes(P3, sv.WINOGRAD, {"TB": 32}) == 4 * 16 * (64 * 64 + 2 * 64 * 32)
    assert sv.candidate_stats(P3, sv.WINOGRAD, {"TB": 32, "NT": 2}) == {
        "threads": 2.0,
        "workspace_bytes": 4.0 * 16 * (64 * 64 + 2 * 64 * 32),
    }
    assert sv.candidate_stats(P1, sv.GEMM1X1, {}) == {"threads": 1.0, "workspace_bytes": 0.0}
    assert sv.flops(P3) == 2 * 64 * 64 * 9 * 56 * 56
    assert sv.too_large_reason(P3, 60) is None
    big = P3.with_batchsize(256)
    assert sv.too_large_reason(big, 60) == (
        "problem too large for the time budget of 60 s: 59.2 GFLOP, "
        "about 118 s for the naive reference alone"
    )


def test_loop_order_and_packing_only_where_they_change_something():
    # 7x7 output: N = 49 columns, M = 512 rows; the GEMM solvers' spaces hold both orders
    # and both B layouts, the default (first point) neither; the forward CpuIm2colGemm also
    # the weights packed (PB 2)
    p = conv(batchsize=1, in_channels=512, out_channels=512, in_size=(7, 7), fil_size=(1, 1))
    for s, pbs in ((sv.IM2COL, (0, 1, 2)), (sv.GEMM1X1, (0, 1))):
        space = [sv.parse_params(s, t) for t in sv.tuning_space(p, s)]
        assert {(v["LO"], v["PB"]) for v in space} == {(lo, pb) for lo in (0, 1) for pb in pbs}
        assert (space[0]["LO"], space[0]["PB"]) == (0, 0)
    # one column tile (N = 4 <= NR): one loop order only, packing still offered
    few = conv(batchsize=1, in_channels=16, out_channels=64, in_size=(2, 2), fil_size=(1, 1))
    space = [sv.parse_params(sv.GEMM1X1, t) for t in sv.tuning_space(few, sv.GEMM1X1)]
    assert {v["LO"] for v in space} == {0} and {v["PB"] for v in space} == {0, 1}
    # a thread with one row tile (M = 8 rows in tiles of 8, or of 4 over 2 threads): neither
    for v in (dict(MR=8, NV=1, VW=4, KC=64, NT=1), dict(MR=4, NV=1, VW=4, KC=64, NT=2)):
        m8 = conv(batchsize=1, in_channels=16, out_channels=8, in_size=(7, 7), fil_size=(1, 1))
        assert sv.SPECS[sv.GEMM1X1].valid(m8, {**v, "LO": 0, "PB": 0})
        assert not sv.SPECS[sv.GEMM1X1].valid(m8, {**v, "LO": 1, "PB": 0})
        assert not sv.SPECS[sv.GEMM1X1].valid(m8, {**v, "LO": 0, "PB": 1})
    # backward weights is C = A B^T: B's rows are contiguous already, no packing
    weights = p.with_direction("W")
    space = [sv.parse_params(sv.IM2COL, t) for t in sv.tuning_space(weights, sv.IM2COL)]
    assert {v["LO"] for v in space} == {0, 1} and {v["PB"] for v in space} == {0}
