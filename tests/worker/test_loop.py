from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections import Counter

import pytest
from sqlalchemy import func, select

from tests.support.clock import FakeClock, database_time, on_fake_clock
from tests.support.seed import ALL_NOOP_SOLVERS, expire_leases, job_row, seed
from tests.support.wait import wait_until
from tests.worker.procs import calls, join_all, reports, start_workers
from tuna.backends.noop import NoopBackend
from tuna.db.enums import JobState
from tuna.db.models import FindDb, Job, JobKernel, PerfDb
from tuna.errors import NotFoundError
from tuna.jobs import reap_expired
from tuna.worker import Hook, run_worker

S = JobState


def states(db, session):
    with db.session() as s:
        return dict(
            s.execute(
                select(Job.state, func.count()).where(Job.session == session).group_by(Job.state)
            ).all()
        )


def count(db, model):
    with db.session() as s:
        return s.execute(select(func.count()).select_from(model)).scalar_one()


def run(db, session, phase, **kw):
    kw.setdefault("backend", NoopBackend())
    kw.setdefault("idle_sleep", 0.01)
    return run_worker(db, session, phase, burst=True, handle_signals=False, **kw)


@contextlib.contextmanager
def sqlite_trace(db):
    """Every statement SQLite runs on ``db``'s connections meanwhile, BEGIN and COMMIT
    included, as SQLite reports them (``set_trace_callback``: the claim and record
    statements run on the driver's cursor, which SQLAlchemy's execute events do not see)."""
    from sqlalchemy import event

    sent: list[str] = []

    def on_connect(dbapi_conn, _record):
        dbapi_conn.set_trace_callback(lambda sql: sent.append(" ".join(sql.split())))

    db.engine.dispose()  # every connection from now on is a new, traced one
    event.listen(db.engine, "connect", on_connect)
    try:
        yield sent
    finally:
        event.remove(db.engine, "connect", on_connect)
        db.engine.dispose()


def transactions(sent):
    """The statements of each committed transaction, in order."""
    out, current = [], []
    for sql in sent:
        if sql.upper() == "COMMIT":
            out.append(current)
            current = []
        elif not sql.upper().startswith("BEGIN"):
            current.append(sql)
    return out


def test_at_one_job_per_claim_each_job_costs_one_commit_that_writes_the_job_table(lite):
    """A job's record travels in the next claim's transaction: N jobs, N + 1 writing
    transactions (the first claim, N - 1 record-and-claims, the last record with the claim
    that finds nothing), not 2N. Each job is still recorded, fenced, before the worker
    exits."""
    sd = seed(lite, configs=6, solvers=["NoopDirect"])
    with sqlite_trace(lite) as sent:
        r = run(lite, sd.session, "compile")
    assert (r.claimed, r.done, r.stopped) == (6, 6, "drained")
    assert states(lite, sd.session) == {S.COMPILED: 6}
    writes = [
        n for n in (sum(q.startswith("UPDATE job ") for q in t) for t in transactions(sent)) if n
    ]
    assert len(writes) == 6 + 1, writes
    assert writes == [1] + [2] * 5 + [1]  # claim; record + claim; the last record


def test_an_evaluation_worker_claims_builds_only_when_its_claim_found_no_run(lite):
    """A claim that found runs, however few, is not followed by a second one for a search's
    builds: 6 runs at 4 a claim take 3 claims (4, the last 2, none) and one for builds after
    the empty one, each in a transaction of its own; one more per short claim before."""
    sd = seed(lite, configs=6, solvers=["NoopDirect"])
    run(lite, sd.session, "compile")
    with sqlite_trace(lite) as sent:
        r = run(lite, sd.session, "eval", claim_batch=4)
    assert (r.claimed, r.done, r.stopped) == (6, 6, "drained")
    claims = []
    for t in transactions(sent):
        found = [
            q for q in t if q.startswith("SELECT job.id, job.attempt, job.config") and "LIMIT" in q
        ]
        if found:
            # Only a build claim's SELECT names search_build IS NOT NULL.
            claims.append(
                "build" if any("search_build IS NOT NULL" in q for q in found) else len(found)
            )
    assert claims == [1, 1, 1, "build"], claims  # claims 4, 2 and 0 runs; then builds


def test_a_worker_stopping_after_max_jobs_records_its_last_job_before_it_exits(lite):
    sd = seed(lite, configs=3, solvers=["NoopDirect"])
    r = run(lite, sd.session, "compile", max_jobs=2)
    assert (r.claimed, r.done, r.stopped) == (2, 2, "max_jobs")
    assert states(lite, sd.session) == {S.COMPILED: 2, S.NEW: 1}


def test_burst_workers_drain_a_session_through_both_phases(lite):
    sd = seed(lite, configs=10, solvers=ALL_NOOP_SOLVERS)
    c = run(lite, sd.session, "compile", claim_batch=7)
    assert (c.claimed, c.done, c.not_applicable, c.retried, c.lost, c.stopped) == (
        40,
        30,
        10,
        0,
        0,
        "drained",
    )
    e = run(lite, sd.session, "eval", claim_batch=7)
    assert (e.claimed, e.done, e.stopped) == (30, 30, "drained")
    assert states(lite, sd.session) == {S.EVALUATED: 30, S.NOT_APPLICABLE: 10}
    assert count(lite, FindDb) == 30 and count(lite, PerfDb) == 10 and count(lite, JobKernel) == 30
    with lite.session() as s:
        attempts = set(s.execute(select(Job.attempt).where(Job.state == S.EVALUATED)).scalars())
    assert attempts == {2}


def test_an_unknown_session_is_an_error(lite):
    with pytest.raises(NotFoundError, match="session 42 does not exist"):
        run(lite, 42, "compile")


def test_max_jobs_stops_after_claiming_that_many(lite):
    sd = seed(lite, configs=5, solvers=["NoopDirect"])
    r = run(lite, sd.session, "compile", claim_batch=3, max_jobs=4)
    assert (r.claimed, r.done, r.stopped) == (4, 4, "max_jobs")
    assert states(lite, sd.session) == {S.COMPILED: 4, S.NEW: 1}


def test_failures_are_retried_then_errored(lite):
    sd = seed(lite, configs=2, solvers=["NoopDirect"])
    r = run(lite, sd.session, "compile", backend=NoopBackend(fail="cc: error"), max_retries=2)
    assert (r.claimed, r.retried, r.errored) == (6, 4, 2)
    row = job_row(lite, sd.jobs[0])
    assert (row.state, row.attempt, row.reason) == (
        S.ERRORED,
        3,
        "cc: error (gave up after 3 tries)",
    )


def test_a_crashing_backend_fails_the_job_not_the_worker(lite):
    sd = seed(lite, configs=1, solvers=["NoopDirect"])
    r = run(lite, sd.session, "compile", backend=NoopBackend(crash=True), max_retries=0)
    assert r.errored == 1
    assert job_row(lite, sd.jobs[0]).reason == (
        f"RuntimeError: noop backend crashed on job {sd.jobs[0]} (gave up after 1 try)"
    )


class StopAfterFirst(Hook):
    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop

    def after_job(self, work, outcome, seconds):
        self.stop.set()


def test_a_stop_request_records_the_current_job_and_hands_back_the_rest(lite):
    sd = seed(lite, configs=5, solvers=["NoopDirect"])
    stop = threading.Event()
    r = run(lite, sd.session, "compile", claim_batch=5, stop=stop, hooks=[StopAfterFirst(stop)])
    assert (r.claimed, r.done, r.released, r.stopped) == (5, 1, 4, "signal")
    assert states(lite, sd.session) == {S.COMPILED: 1, S.NEW: 4}
    with lite.session() as s:
        rows = s.execute(select(Job.retries, Job.lease_owner).where(Job.state == S.NEW)).all()
    assert set(rows) == {(0, None)}


class LoseLeaseOnce(Hook):
    """Plays a reaper that finds the worker's lease expired while the backend runs."""

    def __init__(self, db) -> None:
        self.db, self.done = db, False

    def before_job(self, work):
        if not self.done:
            self.done = True
            expire_leases(self.db, [work.job_id])
            reap_expired(self.db)


def test_a_lease_lost_mid_job_drops_the_result_and_the_job_is_redone(lite):
    sd = seed(lite, configs=1, solvers=["NoopDirect"])
    r = run(lite, sd.session, "compile", hooks=[LoseLeaseOnce(lite)])
    assert (r.claimed, r.lost, r.done, r.reaped) == (2, 1, 1, 0)
    row = job_row(lite, sd.jobs[0])
    assert (row.state, row.attempt, row.retries) == (S.COMPILED, 2, 0)
    assert count(lite, JobKernel) == 1


class TimePasses(Hook):
    """The job takes ``seconds`` on the fake database clock, in steps of ``step``. After each
    step the worker's heartbeat (when it beats) renews the lease, then another worker's
    reaper runs: no real waiting for a lease to expire."""

    def __init__(self, db, clock, *, seconds, step, lease, beats) -> None:
        self.db, self.clock, self.seconds, self.step = db, clock, seconds, step
        self.lease, self.beats = lease, beats
        self.reaped: list[int] = []

    def before_job(self, work):
        passed = 0.0
        while passed < self.seconds:
            self.clock.advance(self.step)
            passed += self.step
            if self.beats:
                renewed = database_time(self.clock, self.lease)
                wait_until(
                    lambda want=renewed: job_row(self.db, work.job_id).lease_expires == want,
                    "a heartbeat after the clock moved on",
                )
            self.reaped += reap_expired(self.db).returned


def test_heartbeats_keep_a_job_longer_than_its_lease(lite):
    clock = FakeClock()
    db = on_fake_clock(lite, clock)
    sd = seed(db, configs=1, solvers=["NoopDirect"])
    passes = TimePasses(db, clock, seconds=3.0, step=0.5, lease=2, beats=True)
    r = run(db, sd.session, "compile", lease_seconds=2, heartbeat_interval=0.01, hooks=[passes])
    db.dispose()
    assert clock.now == 3.0 and passes.reaped == []  # 3 s on a 2 s lease, never reaped
    assert (r.done, r.lost) == (1, 0)
    row = job_row(lite, sd.jobs[0])
    assert (row.state, row.attempt, row.retries) == (S.COMPILED, 1, 0)


def test_without_heartbeats_the_reaper_takes_the_job_back(lite):
    clock = FakeClock()
    db = on_fake_clock(lite, clock)
    sd = seed(db, configs=1, solvers=["NoopDirect"])
    passes = TimePasses(db, clock, seconds=3.0, step=0.5, lease=1, beats=False)
    r = run(
        db,
        sd.session,
        "compile",
        lease_seconds=1,
        heartbeat_interval=60,
        hooks=[passes],
        max_jobs=1,
    )
    db.dispose()
    assert passes.reaped == [sd.jobs[0]]  # once the lease had run out
    assert (r.done, r.lost) == (0, 1)
    row = job_row(lite, sd.jobs[0])
    assert (row.state, row.attempt, row.retries) == (S.NEW, 1, 1)


def test_a_time_limit_fails_the_job(lite):
    sd = seed(lite, configs=1, solvers=["NoopDirect"])
    r = run(
        lite,
        sd.session,
        "compile",
        backend=NoopBackend(sleep_s=30),
        max_retries=0,
        time_limit=0.2,
    )
    assert r.errored == 1
    reason = job_row(lite, sd.jobs[0]).reason
    assert reason == "TimeLimitExceeded: time limit of 0.2 s exceeded (gave up after 1 try)"


def test_concurrent_worker_processes_on_sqlite_do_every_job_once(lite, sqlite_url, tmp_path):
    sd = seed(lite, configs=100, solvers=["NoopDirect", "NoopTunable"])
    for phase in ("compile", "eval"):
        lite.dispose()
        procs = start_workers(4, sqlite_url, sd.session, phase, tmp_path, claim_batch=5)
        assert join_all(procs, 120) == [0, 0, 0, 0]
    per_job = Counter((phase, job) for phase, job, _ in calls(tmp_path))
    assert len(per_job) == 400 and set(per_job.values()) == {1}
    assert states(lite, sd.session) == {S.EVALUATED: 200}
    assert sum(r["done"] for r in reports(tmp_path)) == 400
    assert count(lite, FindDb) == 200


# --- signals, in a real worker process ------------------------------------------------------------


def start_cli_worker(url, session, *args, stderr=subprocess.PIPE):
    env = {**os.environ, "TUNA_DB_URL": url}
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tuna.cli import main; main()",
            "worker",
            "--session",
            str(session),
            "--phase",
            "compile",
            *args,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


def test_sigterm_finishes_the_current_job_hands_back_the_rest_and_exits_0(
    lite, sqlite_url, tmp_path
):
    log = tmp_path / "calls.log"
    env = {"NOOP_SLEEP_S": 1.0, "NOOP_LOG": str(log)}
    sd = seed(lite, configs=2, solvers=["NoopDirect"], environment=env)
    proc = start_cli_worker(sqlite_url, sd.session, "--claim-batch", "2")
    wait_until(log.exists, "the backend to start the first job")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stopped: signal; 2 claimed, 1 done, 0 retried" in out and "1 released" in out
    first, second = (job_row(lite, j) for j in sd.jobs)
    assert (first.state, first.attempt, first.lease_owner) == (S.COMPILED, 1, None)
    assert (second.state, second.attempt, second.retries, second.lease_owner) == (S.NEW, 1, 0, None)
    assert len(log.read_text().splitlines()) == 1


def test_a_second_ctrl_c_aborts_the_job_and_hands_it_back(lite, sqlite_url, tmp_path):
    log = tmp_path / "calls.log"
    sd = seed(
        lite,
        configs=1,
        solvers=["NoopDirect"],
        environment={"NOOP_SLEEP_S": 60, "NOOP_LOG": str(log)},
    )
    err_log = tmp_path / "worker.err"
    with err_log.open("w") as err_file:
        proc = start_cli_worker(sqlite_url, sd.session, stderr=err_file)
        wait_until(log.exists, "the backend to start the job")
        proc.send_signal(signal.SIGINT)
        wait_until(
            lambda: "SIGINT, stopping after the current job" in err_log.read_text(),
            "the worker to take the first Ctrl-C",
        )
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, err_log.read_text()
    assert "stopped: aborted; 1 claimed, 0 done" in out
    row = job_row(lite, sd.jobs[0])
    assert (row.state, row.retries, row.lease_owner) == (S.NEW, 0, None)


def test_a_database_outage_is_ridden_out_and_no_job_is_lost(lite, monkeypatch):
    """Claims and records that fail with "server has gone away" are repeated, not fatal."""
    import pymysql

    from tuna.errors import DatabaseError
    from tuna.jobs import recording

    sd = seed(lite, configs=4, solvers=["NoopDirect"])
    # the first claim (record_and_claim without outcomes claims through recording.claim_jobs),
    # and records (each in the next claim's transaction, outcomes given)
    failures = {"claim_jobs": 2, "record_and_claim": 2}

    def flaky(name):
        real = getattr(recording, name)

        def call(*a, **kw):
            recording = name != "record_and_claim" or a[2]
            if failures[name] and recording:
                failures[name] -= 1
                orig = pymysql.err.OperationalError(2006, "MySQL server has gone away")
                raise DatabaseError("db: failed") from orig
            return real(*a, **kw)

        return call

    for name in failures:
        monkeypatch.setattr(recording, name, flaky(name))
    monkeypatch.setattr("tuna.db.retry.log.warning", lambda *a, **k: None)
    r = run(lite, sd.session, "compile")
    assert failures == {"claim_jobs": 0, "record_and_claim": 0}
    assert (r.claimed, r.done, r.lost, r.stopped) == (4, 4, 0, "drained")
    assert states(lite, sd.session) == {S.COMPILED: 4}


def test_an_evaluation_worker_records_what_it_measured_on_its_machine_s_platform(db):
    from sqlalchemy import update

    from tuna.db.models import Measurement, TuningSession
    from tuna.fleet.machines import add_machine, get_machine
    from tuna.platforms import platform_info

    sd = seed(db, configs=3, solvers=["NoopDirect", "NoopTunable"])
    with db.session() as s:
        s.execute(
            update(TuningSession)
            .where(TuningSession.id == sd.session)
            .values(user_platform={"note": "retune"})
        )
    m = add_machine(db, "node1", user_platform={"cooling": "liquid"})
    assert run(db, sd.session, "compile", machine=m.id).done == 6
    assert count(db, Measurement) == 0  # compiling measures nothing
    assert run(db, sd.session, "eval", machine=m.id).done == 6
    with db.session() as s:
        rows = s.execute(
            select(Measurement.job, Measurement.platform, Measurement.machine, Measurement.valid)
        ).all()
        jobs = set(s.scalars(select(FindDb.job)))
    platform = get_machine(db, m.id).platform
    assert platform is not None
    assert sorted(r.job for r in rows) == sorted(jobs)
    assert {(r.platform, r.machine, r.valid) for r in rows} == {(platform, m.id, True)}
    info = platform_info(db, platform)
    assert info is not None
    assert info["user"] == {"cooling": "liquid", "note": "retune"}
    assert info["cpu"]["cores"] == os.cpu_count()
