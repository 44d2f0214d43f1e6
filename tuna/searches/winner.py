"""The stored winner of a strategy search: the find and perf rows of its (session, config,
solver), which are the best that any search or job of the session measured for it (the
results side, beside :mod:`tuna.searches.query`'s runs of the search itself). Nothing
here writes."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from tuna.db import Database
from tuna.db.models import FindDb, Job, Search, SearchBuild, Solver
from tuna.library.stability import Spread, timing_spreads


@dataclass(frozen=True)
class StoredResult:
    """The find/perf rows of a strategy search's (session, config, solver): the stored
    winner, which is the best any search or job of the session measured for it."""

    time_ms: float
    params: str | None
    job: int | None
    mine: bool
    """Whether it is this search's (its final job wrote it)."""
    spread: Spread | None = None
    """How far apart its valid timings in the session were (None: none kept)."""


def stored_result(db: Database, search_id: int) -> StoredResult | None:
    """The stored result of a strategy search's problem and solver (None: not a strategy
    search, or nothing stored yet)."""
    with db.session() as s:
        row = s.execute(select(Search.session, Search.spec).where(Search.id == search_id)).first()
        if row is None or (row.spec or {}).get("kind") != "strategy":
            return None
        spec = row.spec
        found = s.execute(
            select(FindDb.time_ms, FindDb.params, FindDb.job, Job.search_build, FindDb.solver)
            .join(Solver, Solver.id == FindDb.solver)
            .join(Job, Job.id == FindDb.job, isouter=True)
            .where(
                FindDb.session == row.session,
                FindDb.config == int(spec["config"]),
                Solver.name == str(spec["solver"]),
            )
        ).first()
        if found is None:
            return None
        mine = False
        if found.search_build is not None:
            owner = s.scalar(select(SearchBuild.search).where(SearchBuild.id == found.search_build))
            mine = owner == search_id
        key = (row.session, int(spec["config"]), int(found.solver), found.params or "")
        spread = timing_spreads(s, [(key, float(found.time_ms))]).get(key)
    return StoredResult(float(found.time_ms), found.params, found.job, mine, spread)
