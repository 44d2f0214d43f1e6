"""Measurement rows: every candidate an evaluation timed, where and for whom.

* :func:`write_measurements` inserts an evaluation's rows, inside the fenced transaction
  that records the job (one prebuilt multi-row INSERT per batch);
* :func:`save_progress` saves rows taken so far by an evaluation still running, in a small
  transaction of its own, fenced as a record is (the job must still be held by its
  owner at its attempt), so that a worker killed midway loses only what it measured
  since its last save;
* :func:`measured_before` is what a resumed evaluation starts from: the rows of
  (session, config, solver) on this platform, read through
  ``ix_measurement_session_config_solver_platform_taken`` (migration 0010).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Executable, bindparam, insert, select

from tuna.backends.base import Measurement as Measured
from tuna.db import Database
from tuna.db.enums import JobState
from tuna.db.models import Job, Measurement
from tuna.db.retry import with_retry

if TYPE_CHECKING:
    from tuna.jobs.states import ClaimedJob

_ROWS_PER_STATEMENT = 500
_REASON_CHARS = 255
_STRATEGY_CHARS = 32


@dataclass(frozen=True)
class MeasuredOn:
    """Where a worker measures: its ``platform`` row and its ``machine`` row (None when it
    is not a machine of the table, e.g. a local worker)."""

    platform: int
    machine: int | None = None


def measurement_rows(
    job: ClaimedJob, measurements: Iterable[Measured], on: MeasuredOn
) -> list[dict[str, Any]]:
    """The ``measurement`` rows of ``job``'s ``measurements`` taken ``on`` a platform."""
    return [
        {
            "session": job.session,
            "job": job.id,
            "config": job.config,
            "solver": job.solver,
            "params": m.params,
            "platform": on.platform,
            "machine": on.machine,
            "strategy": m.strategy[:_STRATEGY_CHARS] if m.strategy else None,
            "time_ms": m.time_ms,
            "valid": bool(m.valid and m.time_ms is not None),
            "reason": m.reason[:_REASON_CHARS] if m.reason else None,
        }
        for m in measurements
    ]


@functools.cache
def _insert() -> Executable:
    return insert(Measurement)


def write_measurements(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` (:func:`measurement_rows`), a few hundred per statement."""
    for i in range(0, len(rows), _ROWS_PER_STATEMENT):
        conn.execute(_insert(), list(rows[i : i + _ROWS_PER_STATEMENT]))


@functools.cache
def _held() -> Executable:
    return (
        select(Job.id)
        .where(
            Job.id == bindparam("id"),
            Job.attempt == bindparam("attempt"),
            Job.state == JobState.EVAL_START,
            Job.lease_owner == bindparam("owner"),
        )
        .with_for_update()
    )


def save_progress(
    db: Database,
    owner: str,
    job: ClaimedJob,
    measurements: Sequence[Measured],
    on: MeasuredOn,
) -> bool:
    """Save ``measurements`` of ``job``'s evaluation, still running; False (nothing
    written) when ``owner`` no longer holds the job at its attempt."""
    rows = measurement_rows(job, measurements, on)

    def save() -> bool:
        with db.transaction(immediate=True) as conn:
            held = conn.execute(
                _held(), {"id": job.id, "attempt": job.attempt, "owner": owner}
            ).first()
            if held is None:
                return False
            write_measurements(conn, rows)
            return True

    return with_retry(save, what=f"job {job.id}: save {len(rows)} measurement(s)")


@functools.cache
def _before() -> Executable:
    return (
        select(
            Measurement.config,
            Measurement.solver,
            Measurement.params,
            Measurement.time_ms,
            Measurement.valid,
            Measurement.reason,
            Measurement.strategy,
        )
        .where(
            Measurement.session == bindparam("session"),
            Measurement.config.in_(bindparam("configs", expanding=True)),
            Measurement.solver.in_(bindparam("solvers", expanding=True)),
            Measurement.platform == bindparam("platform"),
        )
        .order_by(Measurement.id)
    )


def measured_before(
    conn: Connection, session: int, platform: int, pairs: Iterable[tuple[int, int]]
) -> dict[tuple[int, int], tuple[Measured, ...]]:
    """(config, solver) -> what was measured for it in ``session`` on ``platform``, one per
    candidate (the latest, where one was measured twice); pairs with none are left out."""
    wanted = set(pairs)
    if not wanted:
        return {}
    found: dict[tuple[int, int], dict[str, Measured]] = defaultdict(dict)
    configs = sorted({c for c, _ in wanted})
    solvers = sorted({s for _, s in wanted})
    for i in range(0, len(configs), _ROWS_PER_STATEMENT):
        params = {
            "session": session,
            "platform": platform,
            "configs": configs[i : i + _ROWS_PER_STATEMENT],
            "solvers": solvers,
        }
        for r in conn.execute(_before(), params):
            if (r.config, r.solver) in wanted:
                found[(r.config, r.solver)][r.params] = Measured(
                    r.params, r.time_ms, bool(r.valid), r.reason, r.strategy
                )
    return {pair: tuple(by_params.values()) for pair, by_params in found.items()}


@functools.cache
def _facts_here() -> dict[str, Any]:
    from tuna.platforms.collect import collect

    return collect()


def measured_here(db: Database) -> MeasuredOn:
    """This process's platform (collected once, stored if missing): for a record made
    outside a worker, which names its own."""
    from tuna.platforms import report_platform

    return MeasuredOn(report_platform(db, _facts_here()))
