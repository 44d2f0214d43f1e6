"""Correctness without a GPU: the kernels' own CUDA source compiled as host C++.

:func:`check` builds one program per problem holding several candidates of a solver, each
``kernels/conv_fwd.cu`` compiled in a namespace of its own with the candidate's and the
problem's constants, on the CUDA dialect of ``kernels/host.h`` (a GPU thread is a host thread,
``__syncthreads`` a barrier). It runs every candidate on pseudo-random data and returns, per
candidate, the largest error against a double-precision direct convolution written apart
from the kernels, relative to the sum of the products' magnitudes at that output. It says
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
from tuna.errors import BackendError
from tuna.problems.conv import ConvProblem

#: The largest error a correct FP32 candidate shows on the tests' shapes is about 1e-7.
TOLERANCE = 1e-5


class HostCheckError(BackendError):
    """Raised when the host program does not build or run; the message has its output."""


def kernel_source(name: str = "conv_fwd.cu") -> str:
    """A kernel file's text as the package holds it."""
    return (importlib.resources.files("tuna.backends.cuda") / "kernels" / name).read_text()


_MAIN = r"""
int main() {
    const long long n_in = (long long)N_ * C_ * H_ * W_, n_out = (long long)N_ * K_ * P_ * Q_;
    const long long n_wei = (long long)K_ * (C_ / G_) * R_ * S_;
    std::vector<float> in(n_in), wei(n_wei), out(n_out);
    unsigned x = 12345u;
    auto next = [&] { x = x * 1664525u + 1013904223u; return (float)(x >> 8) / 8388608.0f - 1.0f; };
    for (auto& v : in) v = next();
    for (auto& v : wei) v = next();
    std::vector<double> ref(n_out), mag(n_out);
    const int cg = C_ / G_, kg = K_ / G_;
    for (int n = 0; n < N_; ++n) for (int k = 0; k < K_; ++k)
    for (int p = 0; p < P_; ++p) for (int q = 0; q < Q_; ++q) {
        double sum = 0, size = 0;
        const int g = k / kg;
        for (int c = 0; c < cg; ++c) for (int r = 0; r < R_; ++r) for (int s = 0; s < S_; ++s) {
            const int h = p * SH - PH + r * DH, w = q * SW - PW + s * DW;
            if (h < 0 || h >= H_ || w < 0 || w >= W_) continue;
            const double a = in[((n * C_ + g * cg + c) * H_ + h) * W_ + w];
            const double b = wei[((k * cg + c) * R_ + r) * S_ + s];
            sum += a * b;
            size += std::fabs(a * b);
        }
        const long long i = ((long long)(n * K_ + k) * P_ + p) * Q_ + q;
        ref[i] = sum;
        mag[i] = size;
    }
    auto error = [&] {
        double worst = 0;
        for (long long i = 0; i < n_out; ++i) {
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
                      [&] { cand%(i)d::conv_fwd(in.data(), wei.data(), out.data()); });
    std::printf("%(i)d %%.9g\n", error());
"""


def program(
    p: ConvProblem, solver: str, candidates: Sequence[str], source: str | None = None
) -> str:
    """The host program's C++ text: ``candidates`` of ``solver`` on ``p``, built from
    ``source`` (the kernel file's text; the package's when None)."""
    text = kernel_source() if source is None else source
    lines = ['#include "host.h"', "#include <algorithm>", "#include <cstdio>"]
    lines += [f"#define {k} {v}" for k, v in sv.problem_macros(p).items()]
    runs = []
    for i, params in enumerate(candidates):
        v = sv.parse_params(solver, params)
        if not sv.valid(p, solver, v):
            raise ValueError(f"{params} is not a valid {solver} candidate for this problem")
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
    kernels = importlib.resources.files("tuna.backends.cuda") / "kernels"
    with tempfile.TemporaryDirectory(prefix="tuna-cuda-host-") as tmp:
        main = Path(tmp) / "check.cpp"
        main.write_text(program(p, solver, candidates, source))
        binary = Path(tmp) / "check"
        cmd = [cxx, "-std=c++20", "-O1", "-pthread", f"-I{kernels}", str(main), "-o", str(binary)]
        built = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        if built.returncode != 0:
            raise HostCheckError(f"{' '.join(cmd)} failed:\n{built.stderr[-4000:]}")
        ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=timeout_s)
        if ran.returncode != 0:
            raise HostCheckError(f"the host program failed ({ran.returncode}):\n{ran.stderr}")
    errors: dict[str, float] = {}
    for line in ran.stdout.splitlines():
        index, _, value = line.partition(" ")
        errors[candidates[int(index)]] = float(value)
    return errors
