"""A problem's features for a cost model: the numbers that decide which candidates are fast.

:mod:`tuna.searchers.costmodel` knows nothing of convolutions; it is given these by name. They
are the problem's shape (channels, sizes, filter, stride, padding, groups, direction), the
shape of the GEMMs the GEMM solvers run (what a register tile and a cache block divide),
and the work (log2 of the FLOPs), all plain numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from tuna.backends.cpuconv import solvers as sv
from tuna.problems.conv import ConvProblem
from tuna.searchers.run import Primitive

_DIRECTION = {"F": 0.0, "B": 1.0, "W": 2.0}


def problem_features(p: ConvProblem, solver: str) -> dict[str, float]:
    """The features of ``p`` as ``solver`` sees it (the GEMM shape is the solver's own)."""
    (hi, wi), (ho, wo), (fy, fx) = p.in_size, p.out_size, p.fil_size
    out = {
        "n": p.batchsize,
        "c": p.in_channels,
        "k": p.out_channels,
        "g": p.group_count,
        "hi": hi,
        "wi": wi,
        "ho": ho,
        "wo": wo,
        "fy": fy,
        "fx": fx,
        "stride": p.stride[0],
        "pad": p.pad[0],
        "dilation": p.dilation[0],
        "direction": _DIRECTION[p.direction],
        "log2_flops": math.log2(max(1, sv.flops(p))),
    }
    if solver in (sv.IM2COL, sv.GEMM1X1, sv.WINOGRAD):
        m, n, k, _ = sv.gemm_shape(p, solver)
        out.update(gemm_m=m, gemm_n=n, gemm_k=k)
    return {name: float(v) for name, v in out.items()}


def candidate_features(
    features: Mapping[str, float], params: Mapping[str, Primitive]
) -> dict[str, float]:
    """What a GEMM candidate's parameters mean on a problem (``features`` from
    :func:`problem_features`): the share of its register tile and cache block that does
    useful work at the matrix's edges, the tile's size, the work each thread gets. Trees
    cannot form these ratios of a parameter and a problem size themselves. Empty for
    candidates of other solvers (no GEMM shape)."""
    if "gemm_m" not in features or "MR" not in params:
        return {}
    m, n, k = features["gemm_m"], features["gemm_n"], features["gemm_k"]
    mr, nv, vw = float(params["MR"]), float(params["NV"]), float(params["VW"])
    kc = float(params.get("KC", 256))
    nt = float(params.get("NT", 1))
    nr = nv * vw
    row_tiles = math.ceil(m / mr)
    out = {
        "tile_area": mr * nr,
        "accumulators": mr * nv,
        "rows_used": m / (row_tiles * mr),
        "cols_used": n / (math.ceil(n / nr) * nr),
        "depth_used": k / (math.ceil(k / kc) * kc),
        "k_blocks": float(math.ceil(k / kc)),
        "row_tiles_per_thread": row_tiles / nt,
        "flops_per_thread": features["log2_flops"] - math.log2(nt),
    }
    # What loop order 1 (LO: rows outside columns) keeps in cache: a thread's M x KC panel
    # of A, which order 0 streams once per column tile, and the KC x N panel of B, which
    # order 1 streams once per row tile instead (KiB). 0 for order 0 and for spaces without
    # LO (the 5-parameter tables of bench/search.md, rows recorded before LO): there the
    # panels were sizes of the layer scaled by KC and NT that the trees learned the
    # training layers by, and a held-out network's search needed 6 measurements to within
    # 5 % instead of 2 (issue #30). Order 0 is what every such row measured, so the trees
    # learn it from the other features as before and the panels only say when order 1 pays.
    order1 = float(params.get("LO", 0)) == 1
    out["a_panel_kib"] = m / nt * min(kc, k) * 4 / 1024 if order1 else 0.0
    out["b_panel_kib"] = n * min(kc, k) * 4 / 1024 if order1 else 0.0
    return out
