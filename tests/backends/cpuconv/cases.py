"""Problems and helpers shared by the cpuconv tests: small shapes, so the module stays fast."""

from __future__ import annotations

from collections.abc import Sequence

from tuna.backends.base import JobWork, SessionInfo
from tuna.backends.cpuconv import run
from tuna.problems.conv import ConvProblem

SESSION = SessionInfo(id=1, arch="cpu", num_cu=2, backend="cpuconv")


def conv(**kw: object) -> ConvProblem:
    return ConvProblem(spatial_dim=2, **kw)  # type: ignore[arg-type]


# name -> a forward problem; tests take each direction of it.
SHAPES: dict[str, ConvProblem] = {
    "3x3 pad 1, odd sizes": conv(
        batchsize=2, in_channels=3, out_channels=4, in_size=(7, 9), fil_size=(3, 3), pad=(1, 1)
    ),
    "3x3 stride 2": conv(
        batchsize=1, in_channels=4, out_channels=8, in_size=(9, 8), fil_size=(3, 3),
        pad=(1, 1), stride=(2, 2),
    ),
    "3x3 dilation 2": conv(
        batchsize=1, in_channels=2, out_channels=3, in_size=(10, 7), fil_size=(3, 3),
        pad=(2, 2), dilation=(2, 2),
    ),
    "3x3 unpadded": conv(
        batchsize=2, in_channels=5, out_channels=3, in_size=(6, 5), fil_size=(3, 3)
    ),
    "3x3 pad 2": conv(
        batchsize=1, in_channels=3, out_channels=5, in_size=(5, 6), fil_size=(3, 3), pad=(2, 2)
    ),
    "3x3 groups 4": conv(
        batchsize=1, in_channels=4, out_channels=8, in_size=(6, 6), fil_size=(3, 3),
        pad=(1, 1), group_count=4,
    ),
    "1x1": conv(batchsize=2, in_channels=8, out_channels=4, in_size=(5, 6), fil_size=(1, 1)),
    "1x1 stride 2, groups 2": conv(
        batchsize=1, in_channels=4, out_channels=6, in_size=(7, 7), fil_size=(1, 1),
        stride=(2, 2), group_count=2,
    ),
    "7x7 stride 2, groups 2": conv(
        batchsize=1, in_channels=4, out_channels=4, in_size=(13, 11), fil_size=(7, 7),
        pad=(3, 3), stride=(2, 2), group_count=2,
    ),
    "5x3 mixed stride and pad": conv(
        batchsize=1, in_channels=3, out_channels=2, in_size=(8, 9), fil_size=(5, 3),
        pad=(2, 0), stride=(1, 2), dilation=(1, 2),
    ),
}  # fmt: skip


def covering(space: Sequence[str]) -> list[str]:
    """A few candidates of ``space`` that between them take every value each parameter takes
    in it (greedy, deterministic)."""
    rows = [tuple(s.split(",")) for s in space]
    needed = {(i, v) for r in rows for i, v in enumerate(r)}
    chosen: list[str] = []
    while needed:
        best = max(rows, key=lambda r: len(set(enumerate(r)) & needed))
        chosen.append(",".join(best))
        needed -= set(enumerate(best))
    return chosen or list(space[:1])


def measure(
    p: ConvProblem, solver: str, candidates: Sequence[str], *, opt: str = "0"
) -> list[run.Measured]:
    """Build ``candidates`` in one unit and verify and time them (one repeat)."""
    return run.build_and_measure(
        p,
        solver,
        candidates,
        march="native",
        opt=opt,
        per_unit=64,
        prefix="cpuconv-test-",
        repeats=1,
    )


def work(p: ConvProblem, solver: str, step: str = "perf", **kw: object) -> JobWork:
    return JobWork(
        job_id=11,
        attempt=1,
        phase=str(kw.pop("phase", "compile")),
        session=kw.pop("session", SESSION),  # type: ignore[arg-type]
        config_id=5,
        problem=p,
        solver=solver,
        step=step,
        **kw,  # type: ignore[arg-type]
    )
