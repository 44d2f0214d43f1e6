"""Effort: how many measurements were spent per (problem, solver, platform), by which strategy.

Every candidate a worker times is one ``measurement`` row (session, config, solver,
platform, strategy, time, validity, when). The effort a target already has on a problem is
the count of the rows that count for it (:mod:`tuna.sessions.history`: compatible,
unretired sessions, young enough, on a platform whose fields match). ``load_jobs
--min-trials N`` skips the (config, solver) pairs with at least N of them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session as OrmSession

from tuna.db import Database
from tuna.db.bulk import chunks
from tuna.db.models import ConfigTag, ConvConfig, Measurement, Platform, Solver
from tuna.errors import NotFoundError
from tuna.sessions.history import Eligibility, eligibility
from tuna.sessions.session import session_info, session_row

_CONFIGS_PER_QUERY = 5_000


def tuned_enough(
    s: OrmSession, history: Eligibility, min_trials: int, config_ids: Sequence[int]
) -> dict[tuple[int, int], int]:
    """(config, solver) -> measurements that count, for the pairs of ``config_ids`` that
    have at least ``min_trials`` of them (valid or not: effort spent is effort spent)."""
    m = Measurement
    found: dict[tuple[int, int], int] = {}
    if not history.sessions:
        return found
    counted = func.count()
    for part in chunks(sorted(config_ids), _CONFIGS_PER_QUERY):
        q = (
            select(m.config, m.solver, counted)
            .where(m.config.in_(part), *history.where(m.session, m.taken, m.platform))
            .group_by(m.config, m.solver)
            .having(counted >= min_trials)
        )
        for config, solver, n in s.execute(q):
            found[(config, solver)] = n
    return found


@dataclass(frozen=True)
class Effort:
    """Measurements spent on one (problem, solver, platform) by one strategy."""

    key: str
    solver: str
    platform: int | None
    platform_digest: str | None
    strategy: str | None
    measurements: int
    valid: int
    best_ms: float | None
    first: dt.datetime | None
    last: dt.datetime | None


def effort(
    s: OrmSession, history: Eligibility, config_ids: Sequence[int] | None = None
) -> list[Effort]:
    """The effort of every (problem, solver, platform, strategy) that counts for the target,
    by key, solver, platform and strategy."""
    m = Measurement
    is_valid = m.valid.is_(True)
    q = (
        select(
            ConvConfig.fdb_key,
            Solver.name,
            m.platform,
            Platform.digest,
            m.strategy,
            func.count(),
            func.sum(case((is_valid, 1), else_=0)),
            func.min(case((is_valid, m.time_ms), else_=None)),
            func.min(m.taken),
            func.max(m.taken),
        )
        .join(ConvConfig, ConvConfig.id == m.config)
        .join(Solver, Solver.id == m.solver)
        .outerjoin(Platform, Platform.id == m.platform)
        .where(*history.where(m.session, m.taken, m.platform))
        .group_by(ConvConfig.fdb_key, Solver.name, m.platform, Platform.digest, m.strategy)
        .order_by(ConvConfig.fdb_key, Solver.name, m.platform, m.strategy)
    )
    rows: list[Effort] = []
    parts = [None] if config_ids is None else list(chunks(sorted(config_ids), _CONFIGS_PER_QUERY))
    for part in parts:
        query = q if part is None else q.where(m.config.in_(part))
        for key, solver, pid, digest, strategy, n, nvalid, best, first, last in s.execute(query):
            rows.append(
                Effort(key, solver, pid, digest, strategy, n, int(nvalid or 0), best, first, last)
            )
    return rows


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
