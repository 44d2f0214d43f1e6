"""fin's input: the JSON job objects Tuna hands to ``fin -i input.json -o output.json``.

Pure: values in, values out. fin reads a JSON array of job objects and runs each job's
``steps`` in order (reference ``mituna.md`` §6; MIOpen ``fin/src/main.cpp``,
``conv_fin.hpp``)::

    {"steps": ["miopen_find_compile"], "arch": "gfx90a:sram-ecc+:xnack-", "num_cu": 104,
     "config_tuna_id": 7, "direction": 2, "dynamic_only": false,
     "config": {<the problem as MIOpenDriver flags>}, "solvers": ["ConvAsm1x1UV2"]}

``get_solvers`` takes no config. The evaluate steps also carry what the compile step
returned (``miopen_find_compile_result`` / ``miopen_perf_compile_result``), with the kernels.

``config`` describes the problem as the driver line does (``in_*`` is always the forward
input x, whatever the direction); fin builds MIOpen's problem from it, so only problems fin
can build exactly are accepted (:class:`UnsupportedProblemError` otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tuna.errors import BackendError
from tuna.problems.conv import ConvProblem
from tuna.problems.driver import to_driver_line

#: The fin step of each (phase, job step). A kernel job is built and checked like a find job.
STEPS: dict[tuple[str, str], str] = {
    ("compile", "perf"): "miopen_perf_compile",
    ("compile", "find"): "miopen_find_compile",
    ("compile", "kernel"): "miopen_find_compile",
    ("eval", "perf"): "miopen_perf_eval",
    ("eval", "find"): "miopen_find_eval",
    ("eval", "kernel"): "miopen_find_eval",
}
#: What an evaluate step runs before it (fin allocates and fills the tensors on the device).
EVAL_PREAMBLE: tuple[str, ...] = ("alloc_buf", "fill_buf")
#: Each step's result list in fin's output, and the flag in each item that says it worked.
RESULT_KEYS: dict[str, tuple[str, str]] = {
    "miopen_perf_compile": ("miopen_perf_compile_result", "perf_compiled"),
    "miopen_find_compile": ("miopen_find_compile_result", "find_compiled"),
    "miopen_perf_eval": ("miopen_perf_eval_result", "evaluated"),
    "miopen_find_eval": ("miopen_find_eval_result", "evaluated"),
}
#: The compile step whose result an evaluate step takes as input.
COMPILED_BY: dict[str, str] = {
    "miopen_perf_eval": "miopen_perf_compile",
    "miopen_find_eval": "miopen_find_compile",
}

#: fin's ``direction``: MIOpenDriver's ``-F`` value of the direction.
DIRECTION_NUMBERS: dict[str, int] = {"F": 1, "B": 2, "W": 4}
#: fin's ``cmd`` per data type: fin's main accepts these three convolution commands only.
FIN_COMMANDS: dict[str, str] = {"FP32": "conv", "FP16": "convfp16", "BF16": "convbfp16"}


class UnsupportedProblemError(BackendError):
    """Raised when a problem cannot be handed to fin exactly as Tuna holds it."""


def target_id(arch: str) -> str:
    """The target id fin is given for a session's arch, as the predecessor wrote it.

    An arch that already carries features (``gfx90a:sramecc+:xnack-``) is used as given;
    ``gfx900`` becomes ``gfx900:xnack-``; RDNA parts (gfx10xx, gfx11xx, gfx12xx) have no
    such features and stay plain; every other gfx arch becomes ``<arch>:sram-ecc+:xnack-``.
    """
    if ":" in arch:
        return arch
    if arch == "gfx900":
        return f"{arch}:xnack-"
    if arch.startswith(("gfx10", "gfx11", "gfx12")):
        return arch
    return f"{arch}:sram-ecc+:xnack-"


def unsupported_reason(p: ConvProblem) -> str | None:
    """Why fin cannot take ``p`` as it is, or None."""
    if len(set(p.types)) != 1 or p.in_type not in FIN_COMMANDS:
        return (
            f"data types {'/'.join(p.types)}: fin runs conv (FP32), convfp16 and convbfp16 "
            "problems only"
        )
    if any(p.casts):
        return "cast types are not passed to fin"
    if p.bias:
        return "fin always builds the problem with bias 0"
    if any(p.trans_output_pad):
        return f"fin ignores trans_output_pad {p.trans_output_pad} (it always uses 0)"
    return None


def fin_config(p: ConvProblem, *, config_id: int) -> dict[str, Any]:
    """The ``config`` object of a fin job: the problem as MIOpenDriver flags.

    A 2D problem gets the depth fields the predecessor sent (``in_d``/``fil_d`` 1, the other
    ``_d`` fields 0); fin reads them only for 3D problems.
    """
    reason = unsupported_reason(p)
    if reason is not None:
        raise UnsupportedProblemError(f"config {config_id}: {reason}")
    three = p.spatial_dim == 3

    def dhw(values: tuple[int, ...], depth_2d: int) -> tuple[int, int, int]:
        return (values[0], values[1], values[2]) if three else (depth_2d, values[0], values[1])

    in_d, in_h, in_w = dhw(p.in_size, 1)
    fil_d, fil_h, fil_w = dhw(p.fil_size, 1)
    pad_d, pad_h, pad_w = dhw(p.pad, 0)
    stride_d, stride_h, stride_w = dhw(p.stride, 0)
    dil_d, dil_h, dil_w = dhw(p.dilation, 0)
    opad_d, opad_h, opad_w = dhw(p.trans_output_pad, 0)
    return {
        "batchsize": p.batchsize,
        "cmd": FIN_COMMANDS[p.in_type],
        "conv_stride_d": stride_d,
        "conv_stride_h": stride_h,
        "conv_stride_w": stride_w,
        "dilation_d": dil_d,
        "dilation_h": dil_h,
        "dilation_w": dil_w,
        "direction": p.direction,
        "driver": to_driver_line(p),
        "fil_d": fil_d,
        "fil_h": fil_h,
        "fil_w": fil_w,
        "group_count": p.group_count,
        "id": config_id,
        "in_channels": p.in_channels,
        "in_d": in_d,
        "in_h": in_h,
        "in_layout": p.in_layout,
        "in_w": in_w,
        "mode": p.mode,
        "out_channels": p.out_channels,
        "out_layout": p.out_layout,
        "pad_d": pad_d,
        "pad_h": pad_h,
        "pad_mode": "default",
        "pad_w": pad_w,
        "spatial_dim": p.spatial_dim,
        "trans_output_pad_d": opad_d,
        "trans_output_pad_h": opad_h,
        "trans_output_pad_w": opad_w,
        "wei_layout": p.fil_layout,
    }


def problem_job(
    steps: Sequence[str],
    *,
    arch: str,
    num_cu: int,
    config_id: int,
    problem: ConvProblem,
    solvers: Sequence[str] | None = None,
    dynamic_only: bool = False,
) -> dict[str, Any]:
    """One fin job on one problem (every step but ``get_solvers``)."""
    job: dict[str, Any] = {
        "steps": list(steps),
        "arch": target_id(arch),
        "num_cu": num_cu,
        "config_tuna_id": config_id,
        "direction": DIRECTION_NUMBERS[problem.direction],
        "dynamic_only": dynamic_only,
        "config": fin_config(problem, config_id=config_id),
    }
    if solvers is not None:
        job["solvers"] = list(solvers)
    return job


def get_solvers_input() -> list[dict[str, Any]]:
    """fin's input that lists every solver of the MIOpen build."""
    return [{"steps": ["get_solvers"]}]


def applicability_input(
    *, arch: str, num_cu: int, problems: Sequence[tuple[int, ConvProblem]]
) -> list[dict[str, Any]]:
    """fin's input that asks which solvers apply to each (config id, problem)."""
    return [
        problem_job(["applicability"], arch=arch, num_cu=num_cu, config_id=cid, problem=p)
        for cid, p in problems
    ]


def eval_job(
    step: str,
    *,
    arch: str,
    num_cu: int,
    config_id: int,
    problem: ConvProblem,
    solver: str,
    compiled: Mapping[str, Any],
    dynamic_only: bool = False,
) -> dict[str, Any]:
    """An evaluate job: the problem, its solver, and the compile step's result for it."""
    job = problem_job(
        [*EVAL_PREAMBLE, step],
        arch=arch,
        num_cu=num_cu,
        config_id=config_id,
        problem=problem,
        solvers=[solver],
        dynamic_only=dynamic_only,
    )
    job[RESULT_KEYS[COMPILED_BY[step]][0]] = [dict(compiled)]
    return job
