"""The read side of the job queue: how many jobs of a session are where, and why they failed.

Reads only; every write of ``job.state`` is :mod:`tuna.jobs.states`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import func, or_, select

from tuna.db import Database, tables
from tuna.db.clock import db_now
from tuna.db.enums import JobState, JobStep
from tuna.sessions import session_row

# The tables' columns, named as the ORM classes: statements here are Core (tuna.db.tables),
# so a worker never imports the ORM.
Job = tables.job.c
Search = tables.search.c

S = JobState


@dataclass(frozen=True)
class JobCounts:
    """A session's jobs by state, in-flight jobs whose lease expired, and why jobs failed.

    ``reasons`` holds (state, reason, jobs) for errored and not-applicable jobs, most
    frequent first.
    """

    session: int
    by_state: dict[JobState, int]
    expired: int
    reasons: list[tuple[JobState, str, int]]

    @property
    def total(self) -> int:
        return sum(self.by_state.values())


def count_jobs(
    db: Database,
    session_id: int,
    states: Iterable[JobState],
    steps: Iterable[JobStep] | None = None,
) -> dict[JobState, int]:
    """How many jobs of the session are in each of ``states`` (through the claim index);
    with ``steps``, only jobs of those steps and a search's (its builds, a strategy's rounds),
    which any worker of their phase takes."""
    wanted = list(states)
    query = select(Job.state, func.count()).where(Job.session == session_id, Job.state.in_(wanted))
    if steps is not None:
        query = query.where(or_(Job.step.in_(list(steps)), Job.search_build.is_not(None)))
    with db.transaction() as conn:
        rows = conn.execute(query.group_by(Job.state)).all()
    found = {JobState(r[0]): int(r[1]) for r in rows}
    return {st: found.get(st, 0) for st in wanted}


@dataclass(frozen=True)
class SearchWaiting:
    """Search work of a session not (yet) for an evaluate worker: builds to do, and active
    searches whose driver may propose more."""

    builds: int
    active_searches: int


def search_work_waiting(db: Database, session_id: int) -> SearchWaiting:
    """Builds (and strategy rounds) waiting or in flight in the compile phase, and active
    searches, of session ``session_id``."""
    with db.transaction() as conn:
        builds = conn.execute(
            select(func.count()).where(
                Job.session == session_id,
                Job.state.in_([JobState.NEW, JobState.COMPILE_START]),
                Job.search_build.is_not(None),  # builds and a strategy's rounds
            )
        ).scalar_one()
        active = conn.execute(
            select(func.count()).where(Search.session == session_id, Search.state == "active")
        ).scalar_one()
    return SearchWaiting(int(builds), int(active))


def job_counts(db: Database, session_id: int, *, top_reasons: int = 20) -> JobCounts:
    """The session's jobs by state, expired in-flight leases, and failure reasons."""
    with db.session() as s:
        session_row(s, session_id)
        by_state = {st: 0 for st in JobState}
        for st, n in s.connection().execute(
            select(Job.state, func.count()).where(Job.session == session_id).group_by(Job.state)
        ):
            by_state[JobState(st)] = int(n)
        expired = (
            s.connection()
            .execute(
                select(func.count()).where(
                    Job.session == session_id,
                    Job.state.in_([S.COMPILE_START, S.EVAL_START]),
                    Job.lease_expires < db_now(),
                )
            )
            .scalar_one()
        )
        reasons = [
            (JobState(st), reason or "(no reason)", int(n))
            for st, reason, n in s.connection().execute(
                select(Job.state, Job.reason, func.count().label("n"))
                .where(Job.session == session_id, Job.state.in_([S.ERRORED, S.NOT_APPLICABLE]))
                .group_by(Job.state, Job.reason)
                .order_by(func.count().desc(), Job.state)
                .limit(top_reasons)
            )
        ]
    return JobCounts(session_id, by_state, int(expired), reasons)


def per_second(done: int, seconds: float) -> float:
    """How many finished per second, ``done`` of them in ``seconds`` (0 over no time): the
    rate a progress line (go_fish's, the dashboard's) shows."""
    return done / seconds if seconds > 0 else 0.0


def seconds_left(left: int, rate: float) -> float | None:
    """Seconds until ``left`` more have finished at ``rate`` per second; None at no rate."""
    return left / rate if rate > 0 else None


@dataclass(frozen=True)
class RetryHistory:
    """A session's lost leases and failed tries over its jobs' lives (``retries`` is only
    the current phase's, cleared when a phase completes)."""

    leases_lost: int
    tries_failed: int
    jobs: int  # jobs with either


def retry_history(db: Database, session_id: int) -> RetryHistory:
    """Totals of ``job.leases_lost`` and ``job.tries_failed`` over the session's jobs."""
    with db.transaction() as conn:
        row = conn.execute(
            select(
                func.coalesce(func.sum(Job.leases_lost), 0),
                func.coalesce(func.sum(Job.tries_failed), 0),
                func.count(),
            ).where(Job.session == session_id, (Job.leases_lost > 0) | (Job.tries_failed > 0))
        ).one()
    return RetryHistory(int(row[0]), int(row[1]), int(row[2]))
