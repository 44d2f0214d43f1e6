"""Retention: ``tuna history prune --keep-best K`` keeps the K fastest measurements per
(problem, solver) and deletes the rest.

Keeping everything is the default (nothing prunes unless asked); ``K`` must be at least 1.
Within a (config, solver) the valid measurements are ranked by time (then id, the older
first); those past the K-th go, and so do the invalid ones (a failed candidate is not among
the best). A measurement whose (session, config, solver) a golden version holds is never
deleted: it stays outside the count. A dry run reports the same numbers and deletes nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import delete, select
from sqlalchemy.orm import Session as OrmSession

from tuna.db import Database
from tuna.db.bulk import chunks
from tuna.db.models import ConvConfig, Golden, Measurement, Solver
from tuna.errors import TunaError
from tuna.sessions.session import session_row

_DELETE_CHUNK = 5_000


@dataclass
class PruneReport:
    keep_best: int
    dry_run: bool
    groups: int = 0  # (config, solver) groups that lose rows
    deleted: int = 0
    kept: int = 0
    protected: int = 0  # rows a golden version's (session, config, solver) holds
    by_group: Counter[tuple[str, str]] = field(default_factory=Counter)  # (key, solver) -> rows


def prune(
    db: Database, keep_best: int, *, session: int | None = None, dry_run: bool = False
) -> PruneReport:
    """Delete all but the ``keep_best`` fastest valid measurements per (config, solver)."""
    if keep_best < 1:
        raise TunaError(
            f"--keep-best {keep_best}: keep at least 1 per (problem, solver); to keep "
            "everything (the default) do not prune"
        )
    report = PruneReport(keep_best, dry_run)
    with db.session() as s:
        if session is not None:
            session_row(s, session)
        golden = {
            (a, b, c) for a, b, c in s.execute(select(Golden.session, Golden.config, Golden.solver))
        }
        doomed = _doomed(s, keep_best, session, golden, report)
        names = _names(s, {pair for pair, _ in doomed})
        for pair, _id in doomed:
            report.by_group[names[pair]] += 1
        report.groups = len(report.by_group)
        report.deleted = len(doomed)
        if not dry_run:
            ids = sorted(i for _, i in doomed)
            for part in chunks(ids, _DELETE_CHUNK):
                s.execute(delete(Measurement).where(Measurement.id.in_(part)))
    return report


def _doomed(
    s: OrmSession,
    keep_best: int,
    session: int | None,
    golden: set[tuple[int, int, int]],
    report: PruneReport,
) -> list[tuple[tuple[int, int], int]]:
    """((config, solver), id) of every measurement to delete; counts kept and protected."""
    m = Measurement
    scope = [] if session is None else [m.session == session]
    ranked = (
        select(m.id, m.session, m.config, m.solver)
        .where(m.valid.is_(True), *scope)
        .order_by(m.config, m.solver, m.time_ms, m.id)
    )
    invalid = select(m.id, m.session, m.config, m.solver).where(m.valid.is_not(True), *scope)
    doomed: list[tuple[tuple[int, int], int]] = []
    kept_per: Counter[tuple[int, int]] = Counter()
    for mid, sess, config, solver in s.execute(ranked):
        if (sess, config, solver) in golden:
            report.protected += 1
        elif kept_per[(config, solver)] < keep_best:
            kept_per[(config, solver)] += 1
            report.kept += 1
        else:
            doomed.append(((config, solver), mid))
    for mid, sess, config, solver in s.execute(invalid):
        if (sess, config, solver) in golden:
            report.protected += 1
        else:
            doomed.append(((config, solver), mid))
    return doomed


def _names(s: OrmSession, pairs: set[tuple[int, int]]) -> dict[tuple[int, int], tuple[str, str]]:
    configs = {c for c, _ in pairs}
    keys: dict[int, str] = {}
    for part in chunks(sorted(configs), 1000):
        keys.update(s.execute(select(ConvConfig.id, ConvConfig.fdb_key).where(
            ConvConfig.id.in_(part))).all())  # fmt: skip
    solvers = dict(s.execute(select(Solver.id, Solver.name)).all())
    return {(c, v): (keys[c], solvers[v]) for c, v in pairs}
