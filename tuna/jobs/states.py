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
``compiled`` (:func:`entered`, :func:`tuna.jobs.load.insert_run_jobs`) once its build is
stored, in the transaction that stores the build or, for a build stored earlier, in the
driver's transaction that adds the run (both lock the ``search_build`` row, so one of them
always sees the other). A run that failed as a benchmark (non-zero exit, timeout, missing
stats) is a recorded invalid Run (``evaluated``), not a failed job; only a worker's own
trouble (an exception, an expired lease) is retried, and a search job that gives up ends
its build or Run invalid too.

The allowed (from, to) pairs are data (:data:`TRANSITIONS`); every write is a
compare-and-set built by one function (:func:`cas_statement`), which refuses any other pair
and is an ``UPDATE job SET state=... WHERE id IN (...) AND state=? [AND attempt=?]``
(:func:`compare_and_set` runs one; :func:`apply_changes` runs a batch of fenced moves).
**Retries**: ``retries`` counts the failed tries of the current phase (a completed phase
resets it); a failure beyond ``max_retries`` retries ends ``errored``, its reason kept
(:func:`after_failure`).

The writers that use this path, each its own module:

* :mod:`tuna.jobs.claims`: claims, lease heartbeats and clean releases (workers);
* :mod:`tuna.jobs.recording`: phase outcomes and their result rows, fenced;
* :mod:`tuna.jobs.requeue`: the reaper (expired leases) and the operators' reset and requeue.

``job.result`` holds the compile phase's payload for the evaluate phase; ``job.reason``
why the job is not (yet) done: the last failure, or why it errored or does not apply.

Every public function of those modules is one transaction, retried as a whole on
deadlocks, lock-wait timeouts and a busy SQLite (:mod:`tuna.db.retry`).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, Integer, Update, bindparam, update

from tuna.db import tables
from tuna.db.clock import db_now
from tuna.db.enums import JobState, JobStep
from tuna.db.precompiled import Precompiled
from tuna.jobs.errors import IllegalTransition
from tuna.jobs.values import Phase

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

S = JobState
# The tables' columns, named as the ORM classes (``Job.state``): statements here are Core, on
# tuna.db.tables, so a worker never imports the ORM (issue #14).
Job = tables.job.c

CHUNK = 500  # ids per IN list / per operator transaction

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


def cas_statement(
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
    stmt = cas_statement(
        from_state, to_state, attempt=attempt, values=values, where=where, event=event
    )
    conn = s if isinstance(s, Connection) else s.connection()
    changed = 0
    ordered = sorted(ids)
    for i in range(0, len(ordered), CHUNK):
        changed += conn.execute(stmt, {"ids": ordered[i : i + CHUNK]}).rowcount
    return changed


Change = tuple[int, int, JobState, JobState, dict[str, Any]]
"""(job id, attempt, from, to, plain values): one fenced move of one job."""


def apply_changes(s: Session | Connection, changes: Iterable[Change]) -> int:
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
        for i in range(0, len(ordered), CHUNK):
            chunk = ordered[i : i + CHUNK]
            changed += stmt.execute(conn, {"ids": chunk, "row_attempt": attempt, **params}).rowcount
    for (frm, to, keys), rows in single.items():
        rows.sort(key=lambda r: r["row_id"])  # one lock order for every writer
        one = _move_statement(frm, to, keys, per_row=True)
        changed += one.execute(conn, rows[0] if len(rows) == 1 else rows).rowcount
    return changed


@functools.lru_cache(maxsize=128)
def _move_statement(
    from_state: JobState, to_state: JobState, keys: tuple[str, ...], *, per_row: bool
) -> Precompiled:
    """:func:`apply_changes`'s UPDATE for one (from, to) writing ``keys`` (bound as ``v_<key>``),
    fenced by ``row_attempt``; ids as ``ids`` (a list) or, ``per_row``, ``row_id``. Compiled
    once per dialect (:mod:`tuna.db.precompiled`): a record runs it per job at batch 1."""
    columns = tables.job.c
    values: dict[str, Any] = {k: bindparam(f"v_{k}", type_=columns[k].type) for k in keys}
    stmt = cas_statement(
        from_state,
        to_state,
        values={**_leaving_running(from_state, to_state), **values},
        per_row=per_row,
    )
    if not per_row:
        stmt = stmt.where(Job.attempt == bindparam("row_attempt", type_=Integer))
    return Precompiled(stmt, expanding=() if per_row else ["ids"])


def lease_cleared() -> dict[str, Any]:
    return {"lease_owner": None, "lease_expires": None}


def _leaving_running(from_state: JobState, to_state: JobState) -> dict[str, Any]:
    phase = Phase.holding(from_state)
    if phase is None:
        return {}
    values = lease_cleared()
    if TRANSITIONS[(from_state, to_state)] == "complete":
        values[phase.ended_column] = db_now()
    return values


def after_failure(
    phase: Phase, retries: int, reason: str, max_retries: int
) -> tuple[JobState, dict[str, Any]]:
    """Where a failed try of ``phase`` goes: back to the phase's ready state with one more
    retry, or ``errored`` once that exceeds ``max_retries``; and the values it writes."""
    tries = retries + 1
    if tries > max_retries:
        gave_up = f"{reason} (gave up after {tries} {'try' if tries == 1 else 'tries'})"
        return S.ERRORED, {"reason": gave_up, "retries": tries}
    return phase.ready, {"reason": reason, "retries": tries}


def entered(step: JobStep) -> dict[str, JobState]:
    """The state a new job of ``step`` is inserted in (:mod:`tuna.jobs.load` creates jobs):
    a search's run job ``compiled`` (its build is stored, or it needs none), every other
    job ``new``."""
    return {"state": S.COMPILED if step is JobStep.RUN else S.NEW}
