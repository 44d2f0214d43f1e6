"""Effort: how many measurements were spent per (problem, solver, platform), by which strategy.

Every candidate a worker times is one ``measurement`` row (session, config, solver,
platform, strategy, time, validity, when), and is added to a count in
``measurement_effort`` (session, config, solver, platform, day, strategy) in the same
transaction (:func:`tuna.jobs.measurements.write_measurements`). The effort a target
already has on a problem is the sum of the counts that count for it
(:mod:`tuna.sessions.history`: compatible, unretired sessions, young enough — by day —,
on a platform whose fields match). ``load_jobs --min-trials N`` skips the (config,
solver) pairs with at least N of them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy import Select, func, null, select
from sqlalchemy.orm import Session as OrmSession

from tuna.db import Database
from tuna.db.bulk import chunks
from tuna.db.models import (
    ConfigTag,
    ConvConfig,
    Measurement,
    MeasurementEffort,
    Platform,
    Solver,
)
from tuna.errors import NotFoundError
from tuna.sessions.history import Eligibility, eligibility
from tuna.sessions.session import session_info, session_row

_CONFIGS_PER_QUERY = 5_000
_IDS_PER_QUERY = 900  # below MariaDB's in_predicate_conversion_threshold (1000): index ranges
_ONE_PASS_FROM = 20_000  # configs from which one pass over the sessions' ranges is cheaper


def tuned_enough(
    s: OrmSession, history: Eligibility, min_trials: int, config_ids: Sequence[int]
) -> dict[tuple[int, int], int]:
    """(config, solver) -> measurements that count, for the pairs of ``config_ids`` that
    have at least ``min_trials`` of them (valid or not: effort spent is effort spent).

    Read from the effort counts (``measurement_effort``, one row per session, problem,
    solver, platform, day and strategy), not from the measurement rows. Many configs (a
    network's tag) are counted in one pass over the counting sessions' key ranges and
    picked here; a few are asked for by id, in lists short enough to stay key ranges.
    """
    found: dict[tuple[int, int], int] = {}
    if not history.sessions or not config_ids:
        return found
    if len(config_ids) >= _ONE_PASS_FROM:
        wanted = set(config_ids)
        for config, solver, n in s.execute(tuned_query(history, min_trials, None)):
            if config in wanted:
                found[(config, solver)] = int(n)
        return found
    for part in chunks(sorted(config_ids), _IDS_PER_QUERY):
        for config, solver, n in s.execute(tuned_query(history, min_trials, part)):
            found[(config, solver)] = int(n)
    return found


def tuned_query(
    history: Eligibility, min_trials: int, config_ids: Sequence[int] | None
) -> Select[int, int, int]:
    """The effort count of the pairs of ``config_ids`` (None: all) with at least
    ``min_trials`` measurements that count (``bench/library_min_trials.py`` explains it):
    a range read of ``measurement_effort``'s primary key per counting session."""
    e = MeasurementEffort
    counted = func.sum(e.measurements)
    q = (
        select(e.config, e.solver, counted)
        .where(*history.where_day(e.session, e.day, e.platform))
        .group_by(e.config, e.solver)
        .having(counted >= min_trials)
        .order_by(null())  # no order wanted: MariaDB sorts a GROUP BY's result unless told
    )
    return q if config_ids is None else q.where(e.config.in_(config_ids))


@dataclass(frozen=True)
class Effort:
    """Measurements spent on one (problem, solver, platform) by one strategy: how many and
    how many valid (the effort counts: pruned rows still count), the largest budget the
    strategy said it had (None: not said), the fastest valid time among the rows kept, and
    the first and last day measured."""

    key: str
    solver: str
    platform: int | None
    platform_digest: str | None
    strategy: str | None
    measurements: int
    valid: int
    best_ms: float | None
    first: dt.date | None
    last: dt.date | None
    budget: int | None = None


def effort(
    s: OrmSession, history: Eligibility, config_ids: Sequence[int] | None = None
) -> list[Effort]:
    """The effort of every (problem, solver, platform, strategy) that counts for the target,
    by key, solver, platform and strategy: the counts from ``measurement_effort``, the
    best time from the measurement rows."""
    e, m = MeasurementEffort, Measurement
    counted = (
        select(
            e.config,
            ConvConfig.fdb_key,
            e.solver,
            Solver.name,
            e.platform,
            Platform.digest,
            e.strategy,
            func.sum(e.measurements),
            func.sum(e.valid),
            func.max(e.budget),
            func.min(e.day),
            func.max(e.day),
        )
        .join(ConvConfig, ConvConfig.id == e.config)
        .join(Solver, Solver.id == e.solver)
        .outerjoin(Platform, Platform.id == e.platform)
        .where(*history.where_day(e.session, e.day, e.platform))
        .group_by(
            e.config,
            ConvConfig.fdb_key,
            e.solver,
            Solver.name,
            e.platform,
            Platform.digest,
            e.strategy,
        )  # fmt: skip
    )
    fastest = (
        select(m.config, m.solver, m.platform, func.coalesce(m.strategy, ""), func.min(m.time_ms))
        .where(m.valid.is_(True), *history.where(m.session, m.taken, m.platform))
        .group_by(m.config, m.solver, m.platform, func.coalesce(m.strategy, ""))
    )
    rows: list[Effort] = []
    parts = [None] if config_ids is None else list(chunks(sorted(config_ids), _CONFIGS_PER_QUERY))
    for part in parts:
        cq = counted if part is None else counted.where(e.config.in_(part))
        fq = fastest if part is None else fastest.where(m.config.in_(part))
        best = {(c, sv, p, st): t for c, sv, p, st, t in s.execute(fq)}
        for row in s.execute(cq):
            config, key, solver_id, solver, pid, digest, strategy = row[:7]
            n, nvalid, budget, first, last = row[7:]
            rows.append(
                Effort(
                    key, solver, pid, digest, strategy or None, int(n), int(nvalid or 0),
                    best.get((config, solver_id, pid, strategy)), _day(first), _day(last),
                    None if budget is None else int(budget),
                )
            )  # fmt: skip
    rows.sort(key=lambda r: (r.key, r.solver, r.platform or 0, r.strategy or ""))
    return rows


def _day(value: object) -> dt.date | None:
    """A DATE as read back (SQLite's func results are text)."""
    if value is None or isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value))


def session_effort(
    db: Database, session_id: int, tag: str | None = None
) -> tuple[list[Effort], Eligibility]:
    """The effort that counts for a session (its own and compatible history), and why
    other history does not count."""
    with db.session() as s:
        history = eligibility(s, session_info(session_row(s, session_id)))
        config_ids = None
        if tag is not None:
            config_ids = list(s.scalars(select(ConfigTag.config).where(ConfigTag.tag == tag)))
            if not config_ids:
                raise NotFoundError(f"no config is tagged {tag!r}; import_configs -t {tag} -f FILE")
        return effort(s, history, config_ids), history


def counting_measurements(
    s: OrmSession,
    history: Eligibility,
    solver: int,
    configs: Sequence[int] | None = None,
    *,
    valid_only: bool = False,
    until: int | None = None,
) -> Iterator[tuple[int, str, float | None, bool]]:
    """(config, params, time_ms, valid) of the measurements of ``solver`` that count for
    the target, by config and id: what a search resumes from (its own problem) and what a
    model-based strategy transfers from (the other problems' rows), under the same rules
    as every other decision. ``until``: only rows with an id up to it (a snapshot: a
    strategy's history must read the same when its search is resumed)."""
    m = Measurement
    q = (
        select(m.config, m.params, m.time_ms, m.valid)
        .where(m.solver == solver, *history.where(m.session, m.taken, m.platform))
        .order_by(m.config, m.id)
    )
    if valid_only:
        q = q.where(m.valid.is_(True))
    if until is not None:
        q = q.where(m.id <= until)
    if not history.sessions:
        return
    parts = [None] if configs is None else list(chunks(sorted(configs), _CONFIGS_PER_QUERY))
    for part in parts:
        query = q if part is None else q.where(m.config.in_(part))
        for config, params, time_ms, valid in s.execute(query):
            yield config, params, time_ms, bool(valid)
