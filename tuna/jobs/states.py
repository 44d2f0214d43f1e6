"""The job state machine: the only module that assigns ``job.state``.

::

    new --claim--> compile_start --done--> compiled --claim--> eval_start --done--> evaluated
     ^                  | retry                   ^                    | retry
     +------------------+                         +--------------------+
    a failure past the retry cap -> errored        the solver does not apply -> not_applicable

A search's jobs (issue #15) use the same machine: a **build** job (step ``build``) is
compile-phase work only: ``new -> compile_start -> evaluated`` (built or not, it is done:
its artifact is stored and linked from ``search_build``, or the build is recorded as
failed); a **run** job (step ``run``) is evaluate-phase work only: it is inserted
``compiled`` (:func:`insert_run_jobs`) once its build is stored, in the transaction that
stores the build or, for a build stored earlier, in the driver's transaction that adds the
run (both lock the ``search_build`` row, so one of them always sees the other). A run that
failed as a benchmark (non-zero exit, timeout, missing stats) is a recorded invalid Run
(``evaluated``), not a failed job; only a worker's own trouble (an exception, an expired
lease) is retried, and a search job that gives up ends its build or Run invalid too.

The allowed (from, to) pairs are data (:data:`TRANSITIONS`); every write is a
compare-and-set built by one function, which refuses any other pair and is an
``UPDATE job SET state=... WHERE id IN (...) AND state=? [AND attempt=?]``
(:func:`compare_and_set` runs one).

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
  (:func:`reap_expired`) returns expired ones to ``new`` / ``compiled``, counting a retry.
  A lease that expired but was not reaped yet still counts: the job is nobody else's.
* **Results** (:func:`record_outcomes`) are written in the transaction that moves the job
  on, fenced by (id, attempt, state): a worker that lost its lease writes nothing. A
  worker records its last outcomes and claims its next jobs in one transaction
  (:func:`record_and_claim`): one COMMIT per cycle.
* **Retries**: ``retries`` counts the failed tries of the current phase (a completed phase
  resets it). A failure beyond ``max_retries`` retries ends ``errored``, its reason kept.
* **Operators** reset jobs to ``new`` (:func:`reset_jobs`) or requeue them for another
  evaluation (:func:`requeue_jobs`); ``attempt`` keeps growing, it is a fence.

``job.result`` holds the compile phase's payload for the evaluate phase; ``job.reason``
why the job is not (yet) done: the last failure, or why it errored or does not apply.

Every public function is one transaction, retried as a whole on deadlocks, lock-wait
timeouts and a busy SQLite (:mod:`tuna.db.retry`).
"""

from __future__ import annotations

import enum
import functools
import logging
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Connection,
    Integer,
    Select,
    Update,
    bindparam,
    insert,
    select,
    update,
)

from tuna.backends.base import BuildOutcome, CompileOutcome, EvalOutcome, Outcome, RunOutcome
from tuna.db import Database, tables
from tuna.db.clock import db_now
from tuna.db.enums import JobState, JobStep
from tuna.db.retry import with_retry
from tuna.errors import DatabaseError
from tuna.jobs.errors import IllegalTransition, LostLease
from tuna.jobs.measurements import MeasuredOn, measured_here, measurement_rows, write_measurements
from tuna.jobs.results import write_compile_results, write_eval_results
from tuna.jobs.search_results import (
    GaveUp,
    runs_awaiting,
    store_builds,
    store_gave_up,
    store_rounds,
    store_runs,
)

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

S = JobState
# The tables' columns, named as the ORM classes (``Job.state``): statements here are Core, on
# tuna.db.tables, so a worker never imports the ORM (issue #14).
Job = tables.job.c
SearchRun = tables.search_run.c

DEFAULT_MAX_RETRIES = 3
DEFAULT_LEASE_SECONDS = 60.0
_CHUNK = 500  # ids per IN list / per operator transaction

TRANSITIONS: dict[tuple[JobState, JobState], str] = {
    (S.NEW, S.COMPILE_START): "claim",
    (S.COMPILE_START, S.COMPILED): "complete",
    (S.COMPILE_START, S.NEW): "retry",  # failed, lease expired or released
    (S.COMPILE_START, S.ERRORED): "give_up",
    (S.COMPILE_START, S.NOT_APPLICABLE): "not_applicable",
    (S.COMPILE_START, S.EVALUATED): "complete",  # a search's build: done in one phase
    (S.COMPILED, S.EVAL_START): "claim",
    (S.EVAL_START, S.EVALUATED): "complete",
    (S.EVAL_START, S.COMPILED): "retry",
    (S.EVAL_START, S.ERRORED): "give_up",
    (S.EVAL_START, S.NOT_APPLICABLE): "not_applicable",
    (S.ERRORED, S.NEW): "reset",
    (S.NOT_APPLICABLE, S.NEW): "reset",
    (S.COMPILED, S.NEW): "reset",
    (S.EVALUATED, S.NEW): "reset",
    (S.EVALUATED, S.COMPILED): "requeue",
    (S.ERRORED, S.COMPILED): "requeue",
}
"""Every allowed (from, to) pair and the event that makes it."""


class Phase(str, enum.Enum):
    """The two halves of a job: compile (no device) and evaluate (on the device)."""

    COMPILE = "compile"
    EVAL = "eval"

    @property
    def ready(self) -> JobState:
        """The state a job waits in for this phase (claims read it; retries return to it)."""
        return S.NEW if self is Phase.COMPILE else S.COMPILED

    @property
    def running(self) -> JobState:
        """The state of a job held (leased) by a worker in this phase."""
        return S.COMPILE_START if self is Phase.COMPILE else S.EVAL_START

    @property
    def done(self) -> JobState:
        return S.COMPILED if self is Phase.COMPILE else S.EVALUATED

    @property
    def started_column(self) -> str:
        return "compile_start" if self is Phase.COMPILE else "eval_start"

    @property
    def ended_column(self) -> str:
        return "compile_end" if self is Phase.COMPILE else "eval_end"

    @classmethod
    def holding(cls, state: JobState) -> Phase | None:
        """The phase whose workers hold a job in ``state``, if any."""
        return {S.COMPILE_START: cls.COMPILE, S.EVAL_START: cls.EVAL}.get(state)


@dataclass(frozen=True)
class ClaimedJob:
    """A job a worker holds: its fence (``attempt``) and what the work is about.

    ``payload`` is what the compile phase left for the evaluate phase (eval claims only).
    """

    id: int
    attempt: int
    phase: Phase
    session: int
    config: int | None
    solver: int | None
    step: JobStep
    payload: str | None = None
    search_build: int | None = None  # a search's build job
    search_run: int | None = None  # a search's run job


@dataclass
class Recorded:
    """What :func:`record_outcomes` did: each recorded job's new state; the lost ones."""

    states: dict[int, JobState] = field(default_factory=dict)
    lost: list[int] = field(default_factory=list)

    def count(self, state: JobState) -> int:
        return sum(1 for s in self.states.values() if s is state)


@dataclass(frozen=True)
class Reaped:
    """Jobs whose lease had expired: returned to their stable state, or errored."""

    returned: list[int] = field(default_factory=list)
    errored: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.returned) + len(self.errored)


@dataclass(frozen=True)
class JobFilter:
    """Which jobs an operator transition applies to. Unset fields match everything.

    ``reason`` matches a substring of ``job.reason``; ``states`` defaults per operation.
    """

    session: int | None = None
    states: tuple[JobState, ...] = ()
    label: str | None = None
    reason: str | None = None

    def where(self) -> list[ColumnElement[bool]]:
        conds: list[ColumnElement[bool]] = []
        if self.session is not None:
            conds.append(Job.session == self.session)
        if self.label is not None:
            conds.append(Job.label == self.label)
        if self.reason:
            conds.append(Job.reason.contains(self.reason, autoescape=True))
        return conds


# --- the one write path ---------------------------------------------------------------------------


def check_transition(from_state: JobState, to_state: JobState, event: str | None = None) -> str:
    """The event that moves a job from ``from_state`` to ``to_state``; raises if none does.

    With ``event``, the pair must also be made by that event (an operator's reset may not
    do what only a worker's retry may).
    """
    found = TRANSITIONS.get((from_state, to_state))
    if found is None or (event is not None and found != event):
        allowed = [
            to for (frm, to), ev in TRANSITIONS.items() if frm is from_state and event in (None, ev)
        ]
        raise IllegalTransition(from_state, to_state, allowed, event)
    return found


def _cas_statement(
    from_state: JobState,
    to_state: JobState,
    *,
    attempt: int | None = None,
    values: Mapping[str, Any] | None = None,
    where: Sequence[ColumnElement[bool]] = (),
    event: str | None = None,
    per_row: bool = False,
) -> Update:
    """The compare-and-set UPDATE, its ids bound later as the expanding parameter ``ids``
    (or, ``per_row``, one job per parameter set: ``row_id`` and ``row_attempt``).

    Every write of ``job.state`` is built here. Raises :class:`IllegalTransition` for a
    pair (or an ``event``) the machine does not allow.
    """
    check_transition(from_state, to_state, event)
    if per_row:
        # One row per parameter set (executemany): its id and attempt are bound per row.
        stmt = update(tables.job).where(
            Job.id == bindparam("row_id", type_=Integer),
            Job.attempt == bindparam("row_attempt", type_=Integer),
            Job.state == from_state,
        )
    else:
        stmt = update(tables.job).where(
            Job.id.in_(bindparam("ids", expanding=True)), Job.state == from_state
        )
    if attempt is not None:
        stmt = stmt.where(Job.attempt == attempt)
    if where:
        stmt = stmt.where(*where)
    return stmt.values(state=to_state, **(values or {}))


def compare_and_set(
    s: Session | Connection,
    ids: Collection[int],
    *,
    from_state: JobState,
    to_state: JobState,
    attempt: int | None = None,
    values: Mapping[str, Any] | None = None,
    where: Sequence[ColumnElement[bool]] = (),
    event: str | None = None,
) -> int:
    """Move the jobs ``ids`` that are in ``from_state`` (at ``attempt``) to ``to_state``.

    ``UPDATE job SET state=:to, <values> WHERE id IN (:ids) AND state=:from
    [AND attempt=:attempt] [AND <where>]``, by primary key (no gap locks). Returns how many
    rows changed; the caller decides what a shortfall means. Raises
    :class:`IllegalTransition` for a pair (or an ``event``) the machine does not allow.
    """
    stmt = _cas_statement(
        from_state, to_state, attempt=attempt, values=values, where=where, event=event
    )
    conn = s if isinstance(s, Connection) else s.connection()
    changed = 0
    ordered = sorted(ids)
    for i in range(0, len(ordered), _CHUNK):
        changed += conn.execute(stmt, {"ids": ordered[i : i + _CHUNK]}).rowcount
    return changed


_Change = tuple[int, int, JobState, JobState, dict[str, Any]]
"""(job id, attempt, from, to, plain values): one fenced move of one job."""


def _apply(s: Session | Connection, changes: Iterable[_Change]) -> int:
    """Apply fenced moves through prebuilt UPDATEs (one per from, to and columns written).

    Jobs with equal (from, to, attempt, values) move in one ``WHERE id IN (...)``; the
    others (a compile payload each) in one ``executemany`` of the per-row form, each row
    fenced by its own id and attempt. Every move out of a running state also clears the
    lease; a completion stamps the phase's end time on the database clock.
    """
    same: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for job_id, attempt, frm, to, values in changes:
        same[(frm, to, attempt, tuple(sorted(values.items())))].append(job_id)
    single: dict[tuple[JobState, JobState, tuple[str, ...]], list[dict[str, Any]]] = defaultdict(
        list
    )
    conn = s if isinstance(s, Connection) else s.connection()
    changed = 0
    for (frm, to, attempt, items), ids in same.items():
        keys = tuple(k for k, _ in items)
        params = {f"v_{k}": v for k, v in items}
        if len(ids) == 1:
            single[(frm, to, keys)].append({"row_id": ids[0], "row_attempt": attempt, **params})
            continue
        stmt = _move_statement(frm, to, keys, per_row=False)
        ordered = sorted(ids)
        for i in range(0, len(ordered), _CHUNK):
            chunk = ordered[i : i + _CHUNK]
            changed += conn.execute(stmt, {"ids": chunk, "row_attempt": attempt, **params}).rowcount
    for (frm, to, keys), rows in single.items():
        rows.sort(key=lambda r: r["row_id"])  # one lock order for every writer
        changed += conn.execute(_move_statement(frm, to, keys, per_row=True), rows).rowcount
    return changed


@functools.lru_cache(maxsize=128)
def _move_statement(
    from_state: JobState, to_state: JobState, keys: tuple[str, ...], *, per_row: bool
) -> Update:
    """:func:`_apply`'s UPDATE for one (from, to) writing ``keys`` (bound as ``v_<key>``),
    fenced by ``row_attempt``; ids as ``ids`` (a list) or, ``per_row``, ``row_id``."""
    columns = tables.job.c
    values: dict[str, Any] = {k: bindparam(f"v_{k}", type_=columns[k].type) for k in keys}
    stmt = _cas_statement(
        from_state,
        to_state,
        values={**_leaving_running(from_state, to_state), **values},
        per_row=per_row,
    )
    if not per_row:
        stmt = stmt.where(Job.attempt == bindparam("row_attempt", type_=Integer))
    return stmt


def _lease_cleared() -> dict[str, Any]:
    return {"lease_owner": None, "lease_expires": None}


def _leaving_running(from_state: JobState, to_state: JobState) -> dict[str, Any]:
    phase = Phase.holding(from_state)
    if phase is None:
        return {}
    values = _lease_cleared()
    if TRANSITIONS[(from_state, to_state)] == "complete":
        values[phase.ended_column] = db_now()
    return values


# --- workers --------------------------------------------------------------------------------------


def claim_query(
    session_id: int, phase: Phase, limit: int, step: JobStep | None = None
) -> Select[Any]:
    """The claim's SELECT: ready jobs of the session, lowest (priority, id) first, skipping
    rows other claims hold. ``ix_job_claim`` (session, state, priority, id) serves it
    without a sort, whatever the table's size. ``step`` takes only jobs of that step.

    A search's run jobs are inserted a build at a time (:func:`insert_run_jobs`), so the id
    order claims the runs of one build together; a worker that holds builds' artifacts
    takes their runs first (``held`` of :func:`claim_jobs`).
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
    if step is not None:
        q = q.where(Job.step == step)
    if search_only:  # a search's builds and a strategy's rounds (tuna.searches.strategy)
        q = q.where(Job.search_build.is_not(None))
    return q.order_by(Job.priority, Job.id).limit(limit).with_for_update(skip_locked=True)


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
    return _cas_statement(phase.ready, phase.running, values=values, event="claim")


def _claim(
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
    if held and phase is Phase.EVAL and step in (None, JobStep.RUN):
        ids = (
            conn.execute(
                _held_runs(),
                {"builds": list(held), "limit": limit + HELD_SLACK},
            )
            .scalars()
            .all()
        )
        if ids:
            rows = conn.execute(
                _lock_ready(phase), {"ids": list(ids), "session": session_id, "limit": limit}
            ).all()
            claimed = _move(conn, rows, session_id, phase, owner, lease_seconds, gpu, machine)
            if len(claimed) >= limit:
                return claimed
    select_ready = _claim_select(phase, step, search_only)
    rows = conn.execute(select_ready, {"session": session_id, "limit": limit - len(claimed)}).all()
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
    move = _claim_update(phase, float(lease_seconds))
    ids = sorted(r.id for r in rows)
    params = {"owner": owner, "gpu": gpu, "machine": machine}
    changed = sum(
        conn.execute(move, {**params, "ids": ids[i : i + _CHUNK]}).rowcount
        for i in range(0, len(ids), _CHUNK)
    )
    if changed != len(ids):
        raise DatabaseError(
            f"claim of {len(ids)} locked job(s) changed {changed}; is the database "
            "running without row locks (MyISAM, or a READ UNCOMMITTED session)?"
        )
    return [
        ClaimedJob(
            id=r.id,
            attempt=r.attempt + 1,
            phase=phase,
            session=session_id,
            config=r.config,
            solver=r.solver,
            step=r.step,
            payload=r.result if phase is Phase.EVAL else None,
            search_build=r.search_build,
            search_run=r.search_run,
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
    that step; ``search_only`` only a search's jobs (those with a ``search_build``: its
    builds, a strategy's rounds). An evaluate worker takes a search's compile-phase work
    this way.

    ``held``: the search builds (``search_build`` ids) whose artifact the worker already
    has; their ready runs come first, lowest (priority, id) first, then any job as above.
    It costs one more round trip (a plain read), only to a worker that holds builds.
    """

    def claim() -> list[ClaimedJob]:
        with db.transaction(immediate=True) as conn:
            return _claim(
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
                    values=_lease_cleared(),
                )
            return [j.id for j in mine]

    released = with_retry(release, what=f"{owner}: release {len(jobs)} job(s)")
    if released:
        log.info("%s: released %d job(s)", owner, len(released))
    return released


def record_outcomes(
    db: Database,
    owner: str,
    outcomes: Sequence[tuple[ClaimedJob, Outcome]],
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
    measured_on: MeasuredOn | None = None,
) -> Recorded:
    """Record phase outcomes and their result rows in one fenced transaction.

    Every move is fenced by (id, attempt, running state); a job that is no longer there is
    *lost*: nothing is written for it. For the others:

    * ok: to ``compiled`` / ``evaluated``; kernels + job links (compile) or perf/find rows
      (evaluate) are written; ``retries`` and ``reason`` are cleared;
    * not applicable: to ``not_applicable`` with the reason;
    * failed: back to ``new`` / ``compiled`` with ``retries + 1`` and the reason, or
      ``errored`` once that exceeds ``max_retries``.

    The measurements of evaluate outcomes (ok or failed) are written for every job not
    lost, taken ``measured_on`` a platform: the worker's; this process's (collected now)
    when not given.
    """
    if not outcomes:
        return Recorded()
    if measured_on is None and any(
        isinstance(o, EvalOutcome) and o.measurements for _, o in outcomes
    ):
        measured_on = measured_here(db)

    def record() -> Recorded:
        with db.transaction(immediate=True) as conn:
            return _record(conn, outcomes, max_retries, measured_on)

    rec = with_retry(record, what=f"{owner}: record {len(outcomes)} outcome(s)")
    for job_id in rec.lost:
        log.warning("job %d: lease lost by %s; result dropped", job_id, owner)
    return rec


def record_and_claim(
    db: Database,
    owner: str,
    outcomes: Sequence[tuple[ClaimedJob, Outcome]],
    session_id: int,
    phase: Phase,
    *,
    limit: int = 1,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    gpu: int | None = None,
    machine: int | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    measured_on: MeasuredOn | None = None,
    held: Collection[int] = (),
) -> tuple[Recorded, list[ClaimedJob]]:
    """:func:`record_outcomes`, then :func:`claim_jobs`, in one transaction.

    A worker that goes from recording its last jobs straight to its next claim commits
    once instead of twice: at one job per claim, 4 round trips per job instead of 5 (the
    record's UPDATE, the claim's SELECT and UPDATE, one COMMIT), one durable log flush
    instead of two, and one connection checkout instead of two.
    The record is fenced exactly as on its own (measurements included, ``measured_on`` as
    there), and both halves commit or roll back together (a retried transaction repeats
    both). ``held`` as for :func:`claim_jobs`.
    """
    if not outcomes:
        claimed = claim_jobs(
            db, session_id, phase, owner=owner, limit=limit, lease_seconds=lease_seconds,
            gpu=gpu, machine=machine, held=held,
        )  # fmt: skip
        return Recorded(), claimed
    if measured_on is None and any(
        isinstance(o, EvalOutcome) and o.measurements for _, o in outcomes
    ):
        measured_on = measured_here(db)

    def record_claim() -> tuple[Recorded, list[ClaimedJob]]:
        with db.transaction(immediate=True) as conn:
            rec = _record(conn, outcomes, max_retries, measured_on)
            claimed = _claim(
                conn, session_id, phase, owner, limit, lease_seconds, gpu, machine, None, held
            )
            return rec, claimed

    rec, claimed = with_retry(
        record_claim,
        what=f"{owner}: record {len(outcomes)} outcome(s), claim {phase.value} jobs",
    )
    for job_id in rec.lost:
        log.warning("job %d: lease lost by %s; result dropped", job_id, owner)
    if claimed:
        log.debug(
            "session %d: %s claimed %d %s job(s)", session_id, owner, len(claimed), phase.value
        )
    return rec, claimed


@functools.cache
def _retries_for_update() -> Select[int, JobState, int, int]:
    return (
        select(Job.id, Job.state, Job.attempt, Job.retries)
        .where(Job.id.in_(bindparam("ids", expanding=True)))
        .order_by(Job.id)
        .with_for_update()
    )


@functools.cache
def _states_of() -> Select[int, JobState, int]:
    return select(Job.id, Job.state, Job.attempt).where(
        Job.id.in_(bindparam("ids", expanding=True))
    )


def _record(
    conn: Connection,
    outcomes: Sequence[tuple[ClaimedJob, Outcome]],
    max_retries: int,
    measured_on: MeasuredOn | None = None,
) -> Recorded:
    rec = Recorded()
    failed = [(j, o) for j, o in outcomes if not o.ok and not o.not_applicable]
    settled = [(j, o) for j, o in outcomes if o.ok or o.not_applicable]
    changes: list[_Change] = []
    # A failure's next state depends on the retries so far: lock and read those rows first.
    if failed:
        current = {
            r.id: r
            for r in conn.execute(_retries_for_update(), {"ids": sorted(j.id for j, _ in failed)})
        }
        for job, outcome in failed:
            row = current.get(job.id)
            if row is None or row.state != job.phase.running or row.attempt != job.attempt:
                rec.lost.append(job.id)
                continue
            to, values = _failed(job.phase, row.retries, outcome.reason or "failed", max_retries)
            changes.append((job.id, job.attempt, job.phase.running, to, values))
    for job, outcome in settled:
        if outcome.ok:
            values = {"reason": None, "retries": 0}
            done_state = job.phase.done
            if isinstance(outcome, BuildOutcome):
                done_state = S.EVALUATED  # a build has no evaluate phase
                if not outcome.built:
                    values["reason"] = outcome.failure
            elif isinstance(outcome, RunOutcome):
                if not outcome.valid:
                    values["reason"] = outcome.failure
            elif isinstance(outcome, CompileOutcome):
                values["result"] = outcome.payload
            changes.append((job.id, job.attempt, job.phase.running, done_state, values))
        else:
            values = {"reason": outcome.reason}
            changes.append((job.id, job.attempt, job.phase.running, S.NOT_APPLICABLE, values))

    changed = _apply(conn, changes)
    moved = {c[0]: c[3] for c in changes}
    if changed != len(changes):
        # Some settled jobs were no longer held (the locked failures cannot miss). Only the
        # holder of attempt N moves a job to a done or not-applicable state at attempt N, so
        # the jobs found there now are exactly the ones this transaction moved.
        rows = conn.execute(_states_of(), {"ids": sorted(j.id for j, _ in settled)})
        now = {r.id: (r.state, r.attempt) for r in rows}
        for job, _ in settled:
            if now.get(job.id) != (moved[job.id], job.attempt):
                rec.lost.append(job.id)
                del moved[job.id]
        if changed != len(moved):
            raise DatabaseError(f"recording {len(changes)} job(s) changed {changed}; rolled back")
    rec.states = moved
    done = [(j, o) for j, o in settled if o.ok and j.id in moved]
    builds = [(j, o) for j, o in done if isinstance(o, BuildOutcome)]
    runs = [(j, o) for j, o in done if isinstance(o, RunOutcome)]
    plain = [(j, o) for j, o in done if not isinstance(o, BuildOutcome | RunOutcome)]
    write_compile_results(conn, [(j, o) for j, o in plain if isinstance(o, CompileOutcome)])
    write_eval_results(conn, [(j, o) for j, o in plain if isinstance(o, EvalOutcome)])
    if measured_on is not None:
        measured = [
            row
            for j, o in outcomes
            if isinstance(o, EvalOutcome)
            and o.measurements
            and j.id in moved
            and j.config is not None
            and j.solver is not None
            for row in measurement_rows(j, o.measurements, measured_on)
        ]
        write_measurements(conn, measured)
    rounds = [
        (j, o) for j, o in settled if j.search_build is not None and j.config is not None
    ]  # a strategy's rounds (tuna.searches.strategy): their Runs from the measurements
    store_rounds(
        conn,
        [j for j, o in rounds if o.ok and j.id in moved and j.phase is Phase.EVAL],
        [(j.search_build, o.reason or "not applicable") for j, o in rounds if o.not_applicable],
    )
    if builds:
        insert_run_jobs(conn, runs_awaiting(conn, store_builds(conn, builds)))
    store_runs(conn, runs)
    by_id = {j.id: j for j, _ in outcomes}
    _gave_up(
        conn,
        [
            (by_id[c[0]].search_build, by_id[c[0]].search_run, c[4].get("reason") or "errored")
            for c in changes
            if c[3] is S.ERRORED and c[0] in moved
        ],
    )
    return rec


def _gave_up(conn: Connection, jobs: Sequence[tuple[int | None, int | None, str]]) -> None:
    """End the builds and Runs of search jobs that just errored (see search_results)."""
    gave_up = [GaveUp(b, r, why) for b, r, why in jobs if b is not None or r is not None]
    if gave_up:
        store_gave_up(conn, gave_up)


@functools.cache
def _insert_job() -> Any:
    return insert(tables.job)


def insert_run_jobs(conn: Connection, runs: Sequence[tuple[int, int]]) -> int:
    """Insert, ``compiled``, the run jobs of ``runs`` (``(session, search_run id)`` pairs):
    their build is stored, or they need none. Part of the caller's transaction."""
    if not runs:
        return 0
    rows = [
        {"session": session, "search_run": run, "step": JobStep.RUN, "state": S.COMPILED}
        for session, run in runs
    ]
    conn.execute(_insert_job(), rows)
    return len(rows)


def insert_round_jobs(conn: Connection, rounds: Sequence[tuple[int, int, int]]) -> int:
    """Insert, ``new``, the perf jobs of a strategy's rounds (``(session, config,
    search_build id)``): each builds and times its round's candidates. Their solver is
    the round's (``search_build.params``, filled in by the worker that claims them), not a
    column: a (session, config, solver, step) has one job, and a search has many rounds.
    Part of the caller's transaction."""
    if not rounds:
        return 0
    rows = [
        {
            "session": session,
            "config": config,
            "search_build": build,
            "step": JobStep.PERF,
            "state": S.NEW,
        }
        for session, config, build in rounds
    ]
    conn.execute(_insert_job(), rows)
    return len(rows)


def insert_build_jobs(conn: Connection, builds: Sequence[tuple[int, int]]) -> int:
    """Insert, ``new``, the build jobs of ``builds`` (``(session, search_build id)``
    pairs). Part of the caller's transaction."""
    if not builds:
        return 0
    rows = [
        {"session": session, "search_build": build, "step": JobStep.BUILD, "state": S.NEW}
        for session, build in builds
    ]
    conn.execute(_insert_job(), rows)
    return len(rows)


def _failed(
    phase: Phase, retries: int, reason: str, max_retries: int
) -> tuple[JobState, dict[str, Any]]:
    tries = retries + 1
    if tries > max_retries:
        gave_up = f"{reason} (gave up after {tries} {'try' if tries == 1 else 'tries'})"
        return S.ERRORED, {"reason": gave_up, "retries": tries}
    return phase.ready, {"reason": reason, "retries": tries}


def record_outcome(
    db: Database,
    owner: str,
    job: ClaimedJob,
    outcome: Outcome,
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> JobState:
    """Record one job's outcome (see :func:`record_outcomes`); returns its new state.

    Raises :class:`LostLease` (having written nothing) when ``owner`` no longer holds it.
    """
    rec = record_outcomes(db, owner, [(job, outcome)], max_retries=max_retries)
    if rec.lost:
        raise LostLease(rec.lost, owner)
    return rec.states[job.id]


def reap_expired(
    db: Database,
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
    limit: int = _CHUNK,
    session_id: int | None = None,
) -> Reaped:
    """Return in-flight jobs whose lease expired to ``new`` / ``compiled``, counting a retry.

    A job past ``max_retries`` ends ``errored``. Reads ``ix_job_lease``; rows another
    reaper or worker holds locked are skipped, not waited for. At most ``limit`` jobs per
    phase and call.
    """

    def reap() -> Reaped:
        with db.transaction(immediate=True) as conn:
            changes: list[_Change] = []
            searched: list[tuple[int | None, int | None, str]] = []
            for phase in Phase:
                q = (
                    select(
                        Job.id,
                        Job.attempt,
                        Job.retries,
                        Job.lease_owner,
                        Job.search_build,
                        Job.search_run,
                    )
                    .where(Job.state == phase.running, Job.lease_expires < db_now())
                    .limit(limit)
                    .with_for_update(skip_locked=True)
                )
                if session_id is not None:
                    q = q.where(Job.session == session_id)
                for r in conn.execute(q):
                    reason = f"lease expired; last owner {r.lease_owner}"
                    to, values = _failed(phase, r.retries, reason, max_retries)
                    changes.append((r.id, r.attempt, phase.running, to, values))
                    if to is S.ERRORED:
                        searched.append((r.search_build, r.search_run, values["reason"]))
            changed = _apply(conn, changes)
            if changed != len(changes):
                raise DatabaseError(f"reaping {len(changes)} locked job(s) changed {changed}")
            _gave_up(conn, searched)
            return Reaped(
                returned=[c[0] for c in changes if c[3] is not S.ERRORED],
                errored=[c[0] for c in changes if c[3] is S.ERRORED],
            )

    reaped = with_retry(reap, what="reap expired leases")
    if reaped:
        log.info(
            "reaper: %d expired lease(s): %d returned, %d errored",
            len(reaped),
            len(reaped.returned),
            len(reaped.errored),
        )
    return reaped


# --- operators ------------------------------------------------------------------------------------


def _operator_move(
    db: Database,
    flt: JobFilter,
    to_state: JobState,
    event: str,
    default_states: tuple[JobState, ...],
    values: dict[str, Any],
    extra_where: Callable[[JobState], list[ColumnElement[bool]]] = lambda _s: [],
) -> int:
    """Move every job matching ``flt`` to ``to_state``, a chunk of ids per transaction."""
    states = flt.states or default_states
    for st in states:
        check_transition(st, to_state, event)  # refuse before writing anything
    moved = 0
    for st in states:
        # A search's jobs are its driver's: an operator's reset or requeue would measure a
        # recorded Run again or send a run job to the compile phase.
        conds = [Job.state == st, Job.config.is_not(None), *flt.where(), *extra_where(st)]
        after: int | None = 0
        while after is not None:
            n, after = with_retry(
                partial(_move_chunk, db, st, to_state, event, conds, values, after),
                what=f"move {st.value} jobs to {to_state.value}",
            )
            moved += n
    return moved


def _move_chunk(
    db: Database,
    from_state: JobState,
    to_state: JobState,
    event: str,
    conds: list[ColumnElement[bool]],
    values: dict[str, Any],
    after: int,
) -> tuple[int, int | None]:
    """Move the next chunk of matching jobs with ids above ``after``; (moved, last id)."""
    with db.session(immediate=True) as s:
        ids = list(
            s.connection()
            .execute(select(Job.id).where(Job.id > after, *conds).order_by(Job.id).limit(_CHUNK))
            .scalars()
        )
        if not ids:
            return 0, None
        n = compare_and_set(
            s,
            ids,
            from_state=from_state,
            to_state=to_state,
            values=values,
            where=conds,
            event=event,
        )
        return n, ids[-1]


def reset_jobs(db: Database, flt: JobFilter) -> int:
    """Send matching jobs back to ``new`` for a fresh compile; returns how many moved.

    Default states: ``errored``. Allowed from errored, not_applicable, compiled and
    evaluated; never from an in-flight state (the reaper owns those). Retries, reason,
    compile payload and phase times are cleared; ``attempt`` is kept (it is the fence).
    """
    values = {
        **_lease_cleared(),
        "retries": 0,
        "reason": None,
        "result": None,
        "compile_start": None,
        "compile_end": None,
        "eval_start": None,
        "eval_end": None,
    }
    n = _operator_move(db, flt, S.NEW, "reset", (S.ERRORED,), values)
    log.info("reset %d job(s) to new (%s)", n, flt)
    return n


def requeue_jobs(db: Database, flt: JobFilter) -> int:
    """Send matching jobs back to ``compiled`` to evaluate them again; returns how many.

    Default states: ``evaluated`` and ``errored``. An errored job is requeued only if its
    compile phase had completed (the others need :func:`reset_jobs`).
    """
    values = {
        **_lease_cleared(),
        "retries": 0,
        "reason": None,
        "eval_start": None,
        "eval_end": None,
    }

    def compiled_only(st: JobState) -> list[ColumnElement[bool]]:
        return [Job.compile_end.is_not(None)] if st is S.ERRORED else []

    n = _operator_move(
        db, flt, S.COMPILED, "requeue", (S.EVALUATED, S.ERRORED), values, compiled_only
    )
    log.info("requeued %d job(s) to compiled (%s)", n, flt)
    return n
