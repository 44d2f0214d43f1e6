"""A problem's and a candidate's numbers for a cost model (the strategies' ``model``).

The cost model knows nothing of GPUs; it is given these by name. The problem's: its shape, its
direction (0 forward, 1 backward data, 2 backward weights: the same GEMM sizes gather their
operands differently), the GEMM the solver runs (M, N, K, batches), log2 of its FLOPs. A
candidate's: the share of its tiles that does useful work at the matrix's edges (a 128-wide
tile on 49 columns wastes most of itself), its threads and accumulators, its shared memory,
the number of blocks and how many waves of them an H100-sized GPU runs, and its occupancy
estimated from a register count guessed from the tile (the compile phase has the real one;
the model ranks candidates before they are compiled).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tuna.backends.cuda import occupancy as occ
from tuna.backends.cuda import solvers as sv
from tuna.problems.conv import ConvProblem

_SMS = 132  # H100/H200; the features rank candidates, they need not be exact
_ARCH = occ.limits("sm_90")


def problem_features(p: ConvProblem, solver: str) -> dict[str, float]:
    m, n, k, batches = sv.gemm_shape(p, solver)
    (hi, wi), (ho, wo), (fy, fx) = p.in_size, p.out_size, p.fil_size
    out = {
        "n": p.batchsize, "c": p.in_channels, "k": p.out_channels, "g": p.group_count,
        "hi": hi, "wi": wi, "ho": ho, "wo": wo, "fy": fy, "fx": fx,
        "stride": p.stride[0], "pad": p.pad[0], "dilation": p.dilation[0],
        "direction": "FBW".index(p.direction),
        "gemm_m": m, "gemm_n": n, "gemm_k": k, "batches": batches,
        "log2_flops": math.log2(max(1, sv.flops(p))),
    }  # fmt: skip
    return {name: float(v) for name, v in out.items()}


def candidate_features(
    features: Mapping[str, float], params: Mapping[str, Any]
) -> dict[str, float]:
    """What candidate ``params`` means on the problem of ``features`` (see the docstring)."""
    if "gemm_m" not in features or "BM" not in params:
        return {}
    v = {name: int(params[name]) for name in sv.NAMES}
    m, n, k = features["gemm_m"], features["gemm_n"], features["gemm_k"]
    bm, bn, bk = v["BM"], v["BN"], v["BK"]
    blocks = math.ceil(m / bm) * math.ceil(n / bn) * features["batches"]
    threads = sv.threads(v)
    accumulators = v["TM"] * v["TN"]
    registers = min(255, accumulators + v["TM"] + v["TN"] + 2 * v["VW"] * (1 + v["DB"]) + 24)
    o = occ.occupancy(_ARCH, threads, registers, sv.static_smem_bytes(v))
    resident = max(1, o.blocks_per_sm) * _SMS
    return {
        "rows_used": m / (math.ceil(m / bm) * bm),
        "cols_used": n / (math.ceil(n / bn) * bn),
        "depth_used": k / (math.ceil(k / bk) * bk),
        "k_steps": float(math.ceil(k / bk)),
        "threads": float(threads),
        "accumulators": float(accumulators),
        "smem_kib": sv.static_smem_bytes(v) / 1024,
        "blocks": blocks,
        "waves": blocks / resident,
        "wave_used": blocks / (math.ceil(blocks / resident) * resident),
        "occupancy_est": o.share(_ARCH),
    }
