"""Every solver, in every direction it supports, on a spread of shapes, against the reference.

Each case builds a few candidates that between them take every value each parameter takes in
the problem's space (``covering``), at -O0 to keep the build cheap; the -O3 cases check that
optimisation changes nothing.
"""

from __future__ import annotations

import pytest

from tests.backends.cpuconv.cases import SHAPES, covering, measure
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
