"""What fin runs with: its environment, per worker and per job, and the worker container's devices.

* **Per worker** (go_fish puts it in the worker container's environment,
  :func:`worker_environment`): a private ``MIOPEN_USER_DB_PATH`` and
  ``MIOPEN_CUSTOM_CACHE_DIR`` under the worker's scratch directory (fin wipes the user
  cache for every solver, so workers must not share one), ``HIP_VISIBLE_DEVICES`` for an
  evaluate worker, and the session's find mode / find enforce.
* **Per fin run** (:func:`fin_environment`): the worker's environment, MIOpen's logging and
  kernel-cache defaults the predecessor always set, then the session's environment (which
  is part of its fingerprint, so it wins), and private cache paths under the job's scratch
  directory when the worker has none. Database settings (``TUNA_DB_*``) are never passed:
  fin copies its whole environment into its output file.
* **Devices** (:func:`container_args`): an evaluate container gets the GPU device files
  (``/dev/kfd``, ``/dev/dri``), the ``video`` group and ``seccomp=unconfined`` (ROCm's
  debugger and profiler interfaces need it), never ``--privileged``. The compile phase runs
  fin on MIOpen's ``HIPNOGPU`` build, which needs no device.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuna.backends.base import SessionInfo

PRIVATE_PATHS: dict[str, str] = {
    "MIOPEN_USER_DB_PATH": "config/miopen",
    "MIOPEN_CUSTOM_CACHE_DIR": "cache",
}
#: Set for every fin run unless the session says otherwise (as the predecessor did).
FIN_DEFAULTS: dict[str, str] = {
    "MIOPEN_LOG_LEVEL": "4",
    "MIOPEN_SQLITE_KERN_CACHE": "ON",
    "MIOPEN_DEBUG_IMPLICIT_GEMM_FIND_ALL_SOLUTIONS": "1",
}
#: Session settings a worker container gets in its own environment.
FIND_SETTINGS: tuple[str, ...] = ("MIOPEN_FIND_MODE", "MIOPEN_FIND_ENFORCE")
_NEVER_PASSED = ("TUNA_DB_",)

GPU_CONTAINER_ARGS: tuple[str, ...] = (
    "--device", "/dev/kfd",
    "--device", "/dev/dri",
    "--group-add", "video",
    "--security-opt", "seccomp=unconfined",
)  # fmt: skip


def container_args(phase: str, gpu: int | None) -> list[str]:
    """``docker run`` arguments of a worker container of ``phase``."""
    return list(GPU_CONTAINER_ARGS) if phase == "eval" else []


def worker_environment(
    session: SessionInfo, phase: str, gpu: int | None, scratch: str
) -> dict[str, str]:
    """Environment of one worker process: private MIOpen paths, its GPU, find settings."""
    env = {key: f"{scratch.rstrip('/')}/{sub}" for key, sub in PRIVATE_PATHS.items()}
    if phase == "eval" and gpu is not None:
        env["HIP_VISIBLE_DEVICES"] = str(gpu)
    for key in FIND_SETTINGS:
        value = session.environment.get(key)
        if value not in (None, ""):
            env[key] = str(value)
    return env


def fin_environment(
    base: Mapping[str, str], session_env: Mapping[str, Any], scratch: Path
) -> dict[str, str]:
    """The environment of one fin run in ``scratch`` (a directory private to the job)."""
    env = {k: v for k, v in base.items() if not k.startswith(_NEVER_PASSED)}
    for key, value in FIN_DEFAULTS.items():
        env.setdefault(key, value)
    for key, value in session_env.items():
        if key not in PRIVATE_PATHS and not key.startswith(_NEVER_PASSED):
            env[key] = "" if value is None else str(value)
    for key, sub in PRIVATE_PATHS.items():
        if not base.get(key):
            path = scratch / sub
            path.mkdir(parents=True, exist_ok=True)
            env[key] = str(path)
    return env
