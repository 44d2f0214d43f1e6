"""Measurement rows: every candidate an evaluation timed, where and for whom.

* :func:`write_measurements` inserts an evaluation's rows, inside the fenced transaction
  that records the job (one prebuilt multi-row INSERT per batch), and adds them to the
  effort counts (``measurement_effort``, migration 0014) in the same transaction: a count
  is there exactly when its rows are (a lost job's rows and counts roll back together);
* :func:`save_progress` saves rows taken so far by an evaluation still running, in a small
  transaction of its own, fenced as a record is (the job must still be held by its
  owner at its attempt), so that a worker killed midway loses only what it measured
  since its last save;
* :func:`measured_before` is what a resumed evaluation starts from: the rows of
  (session, config, solver) on this platform, read through
  ``ix_measurement_session_config_solver_platform`` (migration 0017); a strategy's round
  starts from its own job's rows only (:func:`measured_by_jobs`): its search's driver
  already decided which of its candidates history had measured (``--remeasure``).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Executable, bindparam, case, func, insert, select
from sqlalchemy.dialects import mysql, sqlite

from tuna.backends.base import Measurement as Measured
from tuna.db import Database, tables
from tuna.db.enums import JobState
from tuna.db.retry import with_retry
from tuna.db.tables import measurement_effort
from tuna.jobs.values import ClaimedJob, stands_for

# The tables' columns, named as the ORM classes: statements here are Core (tuna.db.tables),
# so a worker never imports the ORM.
Job = tables.job.c
Measurement = tables.measurement.c

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
            "budget": m.budget,  # effort counts only (count_effort), not a row's column
        }
        for m in measurements
    ]


@functools.cache
def _insert() -> Executable:
    return insert(tables.measurement)


def write_measurements(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` (:func:`measurement_rows`), a few hundred per statement, and add
    them to the effort counts, in the caller's transaction.

    A row may carry ``taken`` (an import or a test's history): it is counted on that day;
    the others are taken now (the server's clock) and counted on the server's date."""
    columns = [{k: v for k, v in r.items() if k != "budget"} for r in rows]
    for i in range(0, len(columns), _ROWS_PER_STATEMENT):
        conn.execute(_insert(), columns[i : i + _ROWS_PER_STATEMENT])
    count_effort(conn, rows)


_EffortKey = tuple[int, int, int, int, str, "dt.date | None"]


def count_effort(conn: Connection, rows: Iterable[dict[str, Any]]) -> None:
    """Add ``rows`` to ``measurement_effort``: one upsert per (session, config, solver,
    platform, strategy, day), in key order (concurrent records lock the same keys in the
    same order)."""
    spent: Counter[_EffortKey] = Counter()
    valid: Counter[_EffortKey] = Counter()
    budget: dict[_EffortKey, int] = {}
    for r in rows:
        taken = r.get("taken")
        day = taken.date() if isinstance(taken, dt.datetime) else None
        key = (r["session"], r["config"], r["solver"], r["platform"], r["strategy"] or "", day)
        spent[key] += 1
        valid[key] += 1 if r["valid"] else 0
        if r.get("budget") is not None:
            budget[key] = max(budget.get(key, 0), int(r["budget"]))
    now = [k for k in spent if k[5] is None]
    dated = [k for k in spent if k[5] is not None]
    mysql_dialect = conn.dialect.name in ("mysql", "mariadb")
    for keys, today in ((sorted(now, key=_order), True), (sorted(dated, key=_order), False)):
        params = [
            {
                "session": k[0], "config": k[1], "solver": k[2], "platform": k[3],
                "strategy": k[4], "measurements": spent[k], "valid": valid[k],
                "budget": budget.get(k), **({} if today else {"day": k[5]}),
            }
            for k in keys
        ]  # fmt: skip
        for i in range(0, len(params), _ROWS_PER_STATEMENT):
            conn.execute(_add_effort(mysql_dialect, today), params[i : i + _ROWS_PER_STATEMENT])


def _order(key: _EffortKey) -> tuple[Any, ...]:
    return (*key[:5], key[5] or dt.date.min)


@functools.lru_cache(maxsize=4)
def _add_effort(mysql_dialect: bool, today: bool) -> Executable:
    """INSERT of a count, or adding it to the count already there (``today``: the day is
    the server's date)."""
    e = measurement_effort
    if mysql_dialect:
        ins = mysql.insert(e)
        if today:
            ins = ins.values(day=func.current_date())
        return ins.on_duplicate_key_update(
            measurements=e.c.measurements + ins.inserted.measurements,
            valid=e.c.valid + ins.inserted.valid,
            budget=_larger(e.c.budget, ins.inserted.budget),
        )
    lite = sqlite.insert(e)
    if today:
        lite = lite.values(day=func.current_date())
    return lite.on_conflict_do_update(
        index_elements=["session", "config", "solver", "platform", "day", "strategy"],
        set_={
            "measurements": e.c.measurements + lite.excluded.measurements,
            "valid": e.c.valid + lite.excluded.valid,
            "budget": _larger(e.c.budget, lite.excluded.budget),
        },
    )


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
    candidate (where one was measured twice: the fastest valid, as the find/perf rows keep
    the fastest, else the latest); pairs with none are left out."""
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
                kept = found[(r.config, r.solver)]
                m = Measured(r.params, r.time_ms, bool(r.valid), r.reason, r.strategy)
                if stands_for(m, kept.get(r.params)):
                    kept[r.params] = m
    return {pair: tuple(by_params.values()) for pair, by_params in found.items()}


@functools.cache
def _by_jobs() -> Executable:
    return (
        select(
            Measurement.job,
            Measurement.params,
            Measurement.time_ms,
            Measurement.valid,
            Measurement.reason,
            Measurement.strategy,
        )
        .where(Measurement.job.in_(bindparam("jobs", expanding=True)))
        .order_by(Measurement.id)
    )


def measured_by_jobs(conn: Connection, jobs: Iterable[int]) -> dict[int, tuple[Measured, ...]]:
    """job id -> what that job measured (saved progress of an attempt that was lost), one
    per candidate as :func:`measured_before` keeps them; jobs with none are left out."""
    found: dict[int, dict[str, Measured]] = defaultdict(dict)
    ids = sorted(set(jobs))
    for i in range(0, len(ids), _ROWS_PER_STATEMENT):
        for r in conn.execute(_by_jobs(), {"jobs": ids[i : i + _ROWS_PER_STATEMENT]}):
            kept = found[int(r.job)]
            m = Measured(r.params, r.time_ms, bool(r.valid), r.reason, r.strategy)
            if stands_for(m, kept.get(r.params)):
                kept[r.params] = m
    return {job: tuple(by_params.values()) for job, by_params in found.items()}


@functools.cache
def _facts_here() -> dict[str, Any]:
    from tuna.platforms.collect import collect

    return collect()


def measured_here(db: Database) -> MeasuredOn:
    """This process's platform (collected once, stored if missing): for a record made
    outside a worker, which names its own."""
    from tuna.platforms import report_platform

    return MeasuredOn(report_platform(db, _facts_here()))


def _larger(old: Any, new: Any) -> Any:
    """The larger of two budgets, either of which may be NULL (GREATEST and SQLite's MAX
    give NULL then)."""
    return case((old.is_(None), new), (new.is_(None), old), (new > old, new), else_=old)
