"""cpuconv's solvers: which problems each applies to, and each tunable one's parameter space.

Pure: values in, values out. A solver's parameters are integers in a fixed order, written
comma-separated as MIOpen writes perf configs (``"4,2,16,1,2"``). A candidate is *valid* for a
problem when it can run it and is not pointless for it (a tile wider than the output, a
register tile that cannot fit in the registers, a second thread with one task to share);
:func:`tuning_space` lists the valid ones, in a fixed order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tuna.backends.base import SolverInfo
from tuna.backends.scope import fp32_nchw_reason, plain_conv_reason
from tuna.problems.conv import ConvProblem

NAIVE = "CpuDirectNaive"
TILED = "CpuDirectTiled"
IM2COL = "CpuIm2colGemm"
GEMM1X1 = "CpuGemm1x1"
WINOGRAD = "CpuWinograd2x3"

#: ``SolverInfo.algorithm`` is the family; a find-db row gets the directional MIOpen name.
SOLVERS: tuple[SolverInfo, ...] = (
    SolverInfo(NAIVE, tunable=False, numeric_id=1, algorithm="Direct"),
    SolverInfo(TILED, tunable=True, numeric_id=2, algorithm="Direct"),
    SolverInfo(IM2COL, tunable=True, numeric_id=3, algorithm="GEMM"),
    SolverInfo(GEMM1X1, tunable=True, numeric_id=4, algorithm="GEMM"),
    SolverInfo(WINOGRAD, tunable=True, numeric_id=5, algorithm="Winograd"),
)
BY_NAME: dict[str, SolverInfo] = {s.name: s for s in SOLVERS}
_DIRECTION_NAMES = {"F": "Fwd", "B": "BwdData", "W": "BwdWeights"}

#: Register tiles larger than this many floats spill (16 AVX registers of 8 floats).
MAX_TILE_FLOATS = 128
#: Register tiles of the GEMM core: at most this many vector accumulators.
MAX_ACCUMULATORS = 16
#: A pessimistic rate for the naive reference, to refuse hopeless problems up front.
NAIVE_FLOPS_PER_S = 0.5e9
#: Output positions per image from which CpuDirectTiled is not offered for a forward
#: convolution of one group: from 14x14 on, the GEMM solvers (CpuIm2colGemm applies to
#: every such problem) block it better. Measured on ResNet-50's 19 distinct forward layers
#: (bench/cpuconv.md): CpuDirectTiled won only a 7x7 output (2048x7x7 -> 512), never a
#: layer of 14x14 or more, nor any of the quick start's runs.
TILED_LOSES_FROM = 14 * 14


def algorithm_name(solver: str, direction: str) -> str:
    """The MIOpen algorithm name of a find-db entry, e.g. ``miopenConvolutionBwdDataAlgoGEMM``."""
    family = BY_NAME[solver].algorithm
    return f"miopenConvolution{_DIRECTION_NAMES[direction]}Algo{family}"


def unsupported_reason(p: ConvProblem) -> str | None:
    """Why no cpuconv solver can run ``p``, or None."""
    return plain_conv_reason(p, "cpuconv kernels", "cpuconv") or fp32_nchw_reason(
        p, "cpuconv kernels"
    )


def applicability(p: ConvProblem, solver: str) -> str | None:
    """None when ``solver`` applies to ``p``, otherwise the reason it does not."""
    if solver not in BY_NAME:
        return f"unknown cpuconv solver {solver!r}; known: {', '.join(BY_NAME)}"
    reason = unsupported_reason(p)
    if reason is not None:
        return reason
    if solver == GEMM1X1 and (p.fil_size != (1, 1) or p.stride != (1, 1) or p.pad != (0, 0)):
        return "CpuGemm1x1 needs a 1x1 filter, stride 1 and no padding"
    if solver == WINOGRAD:
        if p.fil_size != (3, 3) or p.stride != (1, 1) or p.dilation != (1, 1):
            return "CpuWinograd2x3 needs a 3x3 filter, stride 1 and dilation 1"
        if p.direction == "W":
            return "CpuWinograd2x3 does not do backward weights (F and B only)"
        if any(o != i + 2 * pd - 2 for i, o, pd in zip(p.in_size, p.out_size, p.pad, strict=True)):
            return "CpuWinograd2x3 needs an output of the full size (in + 2 pad - 2)"
    if solver == TILED and tiled_outrun(p):
        return (
            f"CpuDirectTiled is not offered for a forward convolution of one group with "
            f"{TILED_LOSES_FROM} or more output positions ({p.out_size[0]}x{p.out_size[1]}): "
            "the GEMM solvers are faster there"
        )
    if not space_params(p, solver):
        return f"{solver} has no valid parameters for this problem"
    return None


def tiled_outrun(p: ConvProblem) -> bool:
    """Whether CpuDirectTiled cannot win ``p`` (see :data:`TILED_LOSES_FROM`)."""
    ho, wo = p.out_size
    return p.direction == "F" and p.group_count == 1 and ho * wo >= TILED_LOSES_FROM


def flops(p: ConvProblem) -> int:
    """Multiply-adds x 2 of the convolution (the same in each direction)."""
    ho, wo = p.out_size
    fy, fx = p.fil_size
    return 2 * p.batchsize * p.out_channels * (p.in_channels // p.group_count) * ho * wo * fy * fx


def too_large_reason(p: ConvProblem, budget_s: float) -> str | None:
    """Why ``p`` cannot be evaluated in ``budget_s`` seconds, judged by the naive reference."""
    seconds = flops(p) / NAIVE_FLOPS_PER_S
    if seconds <= budget_s:
        return None
    return (
        f"problem too large for the time budget of {budget_s:g} s: {flops(p) / 1e9:.1f} GFLOP, "
        f"about {seconds:.0f} s for the naive reference alone"
    )


# --- parameter spaces ------------------------------------------------------------------------


@dataclass(frozen=True)
class ParamSpec:
    """The parameters of a tunable solver: names, the values each may take, the default."""

    names: tuple[str, ...]
    choices: tuple[tuple[int, ...], ...]
    default: tuple[int, ...]
    valid: Callable[[ConvProblem, dict[str, int]], bool]

    def combinations(self) -> Iterator[dict[str, int]]:
        for values in itertools.product(*self.choices):
            yield dict(zip(self.names, values, strict=True))


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _tiled_valid(p: ConvProblem, v: dict[str, int]) -> bool:
    cg, kg = p.in_channels // p.group_count, p.out_channels // p.group_count
    ho, wo = p.out_size
    hi, wi = p.in_size
    tk, th, tw, u, nt = v["TK"], v["TH"], v["TW"], v["U"], v["NT"]
    if tk * th * tw > MAX_TILE_FLOATS:
        return False
    if p.direction == "F":
        ok = kg % tk == 0 and (th == 1 or th <= ho) and tw <= max(4, _pow2_ceil(wo))
        reduction, tasks = cg, p.batchsize * p.group_count * (kg // tk) * _ceil_div(ho, th)
    elif p.direction == "B":
        width = _ceil_div(wi, p.stride[1])
        ok = cg % tk == 0 and (th == 1 or th <= hi) and tw <= max(4, _pow2_ceil(width))
        reduction, tasks = kg, p.batchsize * p.group_count * (cg // tk) * _ceil_div(hi, th)
    else:
        ok = kg % tk == 0 and cg % th == 0 and tw <= max(4, _pow2_ceil(wo))
        reduction = _ceil_div(wo, tw)
        tasks = p.group_count * (kg // tk) * (cg // th) * p.fil_size[0] * p.fil_size[1]
    return ok and (u == 1 or u <= reduction) and (nt == 1 or tasks >= nt)


def gemm_shape(p: ConvProblem, solver: str) -> tuple[int, int, int, bool]:
    """(M, N, K, nt) of the GEMMs a GEMM solver runs per image and group; nt: C = A B^T."""
    cg, kg = p.in_channels // p.group_count, p.out_channels // p.group_count
    ho, wo = p.out_size
    cols, rows = ho * wo, cg * p.fil_size[0] * p.fil_size[1]
    if p.direction == "F":
        return kg, cols, rows, False
    if p.direction == "B":
        return (cg, cols, kg, False) if solver == GEMM1X1 else (rows, cols, kg, False)
    return kg, rows, cols, True


def _gemm_valid(m: int, n: int, k: int, nt_layout: bool, v: dict[str, int]) -> bool:
    mr, nv, vw, kc = v["MR"], v["NV"], v["VW"], v.get("KC", 64)
    if mr * nv > MAX_ACCUMULATORS or (mr > 1 and mr > m) or (kc > 64 and kc > _pow2_ceil(k)):
        return False  # spills, rows that do not exist, or a block deeper than the reduction
    # Rows outside columns, or a packed B, only where a thread has two row tiles or more
    # (else both orders are one loop, and a packed panel is read once); the order also
    # needs two column tiles; packing is for the NN GEMM (B^T's rows are contiguous already).
    row_tiles = _ceil_div(m, mr) // max(1, v.get("NT", 1))
    col_tiles = _ceil_div(n, nv if nt_layout else nv * vw)
    if v.get("LO", 0) and (row_tiles < 2 or col_tiles < 2):
        return False
    if v.get("PB", 0) and (row_tiles < 2 or nt_layout):
        return False
    if nt_layout:
        return (nv == 1 or nv <= n) and (vw == 4 or vw <= k)
    return (vw == 4 or vw <= n) and (nv == 1 or nv * vw <= _ceil_div(n, vw) * vw)


def _gemm_solver_valid(solver: str) -> Callable[[ConvProblem, dict[str, int]], bool]:
    def valid(p: ConvProblem, v: dict[str, int]) -> bool:
        m, n, k, nt_layout = gemm_shape(p, solver)
        batches = p.group_count * (1 if p.direction == "W" else p.batchsize)
        if v["PB"] == 2 and (solver != IM2COL or p.direction != "F"):
            return False  # the weights packed once: the forward CpuIm2colGemm only
        if solver == IM2COL:
            batches = 1  # threads split each GEMM
        tasks = batches * _ceil_div(m, v["MR"])
        return _gemm_valid(m, n, k, nt_layout, v) and (v["NT"] == 1 or tasks >= v["NT"])

    return valid


def _winograd_valid(p: ConvProblem, v: dict[str, int]) -> bool:
    cg, kg = p.in_channels // p.group_count, p.out_channels // p.group_count
    ci, ko = (cg, kg) if p.direction == "F" else (kg, cg)
    hout, wout = p.out_size if p.direction == "F" else p.in_size
    tiles = _ceil_div(hout, 2) * _ceil_div(wout, 2)
    tb = v["TB"]
    if tb > max(16, _pow2_ceil(tiles)):
        return False
    tasks = 16 * _ceil_div(ko, v["MR"])
    return _gemm_valid(ko, min(tb, tiles), ci, False, v) and (v["NT"] == 1 or tasks >= v["NT"])


_GEMM_NAMES = ("MR", "NV", "VW", "KC", "NT", "LO", "PB")
#: MR 12 and 16 (with NV = 1: 12 or 16 accumulators) and KC 1024: the exhaustive tables
#: (bench/search.md) put the winners at the old edges, MR = 8 and KC = 512 or 64. VW 16: the
#: machine has had AVX-512 since session 6 (16 floats a register; on an AVX2 machine the
#: compiler splits it in two); NT at 2: its cores. LO, the loop order over register tiles
#: (0: column tiles outside row tiles, 1: rows outside columns), and PB (1: B packed into
#: NR-wide zero-padded panels) are gemm.h's GM_LO and GM_PB: on the 7x7 and 14x14 outputs
#: (N = 49 or 196 columns) packing made the same register tile 2-5x faster (bench/cpuconv.md,
#: session 6). PB 2 (forward CpuIm2colGemm only): the weights packed too, into MR-row panels,
#: once per problem by the kernel's prepack (run.Candidate.prepare), not on each call; it
#: made the 12- and 16-row tiles 1.3-2.1x faster where K is a multiple of 1024 (the rows of A
#: no longer share the L1's sets) and left the others as they were (bench/cpuconv.md,
#: session 10).
_GEMM_CHOICES = (
    (1, 2, 4, 6, 8, 12, 16),
    (1, 2, 3, 4),
    (4, 8, 16),
    (64, 128, 256, 512, 1024),
    (1, 2),
    (0, 1),
    (0, 1, 2),
)
_GEMM_DEFAULT = (1, 1, 4, 64, 1, 0, 0)
#: Parameter strings written before LO and PB existed have 5 fields; they parse as LO = PB = 0,
#: the kernels they named then.
_LEGACY_FIELDS = {"CpuIm2colGemm": 5, "CpuGemm1x1": 5}
SPECS: dict[str, ParamSpec] = {
    TILED: ParamSpec(
        ("TK", "TH", "TW", "U", "NT"),
        ((1, 2, 4, 8), (1, 2, 4), (4, 8, 16, 32), (1, 2, 4), (1, 2)),
        (1, 1, 4, 1, 1),
        _tiled_valid,
    ),
    IM2COL: ParamSpec(_GEMM_NAMES, _GEMM_CHOICES, _GEMM_DEFAULT, _gemm_solver_valid(IM2COL)),
    GEMM1X1: ParamSpec(_GEMM_NAMES, _GEMM_CHOICES, _GEMM_DEFAULT, _gemm_solver_valid(GEMM1X1)),
    WINOGRAD: ParamSpec(
        ("MR", "NV", "VW", "TB", "NT"),
        ((1, 2, 4, 6, 8), (1, 2, 3, 4), (4, 8), (16, 32, 64, 128), (1, 2)),
        (1, 1, 4, 16, 1),
        _winograd_valid,
    ),
}
#: Test only: a CpuDirectTiled or CpuIm2colGemm candidate with one more field, 1, leaves out
#: a filter tap (CpuIm2colGemm: in the forward unfolding into packed panels, PB 1).
FAULT_FIELD = "skip_tap"
_FAULTY = (TILED, IM2COL)


def format_params(values: dict[str, int] | tuple[int, ...]) -> str:
    vals = values.values() if isinstance(values, dict) else values
    return ",".join(str(v) for v in vals)


def space_params(p: ConvProblem, solver: str) -> list[str]:
    """Every valid candidate of a tunable solver, in a fixed order; [""] for the others."""
    spec = SPECS.get(solver)
    if spec is None:
        return [""] if solver in BY_NAME else []
    return [format_params(v) for v in spec.combinations() if spec.valid(p, v)]


def tuning_space(p: ConvProblem, solver: str) -> list[str]:
    """The candidates of a tunable solver on ``p`` (empty for others or where it does not apply)."""
    if solver not in SPECS or unsupported_reason(p) is not None:
        return []
    if solver == TILED and tiled_outrun(p):
        return []
    return space_params(p, solver)


def default_params(p: ConvProblem, solver: str) -> str:
    """The untuned parameters: the spec's default where valid, else the first valid candidate.

    Each spec's default is the first point of its space (smallest tiles, narrowest vectors,
    one thread), valid for every problem the solver applies to: like MIOpen's default perf
    configs, it is chosen to work everywhere, not to be fast anywhere.

    ``""`` for a solver without parameters; raises ``ValueError`` where none is valid.
    """
    spec = SPECS.get(solver)
    if spec is None:
        return ""
    default = dict(zip(spec.names, spec.default, strict=True))
    if spec.valid(p, default):
        return format_params(default)
    space = space_params(p, solver)
    if not space:
        raise ValueError(f"{solver} has no valid parameters for this problem")
    return space[0]


def parse_params(solver: str, text: str) -> dict[str, int]:
    """``"4,1,8,256,1"`` -> ``{"MR": 4, ...}``; raises ``ValueError`` naming what is wrong."""
    spec = SPECS.get(solver)
    if spec is None:
        if text:
            raise ValueError(f"{solver} takes no parameters, not {text!r}")
        return {}
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError as e:
        raise ValueError(f"{solver} parameters {text!r} are not comma-separated integers") from e
    names = spec.names
    if solver in _FAULTY and len(values) == len(names) + 1:
        names = (*names, FAULT_FIELD)
    if len(values) == _LEGACY_FIELDS.get(solver):
        values += [0] * (len(names) - len(values))
    if len(values) != len(names):
        raise ValueError(f"{solver} takes {len(spec.names)} parameters ({','.join(spec.names)})")
    for name, value, choices in zip(names, values, spec.choices, strict=False):
        if value not in choices:
            raise ValueError(f"{solver} parameter {name}={value} is not one of {choices}")
    return dict(zip(names, values, strict=True))


def candidate_stats(p: ConvProblem, solver: str, params: Mapping[str, Any], /) -> dict[str, float]:
    """What a candidate costs besides its time, known from its parameters without measuring
    it: the threads it runs on (``NT``; 1 for solvers without) and its workspace in bytes."""
    return {
        "threads": float(params.get("NT", 1)),
        "workspace_bytes": float(workspace_bytes(p, solver, dict(params))),
    }


def workspace_bytes(p: ConvProblem, solver: str, params: dict[str, int]) -> int:
    """The workspace a candidate needs, in bytes (float32 elements x 4)."""
    cg, kg = p.in_channels // p.group_count, p.out_channels // p.group_count
    if solver == IM2COL:
        ho, wo = p.out_size
        cols = ho * wo
        rows = cg * p.fil_size[0] * p.fil_size[1]
        if p.direction == "F" and params.get("PB"):
            # The unfolded input in packed panels, zero-padded to NR; with PB 2, from the
            # next 64-byte boundary, the weights in MR-row panels (im2col.h's IC_A_OFF).
            nr, mr = params["NV"] * params["VW"], params["MR"]
            panels = rows * _ceil_div(cols, nr) * nr
            if params["PB"] == 2:
                return 4 * (
                    _ceil_div(panels, 16) * 16 + p.group_count * _ceil_div(kg, mr) * mr * rows
                )
            return 4 * panels
        return 4 * rows * cols
    if solver == WINOGRAD:
        ci, ko = (cg, kg) if p.direction == "F" else (kg, cg)
        tb = params["TB"]
        return 4 * 16 * (p.group_count * ko * ci + ci * tb + ko * tb)
    return 0
