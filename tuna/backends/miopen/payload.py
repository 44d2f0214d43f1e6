"""The compile phase's payload: what fin's evaluate step needs again, besides the kernels.

The compile phase stores the kernels in the kernel cache and this payload in the job: fin's
result for the solver without the blobs (algorithm, params, workspace, and each kernel's file,
options, md5 and size). The evaluate phase rebuilds fin's ``*_compile_result`` item from the
two, checking every stored kernel against the md5 fin gave it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tuna.backends.base import JobWork, KernelBinary
from tuna.backends.miopen.kernels import encode_kernel_object, md5_hex
from tuna.backends.miopen.results import SolverResult, StepResult
from tuna.errors import BackendError

PAYLOAD_VERSION = 1


def compile_payload(step: str, step_result: StepResult, result: SolverResult) -> str:
    """The payload of a successful compile step for one solver."""
    return json.dumps(
        {
            "version": PAYLOAD_VERSION,
            "step": step,
            "db_key": step_result.db_key,
            "solver": result.solver,
            "algorithm": result.algorithm,
            "tunable": result.tunable,
            "params": result.params,
            "workspace": result.workspace,
            "kernels": [m.as_json() for m in result.kernel_meta],
        }
    )


class PayloadError(BackendError):
    """Raised when the compile phase's payload or kernels cannot rebuild fin's input."""


def compiled_item(work: JobWork, compile_step: str) -> dict[str, Any]:
    """The ``*_compile_result`` item fin's evaluate step needs, from what the compile phase
    stored: its payload and its kernels (each checked against the md5 fin gave it)."""
    try:
        payload = json.loads(work.payload or "")
    except ValueError:
        payload = None
    metas = payload.get("kernels") if isinstance(payload, dict) else None
    if not isinstance(metas, list) or not all(isinstance(m, dict) for m in metas):
        raise PayloadError(
            f"job {work.job_id}: no usable compile payload; run the compile phase again"
        )
    assert isinstance(payload, dict)
    if payload.get("version") != PAYLOAD_VERSION or payload.get("step") != compile_step:
        raise PayloadError(
            f"job {work.job_id}: the compile payload is from {payload.get('step')!r} "
            f"(version {payload.get('version')!r}), not {compile_step}; compile it again"
        )
    if payload.get("solver") != work.solver:
        raise PayloadError(
            f"job {work.job_id}: the compile payload is for {payload.get('solver')}, "
            f"not {work.solver}"
        )
    stored = {(k.name, k.args, md5_hex(k.binary)): k for k in work.kernels}
    objects = []
    for meta in metas:
        key = (meta.get("kernel_file"), meta.get("comp_options"), meta.get("md5_sum"))
        kernel = stored.get(key)
        if kernel is None:
            raise PayloadError(
                f"job {work.job_id}: solver {work.solver}, kernel {key[0]!r}: no stored kernel "
                f"with md5 {key[2]} (missing or corrupted in the kernel cache); compile again"
            )
        objects.append(encode_kernel_object(kernel))
    if compile_step == "miopen_perf_compile":
        return {"kernel_objects": objects, "perf_compiled": True, "solver_name": work.solver}
    return {
        "algorithm": payload.get("algorithm"),
        "find_compiled": True,
        "kernel_objects": objects,
        "solver_name": work.solver,
        "workspace": payload.get("workspace"),
    }


def stored_kernels(
    work: JobWork, named: Iterable[tuple[str, str, str]]
) -> tuple[KernelBinary, ...] | None:
    """The job's stored kernels that fin names by ``(kernel_file, comp_options, md5_sum)``, in
    fin's order and each once; None when one of them is not among them (fin built it anew)."""
    stored = {(k.name, k.args, md5_hex(k.binary)): k for k in work.kernels}
    found: dict[tuple[str, str, str], KernelBinary] = {}
    for key in named:
        kernel = stored.get(key)
        if kernel is None:
            return None
        found.setdefault(key, kernel)
    return tuple(found.values())
