"""A problem's features for the cost model: the shape, the solver's GEMM shape, the work."""

from __future__ import annotations

import math

from tests.backends.cpuconv.cases import conv
from tuna.backends.cpuconv import solvers as sv
from tuna.backends.cpuconv.features import candidate_features, problem_features


def test_features_of_a_1x1_layer_hold_its_gemm_shape() -> None:
    p = conv(batchsize=1, in_channels=64, out_channels=256, in_size=(56, 56), fil_size=(1, 1))
    f = problem_features(p, sv.GEMM1X1)
    assert (f["c"], f["k"], f["ho"], f["wo"], f["stride"]) == (64, 256, 56, 56, 1)
    # Forward GEMM: M = output channels, N = output pixels, K = input channels x filter taps.
    assert (f["gemm_m"], f["gemm_n"], f["gemm_k"]) == (256, 56 * 56, 64)
    assert f["log2_flops"] == math.log2(2 * 256 * 64 * 56 * 56)
    assert all(isinstance(v, float) for v in f.values())


def test_a_direct_solver_has_no_gemm_shape_and_directions_differ() -> None:
    p = conv(
        batchsize=2, in_channels=8, out_channels=16, in_size=(9, 9), fil_size=(3, 3), pad=(1, 1)
    )
    assert "gemm_m" not in problem_features(p, sv.TILED)
    fwd, bwd = problem_features(p, sv.IM2COL), problem_features(p.with_direction("B"), sv.IM2COL)
    assert fwd["direction"] == 0.0 and bwd["direction"] == 1.0
    assert fwd["gemm_k"] == 8 * 9 and bwd["gemm_k"] == 16


def test_candidate_features_say_how_much_of_a_tile_falls_off_the_edge() -> None:
    p = conv(batchsize=1, in_channels=64, out_channels=100, in_size=(7, 7), fil_size=(1, 1))
    f = problem_features(p, sv.IM2COL)  # M = 100 rows, N = 49 columns, K = 64
    c = candidate_features(f, {"MR": 8, "NV": 2, "VW": 8, "KC": 128, "NT": 2})
    assert c["rows_used"] == 100 / 104  # 13 row tiles of 8
    assert c["cols_used"] == 49 / 64  # one 16-wide tile of columns covers 49 in 4 tiles
    assert c["depth_used"] == 64 / 128 and c["k_blocks"] == 1
    assert c["accumulators"] == 16 and c["tile_area"] == 128
    assert c["row_tiles_per_thread"] == 13 / 2
    assert candidate_features(problem_features(p, sv.TILED), {"TK": 1}) == {}


def test_loop_order_panels_are_given_for_order_1_only() -> None:
    """The panels each loop order streams again (a_panel_kib: A's M/NT x KC, b_panel_kib:
    B's KC x N) describe loop order 1's candidates; 0 for order 0 and for parameters
    without LO (the frozen 5-parameter tables), where they only told the trees the layer's
    size (issue #30). Every candidate of a space has the same names."""
    p = conv(batchsize=1, in_channels=64, out_channels=100, in_size=(7, 7), fil_size=(1, 1))
    f = problem_features(p, sv.IM2COL)  # M = 100, N = 49, K = 64
    tile = {"MR": 8, "NV": 2, "VW": 8, "KC": 128, "NT": 2}
    order1 = candidate_features(f, {**tile, "LO": 1, "PB": 0})
    assert order1["a_panel_kib"] == 100 / 2 * 64 * 4 / 1024  # KC beyond K: K's 64 rows
    assert order1["b_panel_kib"] == 49 * 64 * 4 / 1024
    for params in (tile, {**tile, "LO": 0, "PB": 0}, {**tile, "LO": 0, "PB": 1}):
        c = candidate_features(f, params)
        assert (c["a_panel_kib"], c["b_panel_kib"]) == (0.0, 0.0)
        assert set(c) == set(order1)
        assert {k: v for k, v in c.items() if "panel" not in k} == {
            k: v for k, v in order1.items() if "panel" not in k
        }
