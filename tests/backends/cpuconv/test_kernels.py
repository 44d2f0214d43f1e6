"""Every solver, in every direction it supports, on a spread of shapes, against the reference.

Each case builds a few candidates that between them take every value each parameter takes in
the problem's space (``covering``), at -O0 to keep the build cheap; the -O3 cases check that
optimisation changes nothing.
"""

from __future__ import annotations

import pytest

from tests.backends.cpuconv.cases import SHAPES, conv, covering, measure
from tuna.backends.cpuconv import build, isolate, run
from tuna.backends.cpuconv import solvers as sv

CASES = [
    pytest.param(shape, d, s.name, id=f"{s.name}-{d}-{shape}")
    for shape in SHAPES
    for d in "FBW"
    for s in sv.SOLVERS
    if sv.applicability(SHAPES[shape].with_direction(d), s.name) is None
]


def test_every_solver_and_direction_is_covered():
    covered = {(s, d) for _, d, s in (c.values for c in CASES)}
    expected = {(s.name, d) for s in sv.SOLVERS for d in "FBW"} - {(sv.WINOGRAD, "W")}
    assert covered == expected


@pytest.mark.parametrize(("shape", "direction", "solver"), CASES)
def test_candidates_agree_with_the_reference(shape, direction, solver):
    p = SHAPES[shape].with_direction(direction)
    params = covering(sv.space_params(p, solver))
    results = measure(p, solver, params)
    assert [(m.params, m.reason) for m in results] == [(c, None) for c in params]
    assert all(m.time_ms is not None and m.time_ms > 0 for m in results)


@pytest.mark.parametrize("direction", "FBW")
@pytest.mark.parametrize("shape", ["3x3 pad 1, odd sizes", "7x7 stride 2, groups 2"])
def test_optimised_builds_agree_too(shape, direction):
    p = SHAPES[shape].with_direction(direction)
    for s in sv.SOLVERS:
        if sv.applicability(p, s.name) is None:
            params = covering(sv.space_params(p, s.name))[:2]
            assert all(m.ok for m in measure(p, s.name, params, opt="3")), s.name


@pytest.mark.parametrize("direction", "FBW")
def test_a_kernel_that_skips_a_filter_tap_fails_verification(direction):
    p = SHAPES["7x7 stride 2, groups 2"].with_direction(direction)
    default = sv.default_params(p, sv.TILED)
    results = measure(p, sv.TILED, [default, f"{default},1"])
    assert [m.reason for m in results] == [None, "verification failed"]
    assert results[1].time_ms is None and (results[1].error or 0) > 1e-2


# Problems whose GEMMs have edge tiles both ways (M = 26 rows: 6-row tiles leave 2, 4-row
# tiles 2; N columns not a multiple of 12 or 16) and, for the 3x3s, a reduction of 72 deep:
# two cache blocks of KC = 64, so the packed panel is refilled and C accumulated. The 7x7
# output's 49th column is a panel of its own (gemm.h's dot-product edge, mk_dot), and its
# second cache block (8 deep) is shorter than a 16-float vector.
LOOP_ORDER_SHAPES = {
    "1x1 stride 1": conv(
        batchsize=2, in_channels=16, out_channels=26, in_size=(7, 7), fil_size=(1, 1)
    ),
    "1x1 stride 2": conv(
        batchsize=1, in_channels=8, out_channels=26, in_size=(9, 9), fil_size=(1, 1),
        stride=(2, 2),
    ),
    "3x3 pad 1": conv(
        batchsize=1, in_channels=8, out_channels=26, in_size=(7, 6), fil_size=(3, 3),
        pad=(1, 1),
    ),
    "3x3 pad 1, 7x7": conv(
        batchsize=1, in_channels=8, out_channels=26, in_size=(7, 7), fil_size=(3, 3),
        pad=(1, 1),
    ),
}  # fmt: skip
LOOP_ORDER_CASES = [
    pytest.param(shape, d, s, id=f"{s}-{d}-{shape}")
    for shape in LOOP_ORDER_SHAPES
    for d in "FBW"
    for s in (sv.IM2COL, sv.GEMM1X1)
    if sv.applicability(LOOP_ORDER_SHAPES[shape].with_direction(d), s) is None
]


@pytest.mark.parametrize(("shape", "direction", "solver"), LOOP_ORDER_CASES)
def test_loop_orders_and_packed_panels_agree_with_the_reference(shape, direction, solver):
    """Both loop orders (LO), B packed or not (PB; PB 2, the forward CpuIm2colGemm's, with
    the weights packed too), 1 and 2 threads, register tiles that leave edge rows and edge
    columns: every valid combination verifies."""
    p = LOOP_ORDER_SHAPES[shape].with_direction(direction)
    space = set(sv.space_params(p, solver))
    params = [
        f"{tile},64,{nt},{lo},{pb}"
        for tile in ("6,2,8", "4,3,4", "2,1,16")
        for nt in (1, 2)
        for lo in (0, 1)
        for pb in (0, 1, 2)
        if f"{tile},64,{nt},{lo},{pb}" in space
    ]
    orders = {prm.split(",")[-2:][0] for prm in params}
    packed = {prm.split(",")[-1] for prm in params}
    threads = {prm.split(",")[4] for prm in params}
    assert orders == {"0", "1"} and threads == {"1", "2"}
    weights = {"2"} if (direction, solver) == ("F", sv.IM2COL) else set()
    assert packed == ({"0"} if direction == "W" else {"0", "1"} | weights)
    results = measure(p, solver, params)
    assert [(m.params, m.reason) for m in results] == [(c, None) for c in params]


def test_a_packed_unfolding_that_skips_a_filter_tap_fails_verification():
    """The forward CpuIm2colGemm with PB 1 unfolds its input straight into packed panels;
    the same kernel leaving out the last filter tap there must fail verification."""
    p = LOOP_ORDER_SHAPES["3x3 pad 1"]
    good = "6,2,8,64,2,1,1"
    assert good in sv.space_params(p, sv.IM2COL)
    results = measure(p, sv.IM2COL, [good, f"{good},1"])
    assert [m.reason for m in results] == [None, "verification failed"]
    assert (results[1].error or 0) > 1e-2


def test_a_thread_pool_used_before_a_fork_serves_the_child_too():
    """The kernels' threads (common.h's pool) live on between calls; a forked child (the
    evaluate worker's isolation forks) has none of them and must start its own rather than
    wait for its parent's. The parent runs a two-thread candidate first, then the child
    verifies and times it; a child waiting on threads it does not have would be killed as
    hung after limit_s."""
    p = LOOP_ORDER_SHAPES["3x3 pad 1"]
    params = ["6,2,8,64,2,1,1", "6,2,8,64,2,0,0"]

    def parent_then_child(p, cands, **how):
        first = run.measure(p, cands, **how)  # starts the pool here
        return first, isolate.measure_isolated(p, cands, limit_s=20, **how)

    first, child = run.build_and_measure(
        p, sv.IM2COL, params, march="native", opt="0", prefix="cpuconv-test-", repeats=1,
        measurer=parent_then_child,
    )  # fmt: skip
    assert [(m.params, m.reason) for m in first] == [(c, None) for c in params]
    assert [(m.params, m.reason) for m in child] == [(c, None) for c in params]


# PB 2 (the weights packed once, forward CpuIm2colGemm) on groups and a batch: two groups of
# 26 output channels (6-row panels leave 2 rows, zeros past them), two images reusing one
# packing, a 7x7 output (the 49th column's dot products read the packed panels, gemm.h's
# mk_dot_pa) and a reduction of 8 x 9 = 72 (two cache blocks of KC = 64).
PACKED_WEIGHTS = conv(
    batchsize=2, in_channels=16, out_channels=52, in_size=(7, 7), fil_size=(3, 3), pad=(1, 1),
    group_count=2,
)  # fmt: skip


def test_packed_weights_agree_with_the_reference_across_groups_and_images():
    space = set(sv.space_params(PACKED_WEIGHTS, sv.IM2COL))
    params = [
        prm
        for prm in ("6,1,16,64,1,1,2", "6,2,8,64,2,0,2", "4,3,4,64,2,1,2", "16,1,16,64,1,1,2")
        if prm in space
    ]
    assert len(params) == 4
    results = measure(PACKED_WEIGHTS, sv.IM2COL, params)
    assert [(m.params, m.reason) for m in results] == [(c, None) for c in params]


def test_the_weights_are_packed_by_prepare_and_the_kernel_reads_them_there():
    """Forward CpuIm2colGemm with PB 2 has a prepack (run.Candidate.prepare) and reads the
    weights only from the workspace it packed them into: without it the kernel fails
    verification; other candidates have none. run.measure calls it for each candidate."""
    p = PACKED_WEIGHTS
    params = ["6,1,16,64,1,1,2", "6,1,16,64,1,1,1"]
    units = build.plan_units(p, sv.IM2COL, params, march="native", opt="0")
    table = {prm: (u.name, sym) for u in units for prm, sym in u.symbols}
    ref = run.Reference.get()
    a, b, expected = ref.case(p)
    out = run.aligned_floats(len(expected))
    with run.loaded(build.build_units(units), "cpuconv-test-") as libs:
        packed, unpacked = run.candidates(p, sv.IM2COL, table, libs)
        assert packed.prepare is not None and unpacked.prepare is None
        bare = run.aligned_floats(packed.workspace // 4)  # zeros: no weights packed
        packed.fn(a, b, out, bare)
        assert not ref.max_error(out, expected, len(expected)) <= run.FP32_TOLERANCE
        ws = run.workspace_for(packed, b)
        ref.fill_value(out, len(expected), float("nan"))
        packed.fn(a, b, out, ws)
        assert ref.max_error(out, expected, len(expected)) <= run.FP32_TOLERANCE
        # measure shares one workspace: the other candidate's unfolding overwrites it
        results = run.measure(p, [packed, unpacked, packed], repeats=1, reference=ref)
        assert [m.reason for m in results] == [None, None, None]
    q = p.with_direction("B")
    assert "6,1,16,64,1,1,2" not in sv.space_params(q, sv.IM2COL)
    units = build.plan_units(q, sv.IM2COL, [params[1]], march="native", opt="0")
    table = {prm: (u.name, sym) for u in units for prm, sym in u.symbols}
    with run.loaded(build.build_units(units), "cpuconv-test-") as libs:
        assert [c.prepare for c in run.candidates(q, sv.IM2COL, table, libs)] == [None]
