"""What the fleet is doing, read-only: progress per session, machines, failures, over time.

The read side behind ``tuna report`` and ``tuna dashboard``. Every query here is an
aggregate or a bounded list that goes through an index (``ix_job_claim`` for a session's
jobs by state, ``ix_job_lease`` for what is in flight, ``ix_job_session_compile_end`` /
``ix_job_session_eval_end`` for recent completions), so it stays cheap on a job table of
millions of rows; ``bench/dashboard.py`` measures it. Nothing here writes.

Counts by state come from :func:`tuna.jobs.status.job_counts` (the queue's read side);
this module adds rates, machines and history.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Float, func, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from tuna.backends.base import SessionInfo
from tuna.db import Database
from tuna.db.clock import db_now
from tuna.db.enums import JobState
from tuna.db.models import Job, Machine
from tuna.jobs.status import JobCounts, job_counts, per_second, seconds_left

S = JobState
RUNNING = (S.COMPILE_START, S.EVAL_START)
TERMINAL = (S.EVALUATED, S.ERRORED, S.NOT_APPLICABLE)
MIN_SPAN_S = 10.0
"""A rate is measured over at least this long (a first completion alone is no rate)."""
LOCAL_WORKERS = "local workers"
"""Where a job ran that names no machine: go_fish's local worker processes."""
NICE_BUCKETS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200,
                  86400)  # fmt: skip
"""Bucket sizes of a jobs-over-time series (seconds), the smallest that fits is taken."""
LEASE_EXPIRED_PREFIX = "lease expired"
"""How the reaper starts the reason of a job whose lease it took back."""


class epoch_seconds(FunctionElement[float]):  # noqa: N801 - reads as a SQL function
    """A timestamp column as seconds since the Unix epoch (UTC on both dialects)."""

    type = Float()
    name = "epoch_seconds"
    inherit_cache = True


@compiles(epoch_seconds, "mysql")
@compiles(epoch_seconds, "mariadb")
def _mysql_epoch(element: epoch_seconds, compiler: Any, **kw: Any) -> str:
    # TIMESTAMPDIFF is independent of the connection's time zone, UNIX_TIMESTAMP is not.
    arg = compiler.process(element.clauses, **kw)
    return f"TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {arg}) / 1000000.0"


@compiles(epoch_seconds, "sqlite")
def _sqlite_epoch(element: epoch_seconds, compiler: Any, **kw: Any) -> str:
    return f"((julianday({compiler.process(element.clauses, **kw)}) - 2440587.5) * 86400.0)"


@dataclass(frozen=True)
class Progress:
    """A session's jobs by state and how fast phases finish.

    ``recent`` counts the phases (compiles and evaluations) that finished in the last
    ``window_s`` seconds: since the first of them, when that is later than the window's
    start (so a run that just started is measured over its own time). The ETA divides
    the phases still to run by that rate.
    """

    session: SessionInfo
    by_state: dict[JobState, int]
    expired: int
    recent: int
    window_s: float

    @property
    def total(self) -> int:
        return sum(self.by_state.values())

    @property
    def finished(self) -> int:
        return sum(self.by_state.get(st, 0) for st in TERMINAL)

    @property
    def in_flight(self) -> int:
        return sum(self.by_state.get(st, 0) for st in RUNNING)

    @property
    def errored(self) -> int:
        return self.by_state.get(S.ERRORED, 0)

    @property
    def phases_left(self) -> int:
        b = self.by_state
        return 2 * (b.get(S.NEW, 0) + b.get(S.COMPILE_START, 0)) + (
            b.get(S.COMPILED, 0) + b.get(S.EVAL_START, 0)
        )

    @property
    def working(self) -> bool:
        """Whether any job is in flight under a live lease: a rate means something only then
        (with nothing running, the last window's completions gave 46,628 phases/min)."""
        return self.in_flight - self.expired > 0

    @property
    def rate_per_min(self) -> float:
        return 60.0 * per_second(self.recent, self.window_s) if self.working else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds until every phase has run at the recent rate; None when nothing moves
        (no job in flight, or none finished in the window)."""
        if self.phases_left == 0:
            return 0.0
        if not self.working:
            return None
        return seconds_left(self.phases_left, per_second(self.recent, self.window_s))


@dataclass(frozen=True)
class MachineActivity:
    """A machine and what it holds now. Only what is safe to show: no key, no settings."""

    id: int
    hostname: str
    arch: str | None
    num_cu: int | None
    available: bool
    last_seen: dt.datetime | None
    leases: int
    expired: int


@dataclass(frozen=True)
class InFlight:
    job: int
    session: int
    state: JobState
    machine: int | None
    lease_owner: str | None
    lease_expires: dt.datetime | None


@dataclass(frozen=True)
class Bucketed:
    """Counts per (key, time bucket); ``start`` is the first bucket's epoch second."""

    start: float
    bucket_s: float
    counts: dict[str, list[int]]


def database_time(db: Database) -> dt.datetime:
    """The database's clock (the one every timestamp in the job table comes from)."""
    with db.transaction() as conn:
        now = conn.execute(select(db_now())).scalar_one()
    if isinstance(now, str):  # SQLite returns the text it stores
        now = dt.datetime.fromisoformat(now)
    return now


def progress(
    db: Database,
    sessions: Sequence[SessionInfo],
    *,
    window_s: float = 300.0,
    counts: Callable[[int], JobCounts] | None = None,
) -> list[Progress]:
    """Jobs by state, expired leases and recent completions of each of ``sessions``.

    Per session: its jobs by state (``counts``, default :func:`tuna.jobs.status.job_counts`;
    the dashboard passes a cached one) and two range counts of recent phase ends.
    """
    count = counts or (lambda sid: job_counts(db, sid, top_reasons=0))
    out = []
    for summary in sessions:
        jobs = count(summary.id)
        recent, span = 0, 0.0
        with db.transaction() as conn:
            now = epoch_seconds(db_now())
            for column in (Job.compile_end, Job.eval_end):
                n, first = conn.execute(
                    select(func.count(), now - func.min(epoch_seconds(column))).where(
                        Job.session == summary.id, column >= db_now(-window_s)
                    )
                ).one()
                recent += int(n)
                if first is not None:
                    span = max(span, float(first))
        # A run that started a minute ago is measured over that minute, not the window.
        span = min(max(span, MIN_SPAN_S), window_s)
        out.append(Progress(summary, jobs.by_state, jobs.expired, recent, span))
    return out


def machines(db: Database) -> list[MachineActivity]:
    """Every machine with the leases its jobs hold now (live and expired, not yet reaped)."""
    with db.transaction() as conn:
        held: dict[int | None, list[int]] = {}
        for m, live, n in conn.execute(
            select(Job.machine, Job.lease_expires >= db_now(), func.count())
            .where(Job.state.in_(RUNNING))
            .group_by(Job.machine, Job.lease_expires >= db_now())
        ):
            counts = held.setdefault(m, [0, 0])
            counts[0 if live else 1] += int(n)
        rows = conn.execute(
            select(
                Machine.id,
                Machine.hostname,
                Machine.arch,
                Machine.num_cu,
                Machine.available,
                Machine.last_seen,
            ).order_by(Machine.id)
        ).all()
    return [
        MachineActivity(
            r.id,
            r.hostname,
            r.arch,
            r.num_cu,
            bool(r.available),
            r.last_seen,
            held.get(r.id, [0, 0])[0],
            held.get(r.id, [0, 0])[1],
        )
        for r in rows
    ]


def in_flight(
    db: Database, *, session_id: int | None = None, machine_id: int | None = None, limit: int = 200
) -> list[InFlight]:
    """Jobs being compiled or evaluated now, soonest lease expiry first (``ix_job_lease``)."""
    q = (
        select(Job.id, Job.session, Job.state, Job.machine, Job.lease_owner, Job.lease_expires)
        .where(Job.state.in_(RUNNING))
        .order_by(Job.lease_expires)
        .limit(limit)
    )
    if session_id is not None:
        q = q.where(Job.session == session_id)
    if machine_id is not None:
        q = q.where(Job.machine == machine_id)
    with db.transaction() as conn:
        return [
            InFlight(r.id, r.session, JobState(r.state), r.machine, r.lease_owner, r.lease_expires)
            for r in conn.execute(q)
        ]


def failure_reasons(
    db: Database, session_ids: Sequence[int], *, limit: int = 20
) -> list[tuple[JobState, str, int]]:
    """(state, reason, jobs) of errored and not-applicable jobs of all ``session_ids``,
    most frequent first (through ``ix_job_claim``: only those states' rows are read)."""
    q = (
        select(Job.state, Job.reason, func.count().label("n"))
        .where(Job.session.in_(session_ids), Job.state.in_([S.ERRORED, S.NOT_APPLICABLE]))
        .group_by(Job.state, Job.reason)
        .order_by(func.count().desc(), Job.state, Job.reason)
        .limit(limit)
    )
    with db.transaction() as conn:
        return [
            (JobState(st), reason or "(no reason)", int(n)) for st, reason, n in conn.execute(q)
        ]


def lease_losses(db: Database, session_ids: Sequence[int]) -> dict[str, int]:
    """Jobs whose last failure was a lease the reaper took back, per machine name.

    A job keeps only its latest reason, so a lease lost and then completed on a second
    try is not counted; leases expired now and not yet reaped are (``expired``).
    """
    names = _machine_names(db)
    q_lost = (
        select(Job.machine, func.count())
        .where(Job.session.in_(session_ids), Job.reason.startswith(LEASE_EXPIRED_PREFIX))
        .group_by(Job.machine)
    )
    q_expired = (
        select(Job.machine, func.count())
        .where(Job.session.in_(session_ids), Job.state.in_(RUNNING), Job.lease_expires < db_now())
        .group_by(Job.machine)
    )
    out: dict[str, int] = {}
    with db.transaction() as conn:
        for q in (q_lost, q_expired):
            for m, n in conn.execute(q):
                name = names.get(m, LOCAL_WORKERS)
                out[name] = out.get(name, 0) + int(n)
    return out


def jobs_per_machine_over_time(
    db: Database, session_ids: Sequence[int], *, buckets: int = 60
) -> Bucketed:
    """Jobs per machine and time slice, by when their latest phase ended.

    A job records one machine, the one of its latest phase (a claim sets it), so a job
    is counted once, where and when that phase ended; a job no phase finished is not.
    """
    names = _machine_names(db)
    ended = func.coalesce(Job.eval_end, Job.compile_end)
    where = (Job.session.in_(session_ids), ended.is_not(None))
    with db.transaction() as conn:
        lo, hi = conn.execute(
            select(func.min(epoch_seconds(ended)), func.max(epoch_seconds(ended))).where(*where)
        ).one()
        if lo is None:
            return Bucketed(0.0, 0.0, {})
        start = float(lo)
        span = float(hi) - start
        # A round bucket with at most ``buckets`` of them over the span, and no bucket past
        # its end: one-second buckets over 2 s padded to 60 drew a 0/60/120 sawtooth.
        bucket_s = next((float(b) for b in NICE_BUCKETS_S if span / b <= buckets),
                        float(math.ceil(span / buckets / 86400) * 86400))  # fmt: skip
        n_buckets = int(span // bucket_s) + 1
        slot = func.floor((epoch_seconds(ended) - start) / bucket_s)
        counts: dict[str, list[int]] = {}
        for m, b, n in conn.execute(
            select(Job.machine, slot, func.count()).where(*where).group_by(Job.machine, slot)
        ):
            series = counts.setdefault(names.get(m, LOCAL_WORKERS), [0] * n_buckets)
            series[min(int(b), n_buckets - 1)] += int(n)
    return Bucketed(start, bucket_s, counts)


def recent_throughput(
    db: Database, session_id: int, *, window_s: float = 600.0, buckets: int = 30
) -> Bucketed:
    """Phases (compiles and evaluations) finished per machine and time slice over the last
    ``window_s`` seconds, the last slice ending now: a live session's throughput.

    Two range reads of the session's recent phase ends (``ix_job_session_compile_end``,
    ``ix_job_session_eval_end``), as cheap as the rate: only the window's rows are read.
    """
    names = _machine_names(db)
    bucket_s = window_s / buckets
    counts: dict[str, list[int]] = {}
    with db.transaction() as conn:
        start = float(conn.execute(select(epoch_seconds(db_now(-window_s)))).scalar_one())
        for column in (Job.compile_end, Job.eval_end):
            slot = func.floor((epoch_seconds(column) - start) / bucket_s)
            for m, b, n in conn.execute(
                select(Job.machine, slot, func.count())
                .where(Job.session == session_id, column >= db_now(-window_s))
                .group_by(Job.machine, slot)
            ):
                series = counts.setdefault(names.get(m, LOCAL_WORKERS), [0] * buckets)
                series[max(0, min(int(b), buckets - 1))] += int(n)
    return Bucketed(start, bucket_s, counts)


def _machine_names(db: Database) -> dict[int | None, str]:
    with db.transaction() as conn:
        return {i: h for i, h in conn.execute(select(Machine.id, Machine.hostname))}
