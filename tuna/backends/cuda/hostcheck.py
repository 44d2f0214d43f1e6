"""Correctness without a GPU: the kernels' own CUDA source compiled as host C++.

:func:`check` builds one program per problem holding several candidates of a solver, each
``kernels/conv.cu`` compiled in a namespace of its own with the candidate's and the
problem's constants, on the CUDA dialect of ``kernels/host.h`` (a GPU thread is a host thread,
``__syncthreads`` a barrier). It runs every candidate on pseudo-random data and returns, per
candidate, the largest error against a double-precision direct convolution written apart
from the kernels, relative to the sum of the products' magnitudes at that output. The
reference walks the forward convolution's pairs of input and weight once and adds each
product where the problem's direction puts it (y forward, dx backward data, dw backward
weights), so one loop, checked forward, stands for all three. It says
nothing of speed: that is the GPU's to measure.

Used by the tests (odd shapes, several tiles per solver, a planted off-by-one that must fail);
it needs a C++20 compiler (``g++``, or ``CXX``).
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tuna.backends.cuda import solvers as sv
from tuna.backends.toolchain import compile_and_link
from tuna.errors import BackendError
from tuna.problems.conv import ConvProblem

#: The largest error a correct FP32 candidate shows on the tests' shapes is about 1e-7.
TOLERANCE = 1e-5


class HostCheckError(BackendError):
    """Raised when the host program does not build or run; the message has its output."""


def kernel_source(name: str = "conv.cu") -> str:
    """A kernel file's text as the package holds it."""
    return (importlib.resources.files("tuna.backends.cuda") / "kernels" / name).read_text()


_MAIN = r"""
int main() {
    const long long n_x = (long long)N_ * C_ * H_ * W_, n_y = (long long)N_ * K_ * P_ * Q_;
    const long long n_w = (long long)K_ * (C_ / G_) * R_ * S_;
    std::vector<float> x(n_x), w(n_w), y(n_y);
    unsigned seed = 12345u;
    auto next = [&] {
        seed = seed * 1664525u + 1013904223u;
        return (float)(seed >> 8) / 8388608.0f - 1.0f;
    };
    for (auto& v : x) v = next();
    for (auto& v : w) v = next();
    for (auto& v : y) v = next();
    // DIR_ 0: y from x and w; 1: dx from dy (y) and w; 2: dw from x and dy (y).
    std::vector<float>& out = DIR_ == 0 ? y : DIR_ == 1 ? x : w;
    const std::vector<float> src = DIR_ == 1 ? y : x, mat = DIR_ == 2 ? y : w;
    std::vector<double> ref(out.size()), mag(out.size());
    const int cg = C_ / G_, kg = K_ / G_;
    for (int n = 0; n < N_; ++n) for (int k = 0; k < K_; ++k)
    for (int p = 0; p < P_; ++p) for (int q = 0; q < Q_; ++q) {
        const int g = k / kg;
        for (int c = 0; c < cg; ++c) for (int r = 0; r < R_; ++r) for (int s = 0; s < S_; ++s) {
            const int h = p * SH - PH + r * DH, v = q * SW - PW + s * DW;
            if (h < 0 || h >= H_ || v < 0 || v >= W_) continue;
            const long long xi = ((long long)(n * C_ + g * cg + c) * H_ + h) * W_ + v;
            const long long wi = ((long long)(k * cg + c) * R_ + r) * S_ + s;
            const long long yi = ((long long)(n * K_ + k) * P_ + p) * Q_ + q;
            const long long oi = DIR_ == 0 ? yi : DIR_ == 1 ? xi : wi;
            const double a = DIR_ == 0 ? x[xi] : DIR_ == 1 ? y[yi] : x[xi];
            const double b = DIR_ == 0 ? w[wi] : DIR_ == 1 ? w[wi] : y[yi];
            ref[oi] += a * b;
            mag[oi] += std::fabs(a * b);
        }
    }
    auto error = [&] {
        double worst = 0;
        for (size_t i = 0; i < out.size(); ++i) {
            double e = std::fabs(out[i] - ref[i]) / (mag[i] + 1e-30);
            if (!(e <= 1e300)) e = INFINITY;
            if (e > worst) worst = e;
        }
        return worst;
    };
%(runs)s
    return 0;
}
"""

_RUN = r"""    std::fill(out.begin(), out.end(), NAN);
    tuna_host::launch(dim3{%(gx)d, %(gy)d, %(gz)d}, %(threads)d,
                      [&] { cand%(i)d::conv(src.data(), mat.data(), out.data()); });
    std::printf("%(i)d %%.9g\n", error());
"""


def program(
    p: ConvProblem, solver: str, candidates: Sequence[str], source: str | None = None
) -> str:
    """The host program's C++ text: ``candidates`` of ``solver`` on ``p``, built from
    ``source`` (the kernel file's text; the package's when None)."""
    text = kernel_source() if source is None else source
    reason = sv.applicability(p, solver)
    if reason is not None:
        raise ValueError(reason)
    lines = ['#include "host.h"', "#include <algorithm>", "#include <cstdio>"]
    lines += [f"#define {k} {v}" for k, v in sv.problem_macros(p).items()]
    runs = []
    for i, params in enumerate(candidates):
        v = sv.parse_params(solver, params)
        outside = sv.invalid_reason(p, solver, v)
        if outside is not None:
            raise ValueError(f"{params} is not a valid {solver} candidate here: {outside}")
        macros = sv.candidate_macros(solver, v)
        lines.append(f"namespace cand{i} {{")
        lines += [f"#define {k} {val}" for k, val in macros.items()]
        lines.append(text)
        lines += [f"#undef {k}" for k in macros]
        lines.append(f"}}  // namespace cand{i}")
        gx, gy, gz = sv.grid(p, solver, v)
        runs.append(_RUN % dict(i=i, gx=gx, gy=gy, gz=gz, threads=sv.threads(v)))
    lines.append(_MAIN % dict(runs="".join(runs)))
    return "\n".join(lines) + "\n"


def check(
    p: ConvProblem,
    solver: str,
    candidates: Sequence[str],
    *,
    source: str | None = None,
    timeout_s: float = 300.0,
) -> dict[str, float]:
    """Each candidate's largest relative error on ``p`` (see the module docstring)."""
    cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
    with tempfile.TemporaryDirectory(prefix="tuna-cuda-host-") as tmp:
        # host.h beside the program, not -I the package: no path of this checkout in what
        # ccache hashes, so another clone's run hits the same cache entry.
        Path(tmp, "host.h").write_text(kernel_source("host.h"))
        Path(tmp, "check.cpp").write_text(program(p, solver, candidates, source))
        binary = Path(tmp) / "check"
        flags = ["-std=c++20", "-O1", "-pthread"]
        built = compile_and_link(
            cxx, "check.cpp", binary.name, flags=flags, cwd=Path(tmp), timeout=timeout_s
        )
        if not built.ok:
            raise HostCheckError(f"{' '.join(built.cmd)} failed:\n{built.stderr[-4000:]}")
        ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=timeout_s)
        if ran.returncode != 0:
            raise HostCheckError(f"the host program failed ({ran.returncode}):\n{ran.stderr}")
    errors: dict[str, float] = {}
    for line in ran.stdout.splitlines():
        index, _, value = line.partition(" ")
        errors[candidates[int(index)]] = float(value)
    return errors
