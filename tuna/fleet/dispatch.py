"""go_fish's dispatcher: one phase of a session, from starting workers to the summary.

The dispatcher owns everything that does not depend on where workers run: it counts the
phase's jobs (progress, rate, ETA), reaps expired leases, decides when the run is over
(the queue drained and the workers gone, every worker gone with work left, or only lost
machines left), turns SIGINT and SIGTERM into a clean stop, and rides out database
outages. Where and how workers run is a :class:`Launcher`'s business: local processes
(:mod:`tuna.fleet.local`) or containers on machines over SSH (:mod:`tuna.fleet.remote`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Protocol

from sqlalchemy import select

from tuna.db import Database
from tuna.db.clock import db_now
from tuna.db.retry import through_outages
from tuna.fleet.phase import FishReport, Progress, Task, check_steps, remaining_jobs
from tuna.jobs import JobCounts, job_counts, reap_expired

log = logging.getLogger(__name__)


class Launcher(Protocol):
    """Where go_fish's workers run. The dispatcher calls, in this order:

    ``tidy(event)`` once, to deal with what runs killed outright left (True if it changed
    anything); ``start(event)`` once unless the phase has nothing to do (``event`` reports
    what happens to machines and workers; raises :class:`~tuna.errors.TunaError` if no
    worker could start); then, while the run lasts,
    ``poll(replace=True)`` from a background thread every ``Pace.poll_every`` seconds, and
    ``alive()``, ``stuck()`` and ``tick()`` from the watching thread; at the end
    ``finish()`` exactly once, also after a failed start, an interrupt or an error (stop
    what still runs, letting each worker finish its current job; gather logs; remove what
    the run left on disk); then ``fill(report, since)``.
    """

    description: str  # how the summary names the workers, e.g. "local worker(s)"

    def tidy(self, event: Callable[[str], None]) -> bool: ...

    def start(self, event: Callable[[str], None]) -> int: ...

    def poll(self, *, replace: bool) -> None: ...

    def alive(self) -> int: ...

    def stuck(self, now: float) -> str | None: ...

    def tick(self) -> None: ...

    def finish(self) -> None: ...

    def fill(self, report: FishReport, since: dt.datetime) -> None: ...


@dataclass(frozen=True)
class Pace:
    interval: float = 1.0  # how often progress is counted
    poll_every: float = 3.0  # how often the launcher looks at its workers
    reap_every: float = 5.0
    drain_grace: float = 30.0  # after draining, how long workers get to exit by themselves


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by SIGINT or SIGTERM while a dispatch runs."""


@contextlib.contextmanager
def stop_signals(on_event: Callable[[str], None]) -> Iterator[threading.Event]:
    """SIGINT, SIGTERM and SIGHUP stop the run cleanly, whatever the parent left them set to.

    A shell starting go_fish in the background from a script leaves SIGINT ignored, and
    the default of SIGTERM (or of SIGHUP, when the terminal goes away) ends go_fish without
    stopping its workers: all three are set explicitly.
    The first signal raises :class:`Interrupted`; later ones, and any once the caller has
    set the yielded event (it is stopping the workers already), only say that the stop is
    under way: nothing may cut the clean-up short.
    """
    stopping = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stopping
        return

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stopping.is_set():
            with contextlib.suppress(OSError):  # SIGHUP: the terminal may be gone
                on_event(
                    f"{name}: already stopping, each worker finishes its current job first "
                    "(SIGKILL go_fish to abandon them; `go_fish --clean` tidies up after that)"
                )
            return
        stopping.set()
        raise Interrupted(name)

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    try:
        yield stopping
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def dispatch(
    db: Database,
    session_id: int,
    task: Task,
    launcher: Launcher,
    *,
    pace: Pace = Pace(),
    on_progress: Callable[[Progress], None] | None = None,
    on_event: Callable[[str], None] | None = None,
) -> FishReport:
    """Run ``task`` of session ``session_id`` with ``launcher``'s workers until it is over."""
    check_steps(db, session_id, task)
    phase = task.phase
    events: list[str] = []

    def event(text: str) -> None:
        log.info("go_fish: session %d %s: %s", session_id, task.value, text)
        events.append(text)
        if on_event:
            with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
                on_event(text)

    def counts() -> JobCounts:
        return through_outages(lambda: job_counts(db, session_id), what="go_fish: count jobs")

    def reap() -> int:
        reaped = through_outages(
            lambda: reap_expired(db, session_id=session_id), what="go_fish: reap"
        )
        return len(reaped)

    def db_clock() -> dt.datetime:  # job timestamps are on the database's clock
        with db.session() as s:
            return s.execute(select(db_now())).scalar_one()

    start_counts = counts()
    start_remaining = remaining_jobs(start_counts, phase)
    run_started = db_clock()
    started = time.monotonic()

    def look() -> Progress:
        now_counts = counts()
        remaining = remaining_jobs(now_counts, phase)
        return Progress(
            now_counts,
            remaining,
            max(0, start_remaining - remaining),
            time.monotonic() - started,
            launcher.alive(),
            start_counts,
        )

    stop_polling, poll_now = threading.Event(), threading.Event()

    def poller() -> None:
        while True:
            poll_now.wait(pace.poll_every)
            poll_now.clear()
            if stop_polling.is_set():
                return
            try:
                launcher.poll(replace=True)
            except Exception:  # the watcher must not die of one bad poll
                log.warning("go_fish: poll failed", exc_info=True)

    interrupted = False
    with stop_signals(event) as stopping:
        polling = threading.Thread(target=poller, name="go_fish-poll", daemon=True)
        try:
            if launcher.tidy(event):  # what killed runs left may have changed the queue
                start_counts = counts()
                start_remaining = remaining_jobs(start_counts, phase)
                run_started = db_clock()
                started = time.monotonic()
            if start_remaining == 0:  # starting workers would only wait for them to exit
                event("nothing to do: no job of this phase is ready or in flight")
            else:
                launcher.start(event)
                polling.start()
                last_reap, drained_at = started, None
                while True:
                    progress = look()
                    if on_progress:
                        on_progress(progress)
                    now = time.monotonic()
                    if progress.remaining == 0:
                        drained_at = drained_at or now
                        poll_now.set()  # burst workers exit now: collect them without delay
                        if progress.workers_alive == 0 or now - drained_at > pace.drain_grace:
                            break
                    elif progress.workers_alive == 0:
                        event("every worker has exited with work left")
                        break
                    elif why := launcher.stuck(now):
                        event(why)
                        break
                    if now - last_reap >= pace.reap_every:
                        launcher.tick()
                        if n := reap():
                            event(f"{n} job(s) with expired leases back in the queue")
                        last_reap = now
                    time.sleep(pace.interval)
        except KeyboardInterrupt as e:
            interrupted = True
            why = f"{e.args[0]}: " if isinstance(e, Interrupted) and e.args else ""
            event(f"{why}interrupted: stopping the workers (each finishes its current job)")
        finally:
            stopping.set()  # from here on a signal cannot cut the clean-up short
            stop_polling.set()
            poll_now.set()
            if polling.is_alive():
                polling.join()
            launcher.finish()
    reap()
    launcher.tick()
    report = FishReport(session_id, task, 0, [], look(), interrupted)
    report.description = launcher.description
    launcher.fill(report, run_started)
    report.events = events + report.events
    return report
