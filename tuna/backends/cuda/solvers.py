"""The cuda backend's solvers: which problems each applies to, and their parameter space.

Pure: values in, values out. Every solver runs ``kernels/conv.cu`` (NCHW, FP32): forward,
:data:`IGEMM` as an implicit GEMM for any 2D convolution and :data:`GEMM1X1` as one GEMM per
image for a 1x1 filter with stride 1 and no padding (its input rows are contiguous, so they
are read in vectors); backward, :data:`BWD_DATA` and :data:`BWD_WEIGHTS` as implicit GEMMs
(the kernel's comment says which tensor is which matrix) and :data:`GEMM1X1_BWD_DATA` as one
GEMM per image for backward data through a 1x1 filter (dy's rows read in vectors). A
candidate's parameters are written comma-separated in the order of :data:`NAMES`, as cpuconv
writes them (``"64,64,8,4,4,4,1,1"``), in every solver:

====  ============================================================================
BM    output channels per block (the GEMM's M tile)
BN    output positions per block (the GEMM's N tile)
BK    reduction step through shared memory
TM    rows per thread (registers)
TN    columns per thread (registers)
VW    floats per global load: of A (forward: the weights; backward weights: dy) and of
      the 1x1 solvers' B rows (x's forward, dy's backward data); the implicit GEMM of
      backward data reads the weights transposed and gathers dy: 1
PAD   floats of padding per shared-memory row (bank conflicts)
DB    1: two shared-memory buffers, the next step's loads overlap this step's FMAs
====  ============================================================================

A candidate is *valid* for a problem when the kernel can run it and it is not pointless (a
tile far wider than the matrix). What only the compiler can tell — registers, spills, and so
occupancy — is decided in the compile phase (:mod:`~tuna.backends.cuda.compile`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from tuna.backends.base import SolverInfo
from tuna.backends.scope import fp32_nchw_reason, plain_conv_reason
from tuna.problems.conv import ConvProblem

IGEMM = "CudaImplicitGemmFwd"
GEMM1X1 = "CudaGemm1x1Fwd"
BWD_DATA = "CudaImplicitGemmBwdData"
BWD_WEIGHTS = "CudaImplicitGemmBwdWeights"
GEMM1X1_BWD_DATA = "CudaGemm1x1BwdData"

SOLVERS: tuple[SolverInfo, ...] = (
    SolverInfo(IGEMM, tunable=True, numeric_id=101, algorithm="ImplicitGEMM"),
    SolverInfo(GEMM1X1, tunable=True, numeric_id=102, algorithm="GEMM"),
    SolverInfo(BWD_DATA, tunable=True, numeric_id=103, algorithm="ImplicitGEMM"),
    SolverInfo(BWD_WEIGHTS, tunable=True, numeric_id=104, algorithm="ImplicitGEMM"),
    SolverInfo(GEMM1X1_BWD_DATA, tunable=True, numeric_id=105, algorithm="GEMM"),
)
BY_NAME: dict[str, SolverInfo] = {s.name: s for s in SOLVERS}
#: The direction each solver computes (a problem's ``direction``).
DIRECTION = {IGEMM: "F", GEMM1X1: "F", BWD_DATA: "B", BWD_WEIGHTS: "W", GEMM1X1_BWD_DATA: "B"}
#: The solvers that run one GEMM per image (1x1 filter, stride 1, no padding).
ONE_BY_ONE = (GEMM1X1, GEMM1X1_BWD_DATA)
_DIRECTION_NAMES = {"F": "Fwd", "B": "BwdData", "W": "BwdWeights"}
_DIRECTION_WORDS = {"F": "forward", "B": "backward data", "W": "backward weights"}

NAMES = ("BM", "BN", "BK", "TM", "TN", "VW", "PAD", "DB")
CHOICES: tuple[tuple[int, ...], ...] = (
    (16, 32, 64, 128),
    (16, 32, 64, 128),
    (4, 8, 16, 32),
    (1, 2, 4, 8, 16),
    (1, 2, 4, 8, 16),
    (1, 2, 4),
    (0, 1),
    (0, 1),
)
#: One output per thread, 256 threads, scalar loads, one buffer: valid wherever the solver
#: applies, chosen to work everywhere, not to be fast anywhere (like MIOpen's defaults).
DEFAULT = (16, 16, 4, 1, 1, 1, 0, 0)
MAX_THREADS = 1024
#: Accumulators per thread above this always spill (255 registers at most); at 128 some
#: candidates spill and some do not (the compile phase tells).
MAX_ACCUMULATORS = 128
_GRID_YZ = 65535
_INT_MAX = 2**31 - 1


def algorithm_name(solver: str) -> str:
    """The find-db algorithm of a solver, in MIOpen's naming (its direction's)."""
    direction = _DIRECTION_NAMES[DIRECTION[solver]]
    return f"miopenConvolution{direction}Algo{BY_NAME[solver].algorithm}"


def unsupported_reason(p: ConvProblem) -> str | None:
    """Why no cuda solver can run ``p``, or None."""
    kernels = "the cuda kernels"
    plain = plain_conv_reason(p, kernels, kernels)
    if plain is not None:
        return plain
    data = fp32_nchw_reason(p, kernels)
    if data is not None:
        return data
    ho, wo = p.out_size
    hi, wi = p.in_size
    largest = max(
        p.batchsize * p.in_channels * hi * wi,
        p.batchsize * p.out_channels * ho * wo,
        p.out_channels * p.in_channels * p.fil_size[0] * p.fil_size[1],
    )
    if largest > _INT_MAX:
        return f"a tensor of {largest} elements: the cuda kernels index with 32-bit integers"
    return None


def applicability(p: ConvProblem, solver: str) -> str | None:
    """None when ``solver`` applies to ``p``, otherwise the reason it does not."""
    if solver not in BY_NAME:
        return f"unknown cuda solver {solver!r}; known: {', '.join(BY_NAME)}"
    reason = unsupported_reason(p)
    if reason is not None:
        return reason
    wanted = DIRECTION[solver]
    if p.direction != wanted:
        return (
            f"{solver} computes {_DIRECTION_WORDS[wanted]} (direction {wanted}), the problem "
            f"is {_DIRECTION_WORDS.get(p.direction, p.direction)} (direction {p.direction})"
        )
    if solver in ONE_BY_ONE and (p.fil_size != (1, 1) or p.stride != (1, 1) or p.pad != (0, 0)):
        return f"{solver} needs a 1x1 filter, stride 1 and no padding"
    if not space_params(p, solver):
        return f"{solver} has no valid parameters for this problem"
    return None


def flops(p: ConvProblem) -> int:
    """Multiply-adds x 2 of the convolution."""
    ho, wo = p.out_size
    fy, fx = p.fil_size
    return 2 * p.batchsize * p.out_channels * (p.in_channels // p.group_count) * ho * wo * fy * fx


def gemm_shape(p: ConvProblem, solver: str) -> tuple[int, int, int, int]:
    """(M, N, K, batches) of the GEMMs ``solver`` runs: batches is blockIdx.z's extent."""
    cg, kg = p.in_channels // p.group_count, p.out_channels // p.group_count
    (hi, wi), (ho, wo) = p.in_size, p.out_size
    rs = p.fil_size[0] * p.fil_size[1]
    if solver == GEMM1X1:
        return kg, ho * wo, cg * rs, p.batchsize * p.group_count
    if solver == GEMM1X1_BWD_DATA:
        return cg, hi * wi, kg * rs, p.batchsize * p.group_count
    if solver == BWD_DATA:
        return cg, p.batchsize * hi * wi, kg * rs, p.group_count
    if solver == BWD_WEIGHTS:
        return kg, cg * rs, p.batchsize * ho * wo, p.group_count
    return kg, p.batchsize * ho * wo, cg * rs, p.group_count


#: The kernels' arguments (src, mat, out) per direction: which tensor each is (kernels/conv.cu).
OPERANDS = {"F": ("x", "w", "y"), "B": ("y", "w", "x"), "W": ("x", "y", "w")}


def tensor_sizes(p: ConvProblem) -> dict[str, int]:
    """Elements of x, w and y (dy for backward) of ``p``."""
    (hi, wi), (ho, wo), (r, s) = p.in_size, p.out_size, p.fil_size
    return {
        "x": p.batchsize * p.in_channels * hi * wi,
        "w": p.out_channels * (p.in_channels // p.group_count) * r * s,
        "y": p.batchsize * p.out_channels * ho * wo,
    }


def threads(v: dict[str, int]) -> int:
    return (v["BM"] // v["TM"]) * (v["BN"] // v["TN"])


def static_smem_bytes(v: dict[str, int]) -> int:
    """The kernel's shared memory: the A and B tiles, twice with double buffering."""
    return 4 * (1 + v["DB"]) * v["BK"] * (v["BM"] + v["BN"] + 2 * v["PAD"])


def grid(p: ConvProblem, solver: str, v: dict[str, int]) -> tuple[int, int, int]:
    m, n, _, batches = gemm_shape(p, solver)
    return math.ceil(n / v["BN"]), math.ceil(m / v["BM"]), batches


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def valid(p: ConvProblem, solver: str, v: dict[str, int]) -> bool:
    """Whether the kernel can run candidate ``v`` on ``p`` and it is not pointless."""
    return invalid_reason(p, solver, v) is None


def invalid_reason(p: ConvProblem, solver: str, v: dict[str, int]) -> str | None:
    """Why candidate ``v`` is not in ``solver``'s space on ``p`` (None: it is). Constant
    texts: the space is filtered through this for every one of its 19,200 combinations."""
    m, n, k, batches = gemm_shape(p, solver)
    t = threads(v)
    if t % 32 or t > MAX_THREADS:
        return "(BM/TM) x (BN/TN) threads must be a multiple of 32 and at most 1024"
    if v["TM"] * v["TN"] > MAX_ACCUMULATORS:
        return f"TM x TN over {MAX_ACCUMULATORS} accumulators always spills"
    if v["TM"] > v["BM"] or v["TN"] > v["BN"] or v["VW"] > v["BK"]:
        return "TM over BM, TN over BN or VW over BK"
    if v["VW"] > 1 and not _vectors_fit(p, solver, v["VW"]):
        if solver == BWD_DATA:
            return "VW over 1: backward data reads the weights transposed, one float at a time"
        return "VW does not divide the rows it loads: a vector would start off its boundary"
    if v["BM"] > max(16, _pow2_ceil(m)) or v["BN"] > max(16, _pow2_ceil(n)):
        return "BM or BN far wider than the GEMM's M or N"
    if v["BK"] > max(4, _pow2_ceil(k)):
        return "BK far deeper than the GEMM's reduction"
    _, gy, gz = grid(p, solver, v)
    if gy > _GRID_YZ or gz > _GRID_YZ:
        return "a grid over 65,535 blocks in y or z"
    return None


def _vectors_fit(p: ConvProblem, solver: str, vw: int) -> bool:
    """Whether A's rows (and the 1x1 solver's B rows) start on a ``vw``-float boundary and
    a vector never crosses into the next row (or, backward weights, the next image)."""
    _, n, k, _ = gemm_shape(p, solver)
    if solver == GEMM1X1_BWD_DATA:
        return n % vw == 0  # dy's rows of H x W positions; the weights read one at a time
    if solver == BWD_DATA:
        return False  # the weights are read transposed: no contiguous run along a row
    if solver == BWD_WEIGHTS:
        return (p.out_size[0] * p.out_size[1]) % vw == 0
    return k % vw == 0 and (solver != GEMM1X1 or n % vw == 0)


def combinations() -> Iterator[dict[str, int]]:
    for values in itertools.product(*CHOICES):
        yield dict(zip(NAMES, values, strict=True))


def format_params(v: dict[str, int] | tuple[int, ...]) -> str:
    return ",".join(str(x) for x in (v.values() if isinstance(v, dict) else v))


def space_params(p: ConvProblem, solver: str) -> list[str]:
    """Every valid candidate of ``solver`` on ``p``, in a fixed order."""
    if solver not in BY_NAME:
        return []
    return [format_params(v) for v in combinations() if valid(p, solver, v)]


def tuning_space(p: ConvProblem, solver: str) -> list[str]:
    """The candidates of ``solver`` on ``p``; empty where it does not apply."""
    if solver not in BY_NAME or unsupported_reason(p) is not None:
        return []
    if p.direction != DIRECTION[solver]:
        return []
    if solver in ONE_BY_ONE and applicability(p, solver) is not None:
        return []
    return space_params(p, solver)


def default_params(p: ConvProblem, solver: str) -> str:
    """:data:`DEFAULT` where valid, else the first valid candidate; ``ValueError`` if none."""
    default = dict(zip(NAMES, DEFAULT, strict=True))
    if valid(p, solver, default):
        return format_params(default)
    space = space_params(p, solver)
    if not space:
        raise ValueError(f"{solver} has no valid parameters for this problem")
    return space[0]


def parse_params(solver: str, text: str) -> dict[str, int]:
    """``"64,64,8,4,4,4,1,1"`` -> ``{"BM": 64, ...}``; ``ValueError`` naming what is wrong."""
    if solver not in BY_NAME:
        raise ValueError(f"unknown cuda solver {solver!r}")
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError as e:
        raise ValueError(f"{solver} parameters {text!r} are not comma-separated integers") from e
    if len(values) != len(NAMES):
        raise ValueError(f"{solver} takes {len(NAMES)} parameters ({','.join(NAMES)})")
    for name, value, choices in zip(NAMES, values, CHOICES, strict=True):
        if value not in choices:
            raise ValueError(f"{solver} parameter {name}={value} is not one of {choices}")
    return dict(zip(NAMES, values, strict=True))


def problem_macros(p: ConvProblem) -> dict[str, int]:
    """The problem as the kernels' compile-time constants (``DIR_``: 0 F, 1 B, 2 W)."""
    (hi, wi), (ho, wo), (r, s) = p.in_size, p.out_size, p.fil_size
    return {
        "N_": p.batchsize,
        "C_": p.in_channels,
        "H_": hi,
        "W_": wi,
        "K_": p.out_channels,
        "R_": r,
        "S_": s,
        "P_": ho,
        "Q_": wo,
        "SH": p.stride[0],
        "SW": p.stride[1],
        "PH": p.pad[0],
        "PW": p.pad[1],
        "DH": p.dilation[0],
        "DW": p.dilation[1],
        "G_": p.group_count,
        "DIR_": "FBW".index(p.direction),
    }


def candidate_macros(solver: str, v: dict[str, int]) -> dict[str, int]:
    """A candidate's compile-time constants (its parameters and the solver's variant)."""
    return {**v, "ONE_BY_ONE": int(solver in ONE_BY_ONE)}
