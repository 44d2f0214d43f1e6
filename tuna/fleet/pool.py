"""go_fish on this machine through several stages with one set of worker processes.

A stage is one phase of one session (``(session, Task)``). Instead of starting workers
for each stage and waiting for them to exit, :func:`run_local_stages` starts the processes
once (:class:`tuna.fleet.local.LocalWorkers`, the same launcher as go_fish's on this
machine); each works its stages in order (``tuna worker ... --then SESSION:PHASE``):
every process compiles, and one evaluation worker per device an evaluation owns then
evaluates, once every compile is drained. Imports, connections and the backend's caches
are paid once.

The dispatcher (:mod:`tuna.fleet.dispatch`) still watches one stage at a time: progress,
reaping, signals and the report of each stage are go_fish's as for any run. A stage is
over when its queue is drained; the processes that have later stages go on to them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from tuna.db import Database
from tuna.fleet.dispatch import Pace, dispatch
from tuna.fleet.local import LocalWorkers, StageTask
from tuna.fleet.phase import FishReport, Progress, Task
from tuna.worker.settings import WorkerSettings


def run_local_stages(
    db: Database,
    stages: Sequence[StageTask],
    *,
    workers: int,
    log_dir: Path,
    db_url: str,
    settings: WorkerSettings | None = None,
    interval: float = 1.0,
    reap_every: float = 5.0,
    on_stage: Callable[[int, Task], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_event: Callable[[str], None] | None = None,
) -> list[FishReport]:
    """Run ``stages`` with one set of local workers; a report per stage watched, in the order
    the workers work them (compiles first). Stops at the first stage interrupted or left
    undrained."""
    launcher = LocalWorkers(
        db, stages, workers=workers, log_dir=log_dir, db_url=db_url, settings=settings
    )
    reports: list[FishReport] = []
    try:
        for session, task in launcher.stages:
            if on_stage:
                on_stage(session, task)
            report = dispatch(
                db,
                session,
                task,
                launcher.watch((session, task)),
                pace=Pace(interval=interval, poll_every=interval, reap_every=reap_every),
                on_progress=on_progress,
                on_event=on_event,
            )
            reports.append(report)
            if report.interrupted or not report.drained:
                break
    finally:
        launcher.close()
    return reports
