"""The naive C reference against an independent Python implementation, on tiny shapes.

Python computes the forward convolution, and B and W by scattering each forward product's
contribution (the adjoint), so a shared misreading of the index arithmetic would not hide.
"""

from __future__ import annotations

import ctypes

import pytest

from tests.backends.cpuconv.cases import conv
from tuna.backends.cpuconv import run
from tuna.problems.conv import ConvProblem

TINY = [
    conv(batchsize=2, in_channels=2, out_channels=3, in_size=(5, 4), fil_size=(3, 2), pad=(1, 0)),
    conv(
        batchsize=1, in_channels=4, out_channels=2, in_size=(7, 6), fil_size=(3, 3), pad=(2, 1),
        stride=(2, 3), dilation=(2, 1), group_count=2,
    ),
]  # fmt: skip


def python_conv(p: ConvProblem, a: list[float], b: list[float]) -> list[float]:
    n_, c_, k_, g_ = p.batchsize, p.in_channels, p.out_channels, p.group_count
    (hi_, wi_), (ho_, wo_), (fy_, fx_) = p.in_size, p.out_size, p.fil_size
    cg, kg = c_ // g_, k_ // g_
    x = {"F": a, "B": None, "W": a}[p.direction]
    w = {"F": b, "B": b, "W": None}[p.direction]
    dy = {"F": None, "B": a, "W": b}[p.direction]
    out = [0.0] * {"F": n_ * k_ * ho_ * wo_, "B": n_ * c_ * hi_ * wi_, "W": k_ * cg * fy_ * fx_}[
        p.direction
    ]
    for n in range(n_):
        for k in range(k_):
            g = k // kg
            for ho in range(ho_):
                for wo in range(wo_):
                    yi = ((n * k_ + k) * ho_ + ho) * wo_ + wo
                    for c in range(cg):
                        for fy in range(fy_):
                            for fx in range(fx_):
                                h = ho * p.stride[0] - p.pad[0] + fy * p.dilation[0]
                                v = wo * p.stride[1] - p.pad[1] + fx * p.dilation[1]
                                if not (0 <= h < hi_ and 0 <= v < wi_):
                                    continue
                                xi = ((n * c_ + g * cg + c) * hi_ + h) * wi_ + v
                                wj = ((k * cg + c) * fy_ + fy) * fx_ + fx
                                if p.direction == "F":
                                    assert x is not None and w is not None
                                    out[yi] += x[xi] * w[wj]
                                elif p.direction == "B":
                                    assert dy is not None and w is not None
                                    out[xi] += dy[yi] * w[wj]
                                else:
                                    assert dy is not None and x is not None
                                    out[wj] += dy[yi] * x[xi]
    return out


@pytest.mark.parametrize("direction", "FBW")
@pytest.mark.parametrize("index", range(len(TINY)))
def test_the_naive_reference_agrees_with_python(index, direction):
    p = TINY[index].with_direction(direction)
    a, b, ref = run.Reference.get().case(p)
    expected = python_conv(p, list(a), list(b))
    assert len(ref) == len(expected)
    scale = max(abs(v) for v in expected)
    assert scale > 0.5  # the data are not degenerate
    assert max(abs(r - e) for r, e in zip(ref, expected, strict=True)) <= 1e-5 * scale


def test_inputs_are_seeded_and_the_error_measure_sees_nans():
    ref = run.Reference.get()
    p = TINY[0]
    a1 = list(ref.case(p)[0])
    ref._cases.clear()
    assert list(ref.case(p)[0]) == a1 and min(a1) >= -1 and max(a1) < 1 and len(set(a1)) > 30
    got = (ctypes.c_float * 3)(1.0, 2.0, float("nan"))
    want = (ctypes.c_float * 3)(1.0, 2.0, 3.0)
    assert ref.max_error(got, want, 3) == float("inf")
    assert ref.max_error(want, want, 3) == 0.0
    got[2] = 3.3
    assert ref.max_error(got, want, 3) == pytest.approx(0.1, rel=1e-5)
