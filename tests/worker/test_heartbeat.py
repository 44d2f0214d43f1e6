"""The heartbeat never cries "lease lost" over a job its own worker has just recorded.

The race (seen in go_fish logs, without any fault): the heartbeat thread takes the list of
held jobs, the worker records one of them (the job leaves its running state), then the
heartbeat's UPDATE finds the job gone and reported it as a lost lease. These tests force
that interleaving with events, each wait bounded by a deadline that fails loudly.
"""

from __future__ import annotations

import logging
import threading

import pytest

from tests.support.seed import expire_leases, seed
from tests.support.wait import wait_until
from tuna.backends.base import CompileOutcome, JobWork
from tuna.backends.noop import NoopBackend
from tuna.jobs import claims, reap_expired, recording
from tuna.jobs.values import DEFAULT_LEASE_SECONDS, Phase
from tuna.worker import run_worker
from tuna.worker.heartbeat import Heartbeat

DEADLINE_S = 20.0


def _wait(event: threading.Event, what: str) -> None:
    if not event.wait(DEADLINE_S):
        raise AssertionError(f"timed out after {DEADLINE_S} s waiting for {what}")


class _Interleave:
    """Makes the heartbeat take its list of held jobs before the worker records them, and
    run its UPDATE only after the record committed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.beat_entered = threading.Event()
        self.recorded = threading.Event()
        self.extended: list[list[int]] = []
        self.lost: list[list[int]] = []
        real_extend, real_record = claims.extend_leases, recording.record_outcomes
        real_record_and_claim = recording.record_and_claim

        def extend(db, owner, jobs, lease_seconds=DEFAULT_LEASE_SECONDS):
            self.beat_entered.set()
            if not self.recorded.is_set():
                _wait(self.recorded, "the worker to record its job")
            lost = real_extend(db, owner, jobs, lease_seconds)
            self.extended.append([j.id for j in jobs])
            self.lost.append(lost)
            return lost

        def record(*args, **kw):
            rec = real_record(*args, **kw)
            self.recorded.set()
            return rec

        def record_and_claim(db, owner, outcomes, *args, **kw):
            done = real_record_and_claim(db, owner, outcomes, *args, **kw)
            if outcomes:
                self.recorded.set()
            return done

        monkeypatch.setattr(claims, "extend_leases", extend)
        monkeypatch.setattr(recording, "record_outcomes", record)
        monkeypatch.setattr(recording, "record_and_claim", record_and_claim)


class _WaitsForTheBeat(NoopBackend):
    def __init__(self, interleave: _Interleave) -> None:
        super().__init__()
        self.interleave = interleave

    def compile(self, work: JobWork) -> CompileOutcome:
        _wait(self.interleave.beat_entered, "the heartbeat to take its list of held jobs")
        return super().compile(work)


def test_a_job_recorded_while_the_heartbeat_beats_is_not_reported_lost(lite, monkeypatch, caplog):
    sd = seed(lite, configs=1, solvers=["NoopDirect"])
    interleave = _Interleave(monkeypatch)
    caplog.set_level(logging.INFO)
    report = run_worker(
        lite,
        sd.session,
        "compile",
        backend=_WaitsForTheBeat(interleave),
        burst=True,
        handle_signals=False,
        idle_sleep=0.01,
        heartbeat_interval=0.01,
    )
    # The race did happen: the beat carried the job and the database said it is gone...
    assert interleave.extended and interleave.extended[0] == sd.jobs
    assert interleave.lost[0] == sd.jobs
    # ...yet nobody calls it lost: it was recorded, by this worker.
    assert (report.done, report.lost) == (1, 0)
    alarms = [r.getMessage() for r in caplog.records if "lease lost" in r.getMessage()]
    assert alarms == []


def test_a_lease_really_lost_is_still_reported(lite, caplog):
    """The other side: a job reaped away from its worker is marked lost and logged once."""
    sd = seed(lite, configs=1, solvers=["NoopDirect"])
    owner = "w:1:test"
    jobs = claims.claim_jobs(lite, sd.session, Phase.COMPILE, owner=owner)
    expire_leases(lite)
    assert reap_expired(lite).returned == sd.jobs
    caplog.set_level(logging.INFO)
    beat = Heartbeat(lite, owner, lease_seconds=60, interval=0.01)
    beat.hold(jobs)
    beat.start()
    try:
        wait_until(
            lambda: beat.is_lost(sd.jobs[0]), "the heartbeat to notice the lost lease",
            timeout=DEADLINE_S, interval=0.01,
        )  # fmt: skip
    finally:
        beat.stop()
    alarms = [r.getMessage() for r in caplog.records if "lease lost" in r.getMessage()]
    assert alarms == [f"job {sd.jobs[0]}: lease lost by {owner}"]


def test_a_failed_beat_is_one_warning_line_and_its_traceback_is_debug(lite, caplog):
    """During an outage every beat fails: one line each (what failed and why), the
    traceback only at debug level (fault runs had 27-32 tracebacks per worker log)."""
    import socket

    from tuna.db import Database
    from tuna.jobs.values import Phase

    sd = seed(lite, configs=1, solvers=["NoopDirect"])
    owner = "w:1:test"
    jobs = claims.claim_jobs(lite, sd.session, Phase.COMPILE, owner=owner)
    with socket.socket() as closed:  # bound, never listening: the server is down
        closed.bind(("127.0.0.1", 0))
        down = Database(f"mysql+pymysql://u:pw@127.0.0.1:{closed.getsockname()[1]}/tuna")
        caplog.set_level(logging.DEBUG, logger="tuna.worker.heartbeat")
        beat = Heartbeat(down, owner, lease_seconds=60, interval=0.01)
        beat.hold(jobs)
        beat.start()
        try:
            wait_until(
                lambda: sum(r.levelno == logging.WARNING for r in caplog.records) >= 2,
                "two heartbeat failures to be logged", timeout=DEADLINE_S, interval=0.01,
            )  # fmt: skip
        finally:
            beat.stop()
            down.dispose()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert all(r.exc_info is None for r in warnings)
    text = warnings[0].getMessage()
    assert "\n" not in text and text.startswith(f"{owner}: heartbeat failed (")
    assert "2003" in text and "Can't connect to MySQL server" in text
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert debug, "the traceback is kept at debug level"
