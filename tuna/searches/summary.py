"""Where a search stands, in a few numbers: what ``tuna search run`` prints at the end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from tuna.db import Database
from tuna.db.models import Search, SearchBuild, SearchRun
from tuna.errors import TunaError
from tuna.search import Objective
from tuna.searches.drive import run_of


@dataclass(frozen=True)
class SearchSummary:
    id: int
    name: str
    state: str
    reason: str | None
    runs: int
    finished: int
    invalid: int
    builds: int
    objective: dict[str, Any]
    best: dict[str, Any] | None  # the best run's point, value and seq


def find_search(db: Database, session_id: int, ref: str) -> int:
    """The id of the search ``ref`` (an id or a name) of session ``session_id``."""
    with db.session() as s:
        q = select(Search.id).where(Search.session == session_id)
        q = q.where(Search.id == int(ref)) if ref.isdigit() else q.where(Search.name == ref)
        found = s.execute(q).scalar()
    if found is None:
        raise TunaError(
            f"session {session_id} has no search {ref!r}; `tuna search list` shows them"
        )
    return int(found)


def summarize(db: Database, search_id: int) -> SearchSummary:
    with db.session() as s:
        row = s.get(Search, search_id)
        if row is None:
            raise TunaError(f"search {search_id} does not exist")
        runs = s.execute(
            select(
                SearchRun.seq, SearchRun.point, SearchRun.config, SearchRun.stats,
                SearchRun.valid, SearchRun.reason,
            ).where(SearchRun.search == search_id).order_by(SearchRun.seq)
        ).all()  # fmt: skip
        n_builds = s.execute(
            select(func.count()).where(SearchBuild.search == search_id)
        ).scalar_one()
        objective = dict(row.objective)
        name, state, reason = row.name, row.state, row.reason
    done = [r for r in runs if r.valid is not None]
    obj = Objective(objective["stat"], objective.get("goal", "min"), objective.get("valid"))
    best = None
    counted = [(r, run_of(r)) for r in done]
    winners = [(r, run) for r, run in counted if obj.counts(run)]
    if winners:
        pick = max if obj.goal == "max" else min
        r, run = pick(winners, key=lambda w: w[1].stats[obj.stat])
        best = {"seq": r.seq, "point": dict(r.point), "value": run.stats[obj.stat]}
    return SearchSummary(
        id=search_id,
        name=name,
        state=state,
        reason=reason,
        runs=len(runs),
        finished=len(done),
        invalid=sum(1 for r in done if not r.valid),
        builds=int(n_builds),
        objective=objective,
        best=best,
    )
