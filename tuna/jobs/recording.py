"""Recording outcomes: a phase's results and the job's next state, in one fenced transaction.

**Results** (:func:`record_outcomes`) are written in the transaction that moves the job
on, fenced by (id, attempt, state): a worker that lost its lease writes nothing. A worker
records its last outcomes and claims its next jobs in one transaction
(:func:`record_and_claim`): one COMMIT per cycle. A failure goes back to its phase's ready
state with one more retry, or ends ``errored`` (:func:`tuna.jobs.states.after_failure`).

The result rows are written by :mod:`tuna.jobs.results`, :mod:`tuna.jobs.measurements`
and :mod:`tuna.jobs.search_results`; a stored build's run jobs are created by
:mod:`tuna.jobs.load`; every move of ``job.state`` is built by :mod:`tuna.jobs.states`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Sequence

from sqlalchemy import Connection, Select, bindparam, select

from tuna.backends.base import BuildOutcome, CompileOutcome, EvalOutcome, Outcome, RunOutcome
from tuna.db import Database, tables
from tuna.db.enums import JobState, JobStep
from tuna.db.retry import with_retry
from tuna.errors import DatabaseError
from tuna.jobs.claims import claim_in_transaction, claim_jobs
from tuna.jobs.errors import LostLease
from tuna.jobs.load import insert_run_jobs, runs_awaiting
from tuna.jobs.measurements import MeasuredOn, measured_here, measurement_rows, write_measurements
from tuna.jobs.results import write_compile_results, write_eval_results
from tuna.jobs.search_results import (
    GaveUp,
    store_builds,
    store_gave_up,
    store_rounds,
    store_runs,
)
from tuna.jobs.states import Change, after_failure, apply_changes
from tuna.jobs.values import (
    DEFAULT_LEASE_SECONDS,
    DEFAULT_MAX_RETRIES,
    ClaimedJob,
    Phase,
    Recorded,
)

log = logging.getLogger(__name__)

S = JobState
Job = tables.job.c


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
    step: JobStep | None = None,
) -> tuple[Recorded, list[ClaimedJob]]:
    """:func:`record_outcomes`, then :func:`claim_jobs`, in one transaction.

    A worker that goes from recording its last jobs straight to its next claim commits
    once instead of twice: at one job per claim, 4 round trips per job instead of 5 (the
    record's UPDATE, the claim's SELECT and UPDATE, one COMMIT), one durable log flush
    instead of two, and one connection checkout instead of two.
    The record is fenced exactly as on its own (measurements included, ``measured_on`` as
    there), and both halves commit or roll back together (a retried transaction repeats
    both). ``held`` and ``step`` as for :func:`claim_jobs`.
    """
    if not outcomes:
        claimed = claim_jobs(
            db, session_id, phase, owner=owner, limit=limit, lease_seconds=lease_seconds,
            gpu=gpu, machine=machine, held=held, step=step,
        )  # fmt: skip
        return Recorded(), claimed
    if measured_on is None and any(
        isinstance(o, EvalOutcome) and o.measurements for _, o in outcomes
    ):
        measured_on = measured_here(db)

    def record_claim() -> tuple[Recorded, list[ClaimedJob]]:
        with db.transaction(immediate=True) as conn:
            rec = _record(conn, outcomes, max_retries, measured_on)
            claimed = claim_in_transaction(
                conn, session_id, phase, owner, limit, lease_seconds, gpu, machine, step, held
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
def _retries_for_update() -> Select[int, JobState, int, int, int]:
    return (
        select(Job.id, Job.state, Job.attempt, Job.retries, Job.tries_failed)
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
    changes: list[Change] = []
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
            to, values = after_failure(
                job.phase, row.retries, outcome.reason or "failed", max_retries
            )
            values["tries_failed"] = row.tries_failed + 1  # kept after the phase completes
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

    changed = apply_changes(conn, changes)
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
    end_given_up(
        conn,
        [
            (by_id[c[0]].search_build, by_id[c[0]].search_run, c[4].get("reason") or "errored")
            for c in changes
            if c[3] is S.ERRORED and c[0] in moved
        ],
    )
    return rec


def end_given_up(conn: Connection, jobs: Sequence[tuple[int | None, int | None, str]]) -> None:
    """End the builds and Runs of search jobs that just errored (see search_results)."""
    gave_up = [GaveUp(b, r, why) for b, r, why in jobs if b is not None or r is not None]
    if gave_up:
        store_gave_up(conn, gave_up)


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
