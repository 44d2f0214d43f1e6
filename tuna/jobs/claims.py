"""Claims and leases: how a worker takes jobs, keeps them, and hands them back.

* **Claims** (:func:`claim_jobs`) take a batch in one transaction of three round trips:
  ``SELECT ... ORDER BY priority, id LIMIT n FOR UPDATE SKIP LOCKED`` through
  ``ix_job_claim`` (an immediate transaction on SQLite), one ``UPDATE`` that moves the
  rows, by primary key, to ``*_start`` with ``attempt + 1`` (the fence), the lease owner
  and a lease expiry computed by the server (``NOW(6) + INTERVAL``), and the COMMIT. The
  claimed jobs are built from what the SELECT read; nothing is read back. The hot path
  runs prebuilt Core statements (no ORM session, no statement construction per claim).
  A worker that holds search builds' artifacts takes their ready runs first: a plain read
  picks them (through ``ix_search_run_build_valid`` and ``ix_job_search_run``), a locking read by
  primary key takes those still ready (``SKIP LOCKED``), and the ordinary claim fills the
  batch: one more round trip, for such workers only.
* **Leases** are extended by the worker's heartbeat (:func:`extend_leases`); the reaper
  (:func:`tuna.jobs.requeue.reap_expired`) returns expired ones to ``new`` / ``compiled``,
  counting a retry. A lease that expired but was not reaped yet still counts: the job is
  nobody else's. A clean stop hands jobs back without a retry (:func:`release_jobs`).

Every move of ``job.state`` here is built by :mod:`tuna.jobs.states`.
"""

from __future__ import annotations

import functools
import logging
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import (
    BindParameter,
    Connection,
    Integer,
    Select,
    Update,
    bindparam,
    or_,
    select,
    update,
)

from tuna.db import Database, tables
from tuna.db.clock import db_now
from tuna.db.enums import JobState, JobStep
from tuna.db.precompiled import Precompiled
from tuna.db.retry import with_retry
from tuna.errors import DatabaseError
from tuna.jobs.states import CHUNK, cas_statement, compare_and_set, lease_cleared
from tuna.jobs.values import DEFAULT_LEASE_SECONDS, ClaimedJob, Phase

log = logging.getLogger(__name__)

S = JobState
Job = tables.job.c
SearchRun = tables.search_run.c


def claim_query(
    session_id: int, phase: Phase, limit: int, step: JobStep | None = None
) -> Select[Any]:
    """The claim's SELECT: ready jobs of the session, lowest (priority, id) first, skipping
    rows other claims hold. ``ix_job_claim`` (session, state, priority, id) serves it
    without a sort, whatever the table's size. ``step`` takes only jobs of that step (an
    evaluation's also a search's runs and rounds, which any evaluation takes).

    A search's run jobs are inserted a build at a time
    (:func:`tuna.jobs.load.insert_run_jobs`), so the id order claims the runs of one build
    together; a worker that holds builds' artifacts takes their runs first (``held`` of
    :func:`claim_jobs`).
    """
    return _claim_select(phase, step).params(session=session_id, limit=limit)


def _claim_columns(phase: Phase) -> list[Any]:
    cols: list[Any] = [
        Job.id,
        Job.attempt,
        Job.config,
        Job.solver,
        Job.step,
        Job.search_build,
        Job.search_run,
    ]
    if phase is Phase.EVAL:
        cols.append(Job.result)
    return cols


@functools.cache
def _claim_select(
    phase: Phase, step: JobStep | None = None, search_only: bool = False
) -> Select[Any]:
    """:func:`claim_query` with ``session`` and ``limit`` as bound parameters, built once."""
    limit: BindParameter[int] = bindparam("limit", type_=Integer)
    q = select(*_claim_columns(phase)).where(
        Job.session == bindparam("session", type_=Integer), Job.state == phase.ready
    )
    if step is not None and phase is Phase.EVAL and step is not JobStep.RUN:
        # A search's runs and a strategy's rounds (perf jobs): any evaluation takes them.
        q = q.where(or_(Job.step.in_([step, JobStep.RUN]), Job.search_build.is_not(None)))
    elif step is not None:
        q = q.where(Job.step == step)
    if search_only:  # a search's builds and a strategy's rounds (tuna.searches.strategy)
        q = q.where(Job.search_build.is_not(None))
    return q.order_by(Job.priority, Job.id).limit(limit).with_for_update(skip_locked=True)


@functools.cache
def _claim_select_once(
    phase: Phase, step: JobStep | None = None, search_only: bool = False
) -> Precompiled:
    """:func:`_claim_select` compiled once per dialect (:mod:`tuna.db.precompiled`)."""
    return Precompiled(_claim_select(phase, step, search_only))


HELD_SLACK = 64
"""How many more runs of held builds a claim looks at than it takes: the first runs of a
build not ended are often in flight (other workers hold them) or being claimed."""


@functools.cache
def _held_runs() -> Select[Any]:
    """The jobs of runs not ended (ready or in flight) whose build is one of ``builds``.

    A plain read (no lock) of ``ix_search_run_build_valid`` (``valid`` is NULL until a run
    ends: finished runs are never read), each run's job by ``ix_job_search_run``; build by
    build in run order, the index's order, so it stops at ``limit`` without a sort.
    :func:`_lock_ready` keeps the jobs of the session still ready. Neither the state nor
    the session is filtered here: with either, MariaDB first builds a rowid filter over
    every ready job or every job of the session (60 ms instead of 0.04 ms at 10^4 runs).
    """
    return (
        select(Job.id)
        .join(tables.search_run, SearchRun.id == Job.search_run)
        .where(
            SearchRun.build.in_(bindparam("builds", expanding=True)),
            SearchRun.valid.is_(None),  # not ended: ix_search_run_build_valid skips the rest
        )
        .order_by(SearchRun.build, SearchRun.id)
        .limit(bindparam("limit", type_=Integer))
    )


@functools.cache
def _lock_ready(phase: Phase) -> Select[Any]:
    """The claim's locking read of chosen ``ids``: those still ready, by primary key,
    skipping rows another claim holds."""
    limit: BindParameter[int] = bindparam("limit", type_=Integer)
    return (
        select(*_claim_columns(phase))
        .where(
            Job.id.in_(bindparam("ids", expanding=True)),
            Job.session == bindparam("session", type_=Integer),
            Job.state == phase.ready,
        )
        .order_by(Job.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )


@functools.lru_cache(maxsize=64)
def _claim_update(phase: Phase, lease_seconds: float) -> Update:
    """The claim's compare-and-set (ready -> running), built once per phase and lease.

    ``owner``, ``gpu`` and ``machine`` are bound per claim; the lease expiry and the start
    time are the server's clock, computed in the UPDATE itself.
    """
    values = {
        "attempt": Job.attempt + 1,
        "lease_owner": bindparam("owner", type_=Job.lease_owner.type),
        "lease_expires": db_now(lease_seconds),
        phase.started_column: db_now(),
        phase.ended_column: None,
        "gpu": bindparam("gpu", type_=Job.gpu.type),
        "machine": bindparam("machine", type_=Job.machine.type),
    }
    return cas_statement(phase.ready, phase.running, values=values, event="claim")


@functools.lru_cache(maxsize=64)
def _claim_update_once(phase: Phase, lease_seconds: float) -> Precompiled:
    """:func:`_claim_update` compiled once per dialect and number of ids."""
    return Precompiled(_claim_update(phase, lease_seconds), expanding=["ids"])


def claim_in_transaction(
    conn: Connection,
    session_id: int,
    phase: Phase,
    owner: str,
    limit: int,
    lease_seconds: float,
    gpu: int | None,
    machine: int | None,
    step: JobStep | None = None,
    held: Collection[int] = (),
    search_only: bool = False,
) -> list[ClaimedJob]:
    """The claim's SELECT and UPDATE on ``conn``, inside the caller's transaction.

    With ``held`` builds (search_build ids whose artifact the worker has), ready runs of
    those builds are taken first (:func:`_held_runs`, then :func:`_lock_ready`) and moved;
    the ordinary claim fills the rest of ``limit`` (it sees them running by then).
    """
    claimed: list[ClaimedJob] = []
    if held and phase is Phase.EVAL:  # runs: an evaluation of any step takes them
        ids = (
            conn.execute(
                _held_runs(),
                {"builds": list(held), "limit": limit + HELD_SLACK},
            )
            .scalars()
            .all()
        )
        if ids:
            held_rows = conn.execute(
                _lock_ready(phase), {"ids": list(ids), "session": session_id, "limit": limit}
            ).all()
            claimed = _move(conn, held_rows, session_id, phase, owner, lease_seconds, gpu, machine)
            if len(claimed) >= limit:
                return claimed
    select_ready = _claim_select_once(phase, step, search_only)
    params = {"session": session_id, "limit": limit - len(claimed)}
    rows = select_ready.execute(conn, params).rows
    return claimed + _move(conn, rows, session_id, phase, owner, lease_seconds, gpu, machine)


def _move(
    conn: Connection,
    rows: Sequence[Any],
    session_id: int,
    phase: Phase,
    owner: str,
    lease_seconds: float,
    gpu: int | None,
    machine: int | None,
) -> list[ClaimedJob]:
    """Move the locked ready ``rows`` to running, by primary key; the claimed jobs."""
    if not rows:
        return []
    move = _claim_update_once(phase, float(lease_seconds))
    ids = sorted(r[0] for r in rows)
    params = {"owner": owner, "gpu": gpu, "machine": machine}
    changed = sum(
        move.execute(conn, {**params, "ids": ids[i : i + CHUNK]}).rowcount
        for i in range(0, len(ids), CHUNK)
    )
    if changed != len(ids):
        raise DatabaseError(
            f"claim of {len(ids)} locked job(s) changed {changed}; is the database "
            "running without row locks (MyISAM, or a READ UNCOMMITTED session)?"
        )
    evaluate = phase is Phase.EVAL
    # The columns of _claim_columns, in its order (a driver's tuple or a Row).
    return [
        ClaimedJob(
            id=r[0],
            attempt=r[1] + 1,
            phase=phase,
            session=session_id,
            config=r[2],
            solver=r[3],
            step=JobStep(r[4]),  # a string where the row came through precompiled SQL
            payload=r[7] if evaluate else None,
            search_build=r[5],
            search_run=r[6],
        )
        for r in rows
    ]


def claim_jobs(
    db: Database,
    session_id: int,
    phase: Phase,
    *,
    owner: str,
    limit: int = 1,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    gpu: int | None = None,
    machine: int | None = None,
    step: JobStep | None = None,
    held: Collection[int] = (),
    search_only: bool = False,
) -> list[ClaimedJob]:
    """Claim up to ``limit`` jobs of ``session_id`` ready for ``phase``, lowest priority first.

    One transaction: the claim query skips rows other claims hold locked, then the rows
    move (by primary key) to the phase's running state with a new attempt, the lease
    and the phase's start time, all on the database clock. ``step`` claims only jobs of
    that step (an evaluation also a search's runs); ``search_only`` only a search's jobs
    (those with a ``search_build``: its builds, a strategy's rounds). An evaluate worker
    takes a search's compile-phase work this way.

    ``held``: the search builds (``search_build`` ids) whose artifact the worker already
    has; their ready runs come first, lowest (priority, id) first, then any job as above.
    It costs one more round trip (a plain read), only to a worker that holds builds.
    """

    def claim() -> list[ClaimedJob]:
        with db.transaction(immediate=True) as conn:
            return claim_in_transaction(
                conn, session_id, phase, owner, limit, lease_seconds, gpu, machine, step, held,
                search_only,
            )  # fmt: skip

    claimed = with_retry(claim, what=f"session {session_id}: claim {phase.value} jobs")
    if claimed:
        log.debug(
            "session %d: %s claimed %d %s job(s)", session_id, owner, len(claimed), phase.value
        )
    return claimed


def _by_attempt(jobs: Iterable[ClaimedJob]) -> dict[tuple[Phase, int], list[int]]:
    groups: dict[tuple[Phase, int], list[int]] = defaultdict(list)
    for j in jobs:
        groups[(j.phase, j.attempt)].append(j.id)
    return groups


def extend_leases(
    db: Database,
    owner: str,
    jobs: Sequence[ClaimedJob],
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
) -> list[int]:
    """Extend the leases ``owner`` holds on ``jobs`` to now + ``lease_seconds``.

    Fenced by owner, attempt and state. Returns the ids of the jobs no longer held (their
    lease expired and was reaped, or an operator moved them): their results will not be
    recorded, so the worker may as well stop working on them. The caller says so in its
    log: only it knows which of them it has not recorded itself meanwhile.
    """
    if not jobs:
        return []

    def extend() -> list[int]:
        with db.transaction(immediate=True) as conn:
            changed = 0
            for (phase, attempt), ids in _by_attempt(jobs).items():
                result = conn.execute(
                    update(tables.job)
                    .where(
                        Job.id.in_(ids),
                        Job.attempt == attempt,
                        Job.state == phase.running,
                        Job.lease_owner == owner,
                    )
                    .values(lease_expires=db_now(lease_seconds))
                )
                changed += result.rowcount
            if changed == len(jobs):
                return []
            held = {
                (r.id, r.attempt)
                for r in conn.execute(
                    select(Job.id, Job.attempt).where(
                        Job.id.in_([j.id for j in jobs]),
                        Job.lease_owner == owner,
                        Job.state.in_([S.COMPILE_START, S.EVAL_START]),
                    )
                )
            }
            return [j.id for j in jobs if (j.id, j.attempt) not in held]

    return with_retry(extend, what=f"{owner}: extend {len(jobs)} lease(s)")


def release_jobs(db: Database, owner: str, jobs: Sequence[ClaimedJob]) -> list[int]:
    """Hand ``jobs`` back to their stable state without counting a retry (a clean stop).

    Returns the ids released; jobs no longer held are left alone.
    """
    if not jobs:
        return []

    def release() -> list[int]:
        with db.transaction(immediate=True) as conn:
            held = {
                (r.id, r.attempt, r.state)
                for r in conn.execute(
                    select(Job.id, Job.attempt, Job.state)
                    .where(Job.id.in_([j.id for j in jobs]), Job.lease_owner == owner)
                    .order_by(Job.id)
                    .with_for_update()
                )
            }
            mine = [j for j in jobs if (j.id, j.attempt, j.phase.running) in held]
            for (phase, attempt), ids in _by_attempt(mine).items():
                compare_and_set(
                    conn,
                    ids,
                    from_state=phase.running,
                    to_state=phase.ready,
                    attempt=attempt,
                    values=lease_cleared(),
                )
            return [j.id for j in mine]

    released = with_retry(release, what=f"{owner}: release {len(jobs)} job(s)")
    if released:
        log.info("%s: released %d job(s)", owner, len(released))
    return released
