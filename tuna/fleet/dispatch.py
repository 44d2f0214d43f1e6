"""go_fish's dispatcher: one phase of a session, from starting workers to the summary.

The dispatcher owns everything that does not depend on where workers run: it counts the
phase's jobs (progress, rate, ETA), reaps expired leases, decides when the run is over
(the queue drained and the workers gone, every worker gone with work left, or only lost
machines left), turns SIGINT and SIGTERM into a clean stop, and rides out database
outages. Where and how workers run is a :class:`Launcher`'s business: local processes
(:mod:`tuna.fleet.local`) or containers on machines over SSH (:mod:`tuna.fleet.remote`).

It also drives the session's active searches (issue #15, :mod:`tuna.searches.drive`): once
before the run starts, so that a search's first builds and runs are queued, and for an
evaluation, from a thread of its own for as long as the run lasts (a Run that lands gets
the searcher's next point queued within milliseconds). An evaluation is not over while a
search of the session is active.
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
from tuna.fleet.phase import (
    FishReport,
    Progress,
    Task,
    finished_jobs,
    remaining_jobs,
    task_remaining,
)
from tuna.jobs import JobCounts, Phase, job_counts, reap_expired
from tuna.jobs.status import search_work_waiting
from tuna.searches import SessionSearches

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

    def remaining(now: JobCounts) -> int:
        """Jobs of the phase ready or in flight (an evaluation's: of its step, and runs)."""
        if task.step is None:
            return remaining_jobs(now, phase)
        return through_outages(
            lambda: task_remaining(db, session_id, task), what="go_fish: count jobs"
        )

    def builds() -> int:
        """A search's builds queued or in flight: evaluate workers take them too."""
        if phase is not Phase.EVAL:
            return 0
        return through_outages(
            lambda: search_work_waiting(db, session_id).builds, what="go_fish: count builds"
        )

    def reap() -> int:
        reaped = through_outages(
            lambda: reap_expired(db, session_id=session_id), what="go_fish: reap"
        )
        return len(reaped)

    def db_clock() -> dt.datetime:  # job timestamps are on the database's clock
        with db.session() as s:
            return s.execute(select(db_now())).scalar_one()

    searches = SessionSearches(db, session_id)
    through_outages(searches.tick, what="go_fish: drive searches")
    for search_id, (state, reason) in searches.ended.items():
        event(f"search {search_id} {state}" + (f": {reason}" if reason else ""))
    searches.ended.clear()
    drive = phase is Phase.EVAL and searches.active > 0
    stop_driving = threading.Event()

    def driver() -> None:
        while not stop_driving.is_set():
            try:
                searches.run(stop_driving)
                return
            except Exception as e:  # the run goes on; the next round starts the drivers again
                log.warning("go_fish: driving searches failed", exc_info=True)
                event(f"driving searches failed ({type(e).__name__}: {e}); retrying")
                searches.drivers.clear()
                stop_driving.wait(pace.interval)

    start_counts = counts()
    start_remaining = remaining(start_counts) + builds()
    run_started = db_clock()
    started = time.monotonic()

    def look() -> Progress:
        now_counts = counts()
        now_builds = builds()
        return Progress(
            now_counts,
            remaining(now_counts) + now_builds,
            finished_jobs(start_counts, now_counts, phase, start_remaining),
            time.monotonic() - started,
            launcher.alive(),
            start_counts,
            now_builds,
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
                start_remaining = remaining(start_counts) + builds()
                run_started = db_clock()
                started = time.monotonic()
            if start_remaining == 0 and not drive:  # workers would only wait to exit
                event("nothing to do: no job of this phase is ready or in flight")
            else:
                launcher.start(event)
                polling.start()
                driving = threading.Thread(target=driver, name="go_fish-searches", daemon=True)
                if drive:
                    driving.start()
                last_reap, drained_at = started, None
                while True:
                    progress = look()
                    if on_progress:
                        on_progress(progress)
                    now = time.monotonic()
                    for search_id, (state, reason) in list(searches.ended.items()):
                        event(f"search {search_id} {state}" + (f": {reason}" if reason else ""))
                        del searches.ended[search_id]
                    searching = drive and driving.is_alive()  # its driver proposes more
                    if progress.remaining == 0 and not searching:
                        drained_at = drained_at or now
                        poll_now.set()  # burst workers exit now: collect them without delay
                        if progress.workers_alive == 0 or now - drained_at > pace.drain_grace:
                            break
                    elif progress.workers_alive == 0:
                        event(
                            "every worker has exited with work left"
                            + (" (a search is still active)" if searching else "")
                        )
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
            stop_driving.set()
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
