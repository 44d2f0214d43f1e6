"""One worker process through several stages — (session, phase) pairs — in order.

A process that stays up across the phases of a run is started once: its imports, its
database connection and its backend's caches (cpuconv's reference outputs) serve every
stage. The rules that keep timings right:

* consecutive compile stages: the worker moves to the next one as soon as a claim finds
  nothing ready in the current one (``until_empty``): compiles of other workers may
  still run, that is fine for a compile;
* before the first evaluation stage, every compile stage before it is drained (nothing
  ready, nothing in flight anywhere: ``burst``), so that no compile runs while it times;
  a job that came back for another try meanwhile is compiled then;
* evaluation stages, and a last compile stage, end drained (``burst``).

A stop signal ends the current stage as it ends a worker, and every stage after it.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Sequence
from types import FrameType

from tuna.db import Database
from tuna.jobs.values import Phase
from tuna.worker.hooks import Hook
from tuna.worker.loop import WorkerReport, run_worker
from tuna.worker.settings import WorkerSettings
from tuna.worker.signals import on_stop_signals

log = logging.getLogger(__name__)

Stage = tuple[int, Phase]


def parse_stage(text: str) -> Stage:
    """``"3:eval"`` -> ``(3, Phase.EVAL)``; raises ``ValueError`` saying what is wrong."""
    session, sep, phase = text.partition(":")
    if not sep or not session.strip().isdigit():
        raise ValueError(f"{text!r}: give SESSION:PHASE, e.g. 3:eval")
    try:
        return int(session), Phase(phase.strip())
    except ValueError as e:
        raise ValueError(f"{text!r}: the phase is compile or eval") from e


def plan(stages: Sequence[Stage]) -> list[tuple[Stage, str]]:
    """The stages in the order a worker works them, each with how it ends: ``empty``,
    ``drained``, or ``drain`` (a compile stage drained again before an evaluation)."""
    out: list[tuple[Stage, str]] = []
    compiled: list[Stage] = []
    for i, stage in enumerate(stages):
        if stage[1] is Phase.EVAL:
            if compiled:
                out += [(c, "drain") for c in compiled]
                compiled = []
            out.append((stage, "drained"))
            continue
        following = stages[i + 1] if i + 1 < len(stages) else None
        if following is not None and following[1] is Phase.COMPILE:
            out.append((stage, "empty"))
            compiled.append(stage)  # left with jobs maybe in flight elsewhere: drain later
        else:
            out.append((stage, "drained"))
    return out


def run_stages(
    db: Database,
    stages: Sequence[Stage],
    settings: WorkerSettings | None = None,
    *,
    hooks: Sequence[Hook] = (),
    stop: threading.Event | None = None,
    handle_signals: bool = True,
) -> list[WorkerReport]:
    """Work ``stages`` in order (see the module's rules); one report per stage worked."""
    base = settings or WorkerSettings()
    stop = stop or threading.Event()
    reports: list[WorkerReport] = []
    with _stop_on_signals(stop, handle_signals):
        for (session, phase), ending in plan(stages):
            if stop.is_set():
                break
            report = run_worker(
                db,
                session,
                phase,
                base.but(burst=ending != "empty", until_empty=ending == "empty"),
                hooks=hooks,
                stop=stop,
                handle_signals=handle_signals,
            )
            if ending == "drain" and report.claimed == 0:
                continue  # nothing came back to compile: not worth a report
            reports.append(report)
            if report.stopped in ("signal", "aborted", "max_jobs"):
                break
    return reports


def _stop_on_signals(
    stop: threading.Event, enabled: bool
) -> contextlib.AbstractContextManager[None]:
    """Between stages (no worker's own handlers installed) SIGTERM and SIGINT set ``stop``."""

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.warning("%s between stages: stopping", signal.Signals(signum).name)
        stop.set()

    return on_stop_signals(on_signal, enabled=enabled)
