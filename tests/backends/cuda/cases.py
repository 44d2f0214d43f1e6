"""Problems and helpers shared by the cuda backend's tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuna.backends.base import JobWork, SessionInfo
from tuna.problems.conv import ConvProblem


def conv(**kw: Any) -> ConvProblem:
    return ConvProblem(spatial_dim=2, **kw)


def session(**env: Any) -> SessionInfo:
    return SessionInfo(id=1, arch="sm_90", num_cu=132, backend="cuda", environment=env)


# Odd shapes: no dimension a multiple of a tile.
ODD_3X3_STRIDE_2 = conv(
    batchsize=2, in_channels=3, out_channels=19, in_size=(9, 7), fil_size=(3, 3),
    pad=(1, 1), stride=(2, 2),
)  # fmt: skip
ODD_GROUPED_DILATED = conv(
    batchsize=3, in_channels=6, out_channels=33, in_size=(8, 11), fil_size=(3, 2),
    pad=(2, 1), dilation=(2, 1), group_count=3,
)  # fmt: skip
# Room for large tiles: M = 70, N = 143, K = 180 (4-float rows).
ODD_LARGE_TILES = conv(
    batchsize=1, in_channels=20, out_channels=70, in_size=(11, 13), fil_size=(3, 3), pad=(1, 1)
)
ODD_1X1 = conv(batchsize=3, in_channels=7, out_channels=37, in_size=(5, 7), fil_size=(1, 1))
EVEN_1X1 = conv(batchsize=2, in_channels=12, out_channels=40, in_size=(6, 6), fil_size=(1, 1))
# Backward data's room for large tiles: M = C = 70, N = 143, K = 20 x 9.
ODD_WIDE_INPUT = conv(
    batchsize=1, in_channels=70, out_channels=20, in_size=(11, 13), fil_size=(3, 3), pad=(1, 1),
    direction="B",
)  # fmt: skip
# Backward data through a 1x1 filter in 2 groups: M = C/G = 20, N = 36 (dy's rows), K = 6.
GROUPED_1X1_BWD_DATA = conv(
    batchsize=2, in_channels=40, out_channels=12, in_size=(6, 6), fil_size=(1, 1),
    group_count=2, direction="B",
)  # fmt: skip
# Large enough for the compile phase's sample to hold every kind of candidate.
MEDIUM = conv(
    batchsize=2, in_channels=64, out_channels=128, in_size=(14, 14), fil_size=(3, 3), pad=(1, 1)
)
# Backward data's: M = C = 128, N = 2 x 14 x 14, K = 64 x 9, dy gathered at stride 2.
MEDIUM_BWD_DATA = conv(
    batchsize=2, in_channels=128, out_channels=64, in_size=(14, 14), fil_size=(3, 3),
    pad=(1, 1), stride=(2, 2), direction="B",
)  # fmt: skip


def work(
    p: ConvProblem,
    solver: str,
    step: str = "perf",
    *,
    phase: str = "compile",
    env: Mapping[str, Any] | None = None,
    **kw: Any,
) -> JobWork:
    return JobWork(
        job_id=7, attempt=1, phase=phase, session=session(**(env or {})), config_id=1,
        problem=p, solver=solver, step=step, **kw,
    )  # fmt: skip
