"""The MySQL tier: many worker processes racing for the same rows on a real MariaDB."""

from __future__ import annotations

import os
import signal
from collections import Counter

from sqlalchemy import func, select

from tests.support.seed import open_test_db, seed
from tests.support.wait import wait_until
from tests.worker.procs import calls, join_all, reports, start_workers
from tuna.db.enums import JobState
from tuna.db.models import FindDb, Job, JobKernel, PerfDb
from tuna.worker import run_worker

S = JobState


def scalar(db, q):
    with db.session() as s:
        return s.execute(q).scalar_one()


def by_state(db, session):
    with db.session() as s:
        q = select(Job.state, func.count()).where(Job.session == session).group_by(Job.state)
        return dict(s.execute(q).all())


def test_sixteen_worker_processes_do_every_job_exactly_once(mysql_url, tmp_path):
    db = open_test_db(mysql_url)
    # 4,000 jobs: each of the 16 workers claims about ten batches of 25 per phase, so claims
    # race all along (20,000 jobs in batches of 50 raced no harder and took five times as
    # long; 8,000 in batches of 50 made as many claims as this, with twice the work each).
    configs = 2_000
    jobs = 2 * configs
    sd = seed(db, configs=configs, solvers=["NoopDirect", "NoopTunable"])
    assert len(sd.jobs) == jobs
    db.dispose()
    for phase in ("compile", "eval"):
        procs = start_workers(
            16, mysql_url, sd.session, phase, tmp_path, claim_batch=25, lease_seconds=60
        )
        assert join_all(procs, 300) == [0] * 16, "a worker failed (a deadlock surfaced?)"
    per_job = Counter((phase, job) for phase, job, _attempt in calls(tmp_path))
    assert len(per_job) == 2 * jobs
    assert set(per_job.values()) == {1}, "some job phase ran more than once"
    done = reports(tmp_path)
    assert sum(r["done"] for r in done) == 2 * jobs
    assert sum(r["lost"] + r["retried"] + r["errored"] for r in done) == 0
    assert by_state(db, sd.session) == {S.EVALUATED: jobs}
    # One find row per job, one perf row per tunable job, each naming its job.
    assert scalar(db, select(func.count(func.distinct(FindDb.job)))) == jobs
    assert scalar(db, select(func.count()).select_from(FindDb)) == jobs
    assert scalar(db, select(func.count()).select_from(PerfDb)) == configs
    assert scalar(db, select(func.count()).select_from(JobKernel)) == jobs
    assert scalar(db, select(func.min(Job.attempt))) == 2
    assert scalar(db, select(func.max(Job.attempt))) == 2
    db.dispose()


def test_workers_killed_mid_job_leave_leases_a_new_worker_recovers(mysql_url, tmp_path):
    db = open_test_db(mysql_url)
    sd = seed(db, configs=30, solvers=["NoopDirect", "NoopTunable"])
    db.dispose()
    log = tmp_path / "calls.log"
    procs = start_workers(
        4,
        mysql_url,
        sd.session,
        "compile",
        tmp_path,
        claim_batch=3,
        sleep_s=30,
        lease_seconds=1,
        heartbeat_interval=0.2,
    )
    wait_until(
        lambda: log.exists() and len(log.read_text().splitlines()) >= 4,
        "the four workers to start a job each",
    )
    for p in procs:
        os.kill(p.pid, signal.SIGKILL)
    assert join_all(procs, 30) == [-signal.SIGKILL] * 4
    with db.session() as s:
        killed = set(s.execute(select(Job.id).where(Job.state == S.COMPILE_START)).scalars())
    assert len(killed) == 12  # 4 workers x a batch of 3: leases left behind
    assert {job for _phase, job, _attempt in calls(tmp_path)} <= killed

    # A new worker with short leases reaps the expired leases and finishes everything.
    done = {}
    for phase in ("compile", "eval"):
        done[phase] = run_worker(
            db,
            sd.session,
            phase,
            burst=True,
            claim_batch=10,
            lease_seconds=1,
            reap_interval=0.2,
            idle_sleep=0.05,
            handle_signals=False,
        )
    assert (done["compile"].reaped, done["compile"].done, done["eval"].done) == (12, 60, 60)
    assert by_state(db, sd.session) == {S.EVALUATED: 60}
    with db.session() as s:
        rows = s.execute(select(Job.id, Job.attempt, Job.retries, Job.reason)).all()
    for job_id, attempt, retries, reason in rows:
        if job_id in killed:  # claimed by a killed worker: reaped once, claimed again
            assert (attempt, retries, reason) == (3, 0, None)
        else:
            assert (attempt, retries) == (2, 0)
    db.dispose()
