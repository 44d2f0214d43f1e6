"""Correctness without a GPU: conv.cu's own source run on the host against a double-precision
reference, on odd shapes, for several tiles per solver and direction
(tuna.backends.cuda.hostcheck)."""

from __future__ import annotations

import pytest

from tests.backends.cuda.cases import (
    EVEN_1X1,
    GROUPED_1X1_BWD_DATA,
    ODD_1X1,
    ODD_3X3_STRIDE_2,
    ODD_GROUPED_DILATED,
    ODD_LARGE_TILES,
    ODD_WIDE_INPUT,
)
from tuna.backends.cuda import hostcheck
from tuna.backends.cuda import solvers as sv


def B(p):
    return p.with_direction("B")


def W(p):
    return p.with_direction("W")


# Per solver and problem, tiles that between them take single and double buffering, padding,
# vector loads, one and several loads per thread, and register tiles from 1x1 to 16x4.
CASES = [
    (sv.IGEMM, ODD_3X3_STRIDE_2, ["16,16,4,1,1,1,0,0", "32,16,8,2,1,1,1,1", "16,32,16,2,4,1,0,1"]),
    (sv.IGEMM, ODD_GROUPED_DILATED, ["16,32,4,1,2,2,1,0", "16,64,8,2,2,2,0,1"]),
    # 8x8 and 16x4 register tiles, several vector loads per thread, a 32-deep step
    (
        sv.IGEMM,
        ODD_LARGE_TILES,
        ["64,64,32,8,8,4,1,1", "128,32,16,8,4,2,0,1", "64,64,8,16,4,4,0,0"],
    ),
    (sv.GEMM1X1, ODD_1X1, ["16,16,4,1,1,1,0,0", "64,32,8,4,2,1,1,1"]),
    (sv.GEMM1X1, EVEN_1X1, ["32,16,4,2,1,4,0,1", "64,32,16,4,4,4,1,0", "16,32,8,1,4,2,0,0"]),
    # Backward data: dy gathered where a stride of 2 leaves holes, through dilation and groups
    (sv.BWD_DATA, B(ODD_3X3_STRIDE_2), ["16,16,4,1,1,1,0,0", "16,32,16,2,4,1,0,1"]),
    (sv.BWD_DATA, B(ODD_GROUPED_DILATED), ["16,16,4,1,1,1,0,0", "16,64,8,2,2,1,1,0"]),
    (
        sv.BWD_DATA,
        ODD_WIDE_INPUT,
        ["64,64,32,8,8,1,1,1", "128,32,16,8,4,1,0,1", "32,16,8,2,1,1,1,1"],
    ),
    # Backward weights: a reduction over images and positions; dy in vectors where P*Q allows
    (sv.BWD_WEIGHTS, W(ODD_3X3_STRIDE_2), ["16,16,4,1,1,1,0,0", "32,16,8,2,1,1,1,1"]),
    (sv.BWD_WEIGHTS, W(ODD_GROUPED_DILATED), ["16,16,8,2,2,4,1,1", "16,16,16,1,2,2,0,1"]),
    (sv.BWD_WEIGHTS, W(ODD_LARGE_TILES), ["64,64,32,8,8,1,1,1", "128,32,16,8,4,1,0,1"]),
    # Backward data through a 1x1 filter, one GEMM per image: dy's rows in vectors
    (sv.GEMM1X1_BWD_DATA, B(ODD_1X1), ["16,16,4,1,1,1,0,0", "16,32,16,2,4,1,0,1"]),
    (
        sv.GEMM1X1_BWD_DATA,
        GROUPED_1X1_BWD_DATA,
        ["32,16,4,2,1,4,0,1", "16,32,8,1,4,2,0,0", "32,32,4,2,2,4,1,1"],
    ),
]


IDS = [
    "igemm-3x3-stride2", "igemm-grouped-dilated", "igemm-large-tiles", "1x1-odd", "1x1-even",
    "bwd-data-3x3-stride2", "bwd-data-grouped-dilated", "bwd-data-large-tiles",
    "bwd-weights-3x3-stride2", "bwd-weights-grouped-dilated-vectors", "bwd-weights-large-tiles",
    "1x1-bwd-data-odd", "1x1-bwd-data-grouped-vectors",
]  # fmt: skip


@pytest.mark.parametrize(("solver", "problem", "tiles"), CASES, ids=IDS)
def test_the_kernels_source_computes_the_convolution(solver, problem, tiles):
    errors = hostcheck.check(problem, solver, tiles)
    assert set(errors) == set(tiles)
    for tile, error in errors.items():
        assert error < hostcheck.TOLERANCE, (tile, error)


def test_a_planted_off_by_one_fails_the_check():
    source = hostcheck.kernel_source()
    planted = source.replace(
        "const int h = p * SH - PH + r * DH;", "const int h = p * SH - PH + r * DH + 1;"
    )
    assert planted != source
    tiles = ["16,16,4,1,1,1,0,0", "32,16,8,2,1,1,1,1"]
    errors = hostcheck.check(ODD_3X3_STRIDE_2, sv.IGEMM, tiles, source=planted)
    assert all(e > 0.1 for e in errors.values()), errors


def test_a_tile_that_drops_the_reductions_last_step_fails_the_check():
    source = hostcheck.kernel_source()
    planted = source.replace("(GEMM_K + BK - 1) / BK", "GEMM_K / BK")
    assert planted != source
    errors = hostcheck.check(ODD_3X3_STRIDE_2, sv.IGEMM, ["16,16,4,1,1,1,0,0"], source=planted)
    assert errors["16,16,4,1,1,1,0,0"] > 0.01


def test_an_invalid_tile_is_refused_before_building():
    with pytest.raises(ValueError, match="not a valid"):
        hostcheck.program(ODD_1X1, sv.GEMM1X1, ["16,16,4,1,1,2,0,0"])  # C=7: no 2-float rows


# An index one off in each backward solver's own loads: backward data's row of dy, backward
# weights' filter position, the 1x1 backward data's channel of dy. NVRTC compiles each
# without complaint.
PLANTED_BACKWARD = [
    (
        sv.BWD_DATA,
        B(ODD_3X3_STRIDE_2),
        "const int hp = hw / W_ + PH - r * DH;",
        "const int hp = hw / W_ + PH - r * DH + 1;",
        ["16,16,4,1,1,1,0,0", "16,32,16,2,4,1,0,1"],
    ),
    (
        sv.BWD_WEIGHTS,
        W(ODD_3X3_STRIDE_2),
        "const int c = col / RS, rs = col % RS;",
        "const int c = col / RS, rs = (col + 1) % RS;",
        ["16,16,4,1,1,1,0,0", "32,16,8,2,1,1,1,1"],
    ),
    (
        sv.GEMM1X1_BWD_DATA,
        GROUPED_1X1_BWD_DATA,
        "(long long)img * K_ + g * KG + row) * PQ + col",
        "(long long)img * K_ + g * KG + (row + 1) % KG) * PQ + col",
        ["16,16,4,1,1,1,0,0", "32,16,4,2,1,4,0,1"],
    ),
]


@pytest.mark.parametrize(
    ("solver", "problem", "line", "planted_line", "tiles"),
    PLANTED_BACKWARD,
    ids=["data", "weights", "1x1-data"],
)
def test_a_planted_off_by_one_fails_the_backward_check(solver, problem, line, planted_line, tiles):
    source = hostcheck.kernel_source()
    planted = source.replace(line, planted_line)
    assert planted != source
    errors = hostcheck.check(problem, solver, tiles, source=planted)
    assert all(e > 0.1 for e in errors.values()), errors


def test_a_candidate_of_another_direction_is_refused_before_building():
    with pytest.raises(ValueError, match="computes backward data"):
        hostcheck.program(ODD_3X3_STRIDE_2, sv.BWD_DATA, ["16,16,4,1,1,1,0,0"])
