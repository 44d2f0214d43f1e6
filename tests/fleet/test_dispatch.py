"""go_fish's dispatcher (tuna/fleet/dispatch.py): signals, and what its progress counts.
The loop itself runs in tests/fleet/test_local.py (local workers) and the cluster tier
(containers)."""

from __future__ import annotations

import os
import signal

import pytest

from tests.searches.helpers import bench_session, new_search
from tuna.cli.fish_progress import progress_line
from tuna.fleet.dispatch import Interrupted, Pace, dispatch, stop_signals
from tuna.fleet.phase import Progress, Task
from tuna.searches import SearchDriver


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_the_first_stop_signal_interrupts_even_where_it_was_ignored(sig):
    before = signal.signal(sig, signal.SIG_IGN)  # as a background job inherits SIGINT
    try:
        events: list[str] = []
        with (
            pytest.raises(Interrupted, match=signal.Signals(sig).name),
            stop_signals(events.append),
        ):
            os.kill(os.getpid(), sig)
            pytest.fail("the signal did not interrupt")
        assert signal.getsignal(sig) == signal.SIG_IGN  # put back as it was
    finally:
        signal.signal(sig, before)


def test_once_stopping_a_signal_only_says_so_and_cannot_cut_the_clean_up_short():
    events: list[str] = []
    with stop_signals(events.append) as stopping:
        stopping.set()
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
    assert len(events) == 2 and all("already stopping" in e for e in events)
    assert events[0].startswith("SIGTERM") and events[1].startswith("SIGINT")


class _WorkersThatExitAtOnce:
    """A launcher whose workers are gone as soon as they start (a broken image, say)."""

    description = "worker(s)"

    def tidy(self, event):
        return False

    def start(self, event):
        return 1

    def poll(self, *, replace):
        pass

    def alive(self):
        return 0

    def stuck(self, now):
        return None

    def tick(self):
        pass

    def finish(self):
        pass

    def fill(self, report, since):
        report.workers, report.exit_codes = 1, [1]


def test_a_searchs_queued_builds_are_work_to_go_not_a_drained_queue(db):
    session = bench_session(db)
    search = new_search(db, session)  # 2 builds for 6 runs; no run is queued before its build
    SearchDriver(db, search).start()
    seen: list[Progress] = []
    events: list[str] = []
    report = dispatch(
        db, session, Task.SEARCH, _WorkersThatExitAtOnce(), pace=Pace(interval=0.01),
        on_progress=seen.append, on_event=events.append,
    )  # fmt: skip
    assert not report.drained and report.final.builds == 2 and report.final.runs == 0
    assert "every worker has exited with work left (a search is still active)" in events
    line = progress_line(seen[0], Task.SEARCH)
    assert "; 0 done this run, 2 build(s) and 0 run(s) to go, " in line, line
    assert progress_line(seen[0], Task.RUN_PERF).count("2 build(s) and 0 run(s) to go") == 1
