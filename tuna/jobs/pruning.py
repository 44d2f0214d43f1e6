"""A search run's intermediate values as it reports them, and its pruner's verdict.

The worker gives a run of a search with a pruner a :class:`RunReports` as its
``SearchWork.report``: each intermediate value the run prints is written into its
``search_run.intermediate`` (so the search's other runs, on any worker, are judged against
it), then the search's pruner (:mod:`tuna.searchers.prune`) judges it against the curves
of the search's other runs, read in the same transaction when the report can stop the
run at all (past the median's warm-up steps; at a new rung of successive halving). A
verdict to stop comes back as its reason; the backend kills the run and the Run is
recorded pruned (:func:`tuna.jobs.search_results.store_runs`).

Only a run not ended yet is written (``valid`` NULL): a late report of a run another
worker already recorded changes nothing. A database that cannot be reached does not stop
the run: the report is logged and the run goes on (it is judged again at its next one).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select

from tuna.db import Database, tables
from tuna.jobs.search_results import store_intermediate
from tuna.searchers.pareto import Goal
from tuna.searchers.prune import Peer, Pruner

__all__ = ["RunReports", "curve_of", "peers"]

log = logging.getLogger(__name__)

SearchRun = tables.search_run.c


def curve_of(stored: Sequence[Sequence[Any]] | None) -> dict[int, float]:
    """``search_run.intermediate`` (``[[step, value], ...]``) as step -> value."""
    return {int(step): float(value) for step, value in stored or ()}


def peers(conn: Connection, search: int, run: int | None = None) -> list[Peer]:
    """The curves of the search's runs that reported any, but ``run`` (completed: ended
    valid, not pruned)."""
    q = select(SearchRun.intermediate, SearchRun.valid, SearchRun.pruned).where(
        SearchRun.search == search, SearchRun.intermediate.is_not(None)
    )
    if run is not None:
        q = q.where(SearchRun.id != run)
    return [
        Peer(curve_of(r.intermediate), completed=bool(r.valid) and not r.pruned)
        for r in conn.execute(q)
    ]


class RunReports:
    """``SearchWork.report`` of one run: store each value, answer the pruner's verdict."""

    def __init__(self, db: Database, search: int, run: int, pruner: Pruner, goal: Goal) -> None:
        self.db = db
        self.search = search
        self.run = run
        self.pruner = pruner
        self.goal = goal
        self.curve: dict[int, float] = {}

    def __call__(self, step: int, value: float) -> str | None:
        before = dict(self.curve)
        self.curve[step] = value
        try:
            with self.db.transaction() as conn:
                store_intermediate(conn, self.run, self.curve)
                if not self.pruner.judges(step, before):
                    return None  # stored for the others; this report cannot stop the run
                others = peers(conn, self.search, self.run)
        except Exception:  # the database's trouble: the run goes on, judged at its next report
            log.warning("search run %d: intermediate value not stored", self.run, exc_info=True)
            return None
        verdict = self.pruner.judge(step, value, before, others, self.goal)
        if verdict is not None:
            log.info("search run %d: %s", self.run, verdict)
        return verdict
