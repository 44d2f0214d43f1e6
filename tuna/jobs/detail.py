"""One job in full, and the jobs behind a failure reason: the read side of a job's page.

Read-only, by primary key or through an index: a job by id; its measurements and the
result rows it wrote by (session, config, solver), the prefix of their indexes, then by
``job``; failed jobs through ``ix_job_failure`` (session, state, reason: migration 0022) or,
for any reason, ``ix_job_claim`` (session, state), keyset-paged by id.

The job table keeps no event log: a job's history is what its row holds — created, the
start and end of each phase, the attempt (one per claim), the retries (a failure or a
lost lease, each sent it back), and its last reason (``lease expired ...`` when the
reaper took it back).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import Select, select

from tuna.db import Database
from tuna.db.enums import JobState, JobStep
from tuna.db.models import (
    ConvConfig,
    FindDb,
    Job,
    JobKernel,
    KernelCache,
    Machine,
    Measurement,
    PerfDb,
    Solver,
)
from tuna.errors import NotFoundError

LOG_LINES = 40
"""Lines of a job's result and reason text shown at most (the last ones)."""


@dataclass(frozen=True)
class JobMeasurement:
    params: str
    time_ms: float | None
    valid: bool
    reason: str | None
    strategy: str | None
    taken: dt.datetime


@dataclass(frozen=True)
class JobResult:
    """A perf-db or find-db row the job wrote."""

    table: str
    params: str | None
    time_ms: float | None
    workspace: int | None
    algorithm: str | None


@dataclass(frozen=True)
class JobDetail:
    id: int
    session: int
    config: int | None
    fdb_key: str | None
    driver: str | None
    solver: str | None
    step: str
    state: JobState
    priority: int
    attempt: int
    retries: int
    lease_owner: str | None
    lease_expires: dt.datetime | None
    machine: str | None
    gpu: int | None
    result: str | None
    reason: str | None
    created: dt.datetime
    compile_start: dt.datetime | None
    compile_end: dt.datetime | None
    eval_start: dt.datetime | None
    eval_end: dt.datetime | None
    measurements: list[JobMeasurement]
    results: list[JobResult]
    kernels: list[str]

    @property
    def lease_lost(self) -> bool:
        return (self.reason or "").startswith("lease expired")

    @property
    def history(self) -> list[tuple[str, dt.datetime]]:
        """(what, when) from the row's timestamps, in order."""
        marks = [("created", self.created), ("compile started", self.compile_start),
                 ("compiled", self.compile_end), ("evaluation started", self.eval_start),
                 ("evaluated", self.eval_end)]  # fmt: skip
        return sorted(((w, t) for w, t in marks if t is not None), key=lambda m: m[1])

    @property
    def compile_s(self) -> float | None:
        return _span(self.compile_start, self.compile_end)

    @property
    def eval_s(self) -> float | None:
        return _span(self.eval_start, self.eval_end)


@dataclass(frozen=True)
class FailedJob:
    id: int
    config: int | None
    fdb_key: str | None
    solver: str | None
    machine: str | None
    attempt: int
    retries: int
    reason: str | None


def _span(a: dt.datetime | None, b: dt.datetime | None) -> float | None:
    return (b - a).total_seconds() if a is not None and b is not None and b >= a else None


def tail(text: str | None, lines: int = LOG_LINES) -> str | None:
    if text is None:
        return None
    kept = text.splitlines()[-lines:]
    return "\n".join(kept)


def job_detail(db: Database, job_id: int) -> JobDetail:
    """Job ``job_id`` with its config, solver, machine, measurements and result rows."""
    q = (
        select(Job, ConvConfig.fdb_key, ConvConfig.driver, Solver.name, Machine.hostname)
        .outerjoin(ConvConfig, ConvConfig.id == Job.config)
        .outerjoin(Solver, Solver.id == Job.solver)
        .outerjoin(Machine, Machine.id == Job.machine)
        .where(Job.id == job_id)
    )
    with db.session() as s:
        row = s.execute(q).first()
        if row is None:
            raise NotFoundError(f"job {job_id} does not exist")
        job, key, driver, solver, host = row
        same = (job.session, job.config, job.solver)
        measured = [
            JobMeasurement(m.params, m.time_ms, m.valid, m.reason, m.strategy, m.taken)
            for m in s.execute(
                select(Measurement)
                .where(Measurement.session == same[0], Measurement.config == same[1],
                       Measurement.solver == same[2], Measurement.job == job_id)
                .order_by(Measurement.id).limit(200)
            ).scalars()
        ]  # fmt: skip
        results = [
            JobResult("find_db", f.params, f.time_ms, f.workspace, f.algorithm)
            for f in s.execute(
                select(FindDb).where(FindDb.session == same[0], FindDb.config == same[1],
                                     FindDb.solver == same[2], FindDb.job == job_id)
            ).scalars()
        ] + [
            JobResult("perf_db", p.params, None, None, None)
            for p in s.execute(
                select(PerfDb).where(PerfDb.session == same[0], PerfDb.config == same[1],
                                     PerfDb.solver == same[2], PerfDb.job == job_id)
            ).scalars()
        ]  # fmt: skip
        kernels = list(
            s.execute(
                select(KernelCache.kernel_name)
                .join(JobKernel, JobKernel.kernel == KernelCache.id)
                .where(JobKernel.job == job_id)
                .order_by(KernelCache.kernel_name)
                .limit(50)
            ).scalars()
        )
        return JobDetail(
            job.id, job.session, job.config, key, driver, solver, JobStep(job.step).value,
            JobState(job.state), job.priority, job.attempt, job.retries, job.lease_owner,
            job.lease_expires, host, job.gpu, tail(job.result), tail(job.reason), job.created,
            job.compile_start, job.compile_end, job.eval_start, job.eval_end, measured,
            results, kernels,
        )  # fmt: skip


def failed_jobs(
    db: Database,
    session_id: int,
    state: JobState,
    reason: str | None,
    *,
    after: int = 0,
    limit: int = 100,
) -> list[FailedJob]:
    """Session ``session_id``'s jobs in ``state`` whose reason is ``reason`` (None: any;
    "": none), by id after ``after``."""
    with db.transaction() as conn:
        return [FailedJob(*r) for r in conn.execute(failed_jobs_query(
            session_id, state, reason, after=after, limit=limit))]  # fmt: skip


FailedRows = Select[int, int | None, str, str, str, int, int, str | None]


def failed_jobs_query(
    session_id: int, state: JobState, reason: str | None, *, after: int = 0, limit: int = 100
) -> FailedRows:
    """:func:`failed_jobs`'s statement: with a reason, a range of ``ix_job_failure``."""
    q: FailedRows = (
        select(Job.id, Job.config, ConvConfig.fdb_key, Solver.name, Machine.hostname,
               Job.attempt, Job.retries, Job.reason)
        .outerjoin(ConvConfig, ConvConfig.id == Job.config)
        .outerjoin(Solver, Solver.id == Job.solver)
        .outerjoin(Machine, Machine.id == Job.machine)
        .where(Job.session == session_id, Job.state == state, Job.id > after)
        .order_by(Job.id)
        .limit(limit)
    )  # fmt: skip
    if reason is not None:
        q = q.where(Job.reason == reason) if reason else q.where(Job.reason.is_(None))
    return q
