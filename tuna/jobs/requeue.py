"""Jobs sent back: the reaper returns expired leases; operators reset and requeue jobs.

* The **reaper** (:func:`reap_expired`; any worker, and ``go_fish``, run it) returns
  in-flight jobs whose lease expired to ``new`` / ``compiled``, counting a retry, in one
  set-based pass on the database clock.
* **Operators** reset jobs to ``new`` (:func:`reset_jobs`) or requeue them for another
  evaluation (:func:`requeue_jobs`); ``attempt`` keeps growing, it is a fence.

Every move of ``job.state`` here is built by :mod:`tuna.jobs.states`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from sqlalchemy import ColumnElement, select

from tuna.db import Database, tables
from tuna.db.clock import db_now
from tuna.db.enums import JobState
from tuna.db.retry import with_retry
from tuna.errors import DatabaseError
from tuna.jobs.recording import end_given_up
from tuna.jobs.states import (
    CHUNK,
    Change,
    after_failure,
    apply_changes,
    check_transition,
    compare_and_set,
    lease_cleared,
)
from tuna.jobs.values import DEFAULT_MAX_RETRIES, JobFilter, Phase, Reaped

log = logging.getLogger(__name__)

S = JobState
Job = tables.job.c


def reap_expired(
    db: Database,
    *,
    max_retries: int = DEFAULT_MAX_RETRIES,
    limit: int = CHUNK,
    session_id: int | None = None,
) -> Reaped:
    """Return in-flight jobs whose lease expired to ``new`` / ``compiled``, counting a retry.

    A job past ``max_retries`` ends ``errored``. Reads ``ix_job_lease``; rows another
    reaper or worker holds locked are skipped, not waited for. At most ``limit`` jobs per
    phase and call.
    """

    def reap() -> Reaped:
        with db.transaction(immediate=True) as conn:
            changes: list[Change] = []
            searched: list[tuple[int | None, int | None, str]] = []
            for phase in Phase:
                q = (
                    select(
                        Job.id,
                        Job.attempt,
                        Job.retries,
                        Job.leases_lost,
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
                    to, values = after_failure(phase, r.retries, reason, max_retries)
                    values["leases_lost"] = r.leases_lost + 1  # kept after the phase completes
                    changes.append((r.id, r.attempt, phase.running, to, values))
                    if to is S.ERRORED:
                        searched.append((r.search_build, r.search_run, values["reason"]))
            changed = apply_changes(conn, changes)
            if changed != len(changes):
                raise DatabaseError(f"reaping {len(changes)} locked job(s) changed {changed}")
            end_given_up(conn, searched)
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
            .execute(select(Job.id).where(Job.id > after, *conds).order_by(Job.id).limit(CHUNK))
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
        **lease_cleared(),
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
        **lease_cleared(),
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
