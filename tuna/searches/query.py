"""Searches, read-only: what ``tuna search list/show``, the report and the dashboard show.

Every query goes through an index: a session's searches through ``search``'s unique
(session, name), a search's runs through ``search_run``'s unique (search, seq), its builds
through ``search_build``'s unique (search, build_key). The aggregates of a list read the
runs of the listed searches only, never the whole table. Nothing here writes.

A run **counts** towards the objective when it finished valid with a value
(``search_run.valid`` and ``search_run.value``, which the driver fills from the stats) and,
when the objective names a validity stat (``objective.valid``, e.g. ``result_validity``),
that stat says valid (:meth:`tuna.search.Objective.counts`). Without a validity stat the
aggregates are SQL's; with one, the valid runs' stats are read and checked here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import and_, case, func, select
from sqlalchemy.engine import Connection

from tuna.db import Database
from tuna.db.models import Machine, Search, SearchBuild, SearchRun, TuningSession
from tuna.errors import NotFoundError, TunaError
from tuna.search import Objective, Run
from tuna.search.progress import Goal, best_so_far, improvements

RunStatus = Literal["valid", "invalid", "pending"]
RUN_STATUSES: tuple[RunStatus, ...] = ("valid", "invalid", "pending")
RunOrder = Literal["seq", "best"]


@dataclass(frozen=True)
class SearchSummary:
    """A search and how far it got."""

    id: int
    session: int
    name: str
    state: str
    backend: str
    searcher: str | None
    stat: str
    goal: Goal
    validity: str | None
    """The stat that must say a run is valid for it to count (None: none)."""
    budget: int | None
    parallelism: int
    runs: int
    """Runs proposed so far (finished or in flight)."""
    done: int
    valid: int
    builds: int
    builds_done: int
    best: float | None
    created: dt.datetime
    finished: dt.datetime | None
    reason: str | None

    @property
    def in_flight(self) -> int:
        return self.runs - self.done

    @property
    def objective(self) -> Objective:
        return Objective(self.stat, self.goal, self.validity)

    def counts(self, valid: bool | None, value: float | None, stats: Any) -> bool:
        """Whether a run with these columns counts towards the objective."""
        return _counts(self.objective, valid, value, stats)

    @property
    def label(self) -> str:
        """How a figure's legend names this search: its name and searcher."""
        return f"{self.name} ({self.searcher or 'default searcher'})"


@dataclass(frozen=True)
class RunRow:
    """One run of a search as its runs table shows it."""

    seq: int
    point: dict[str, Any]
    build: int | None
    build_params: dict[str, Any]
    run_params: dict[str, Any]
    stats: dict[str, Any] | None
    value: float | None
    valid: bool | None
    reason: str | None
    machine: str | None
    created: dt.datetime | None
    finished: dt.datetime | None

    @property
    def status(self) -> RunStatus:
        return "pending" if self.valid is None else "valid" if self.valid else "invalid"


@dataclass(frozen=True)
class Measured:
    """A search's finished runs in the order they landed: each one's value (None when it
    does not count) and the best so far after it."""

    search: SearchSummary
    seqs: list[int]
    values: list[float | None]

    @property
    def best(self) -> list[float | None]:
        return best_so_far(self.values, self.search.goal)

    @property
    def steps(self) -> list[tuple[int, float]]:
        """(measurement, new best): the corners of the best-so-far curve."""
        return [(s.n, s.best) for s in improvements(self.values, self.search.goal)]


def _counts(objective: Objective, valid: bool | None, value: float | None, stats: Any) -> bool:
    if not valid or value is None:
        return False
    if objective.validity is None:
        return True
    return objective.counts(Run({}, stats if isinstance(stats, dict) else {}))


def _objective(raw: Any) -> tuple[str, Goal, str | None]:
    if isinstance(raw, dict) and isinstance(raw.get("stat"), str):
        goal: Goal = "max" if raw.get("goal") == "max" else "min"
        valid = raw.get("valid")
        return raw["stat"], goal, valid if isinstance(valid, str) and valid else None
    return "?", "min", None


def _best_checked(conn: Connection, search_id: int, objective: Objective) -> float | None:
    """The best value among the runs that count, checking each valid run's validity stat."""
    q = select(SearchRun.value, SearchRun.stats).where(
        SearchRun.search == search_id, SearchRun.valid.is_(True), SearchRun.value.is_not(None)
    )
    best: float | None = None
    for value, stats in conn.execute(q):
        if _counts(objective, True, value, stats) and (
            best is None or (value > best if objective.goal == "max" else value < best)
        ):
            best = float(value)
    return best


_SEARCH_COLUMNS = (
    Search.id,
    Search.session,
    Search.name,
    Search.state,
    Search.backend,
    Search.searcher,
    Search.objective,
    Search.budget,
    Search.parallelism,
    Search.created,
    Search.finished,
    Search.reason,
)


def _summaries(conn: Connection, rows: Sequence[Any]) -> list[SearchSummary]:
    """Each search row with its run and build aggregates (two grouped range reads)."""
    ids = [r.id for r in rows]
    runs: dict[int, Any] = {}
    builds: dict[int, tuple[int, int]] = {}
    if ids:
        counts = SearchRun.valid.is_(True) & SearchRun.value.is_not(None)
        for r in conn.execute(
            select(
                SearchRun.search,
                func.count().label("runs"),
                func.count(SearchRun.valid).label("done"),
                func.sum(case((SearchRun.valid.is_(True), 1), else_=0)).label("valid"),
                func.min(case((counts, SearchRun.value))).label("lo"),
                func.max(case((counts, SearchRun.value))).label("hi"),
            )
            .where(SearchRun.search.in_(ids))
            .group_by(SearchRun.search)
        ):
            runs[r.search] = r
        for sid, n, done in conn.execute(
            select(SearchBuild.search, func.count(), func.count(SearchBuild.artifact))
            .where(SearchBuild.search.in_(ids))
            .group_by(SearchBuild.search)
        ):
            builds[sid] = (int(n), int(done))
    out = []
    for r in rows:
        stat, goal, validity = _objective(r.objective)
        agg = runs.get(r.id)
        if validity is not None and agg is not None:
            best = _best_checked(conn, r.id, Objective(stat, goal, validity))
        else:
            best = None if agg is None else agg.hi if goal == "max" else agg.lo
        nb, nb_done = builds.get(r.id, (0, 0))
        out.append(
            SearchSummary(
                id=r.id,
                session=r.session,
                name=r.name,
                state=r.state,
                backend=r.backend,
                searcher=r.searcher,
                stat=stat,
                goal=goal,
                validity=validity,
                budget=r.budget,
                parallelism=r.parallelism,
                runs=int(agg.runs) if agg else 0,
                done=int(agg.done) if agg else 0,
                valid=int(agg.valid or 0) if agg else 0,
                builds=nb,
                builds_done=nb_done,
                best=None if best is None else float(best),
                created=r.created,
                finished=r.finished,
                reason=r.reason,
            )
        )
    return out


def list_searches(db: Database, session_id: int) -> list[SearchSummary]:
    """The session's searches, oldest first; a missing session is a :class:`NotFoundError`."""
    with db.transaction() as conn:
        found = select(TuningSession.id).where(TuningSession.id == session_id)
        if conn.execute(found).first() is None:
            raise NotFoundError(
                f"session {session_id} does not exist; `tuna session list` shows them"
            )
        rows = conn.execute(
            select(*_SEARCH_COLUMNS).where(Search.session == session_id).order_by(Search.id)
        ).all()
        return _summaries(conn, rows)


def searches_of(db: Database, session_ids: Iterable[int]) -> list[SearchSummary]:
    """The searches of several sessions (the report's), by session then id."""
    ids = list(session_ids)
    if not ids:
        return []
    with db.transaction() as conn:
        rows = conn.execute(
            select(*_SEARCH_COLUMNS)
            .where(Search.session.in_(ids))
            .order_by(Search.session, Search.id)
        ).all()
        return _summaries(conn, rows)


def find_search(db: Database, ref: str | int, session_id: int | None = None) -> SearchSummary:
    """A search by id, or by name within ``session_id``; else a :class:`NotFoundError`."""
    with db.transaction() as conn:
        q = select(*_SEARCH_COLUMNS)
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit() and session_id is None):
            q = q.where(Search.id == int(ref))
            where = f"search {ref}"
        else:
            if session_id is None:
                raise TunaError(
                    f"search {ref!r}: a search named by name needs its session, e.g. "
                    f"`tuna search show -s 3 {ref}` (or give its id)"
                )
            q = q.where(Search.session == session_id, Search.name == str(ref))
            where = f"search {ref!r} in session {session_id}"
        rows = conn.execute(q).all()
        if not rows:
            listing = f" `tuna search list -s {session_id}`" if session_id is not None else (
                " `tuna search list -s SESSION`")  # fmt: skip
            raise NotFoundError(f"{where} does not exist;{listing} shows the searches")
        return _summaries(conn, rows)[0]


def runs(
    db: Database,
    search: SearchSummary,
    *,
    status: RunStatus | None = None,
    build: int | None = None,
    order: RunOrder = "seq",
    after: int = -1,
    limit: int | None = 100,
) -> list[RunRow]:
    """A page of the search's runs: by ``seq`` after ``after`` (keyset paging), or the
    best that count first (``order="best"``, ``after`` ignored)."""
    q = (
        select(
            SearchRun.seq,
            SearchRun.point,
            SearchRun.build,
            SearchBuild.params.label("build_params"),
            SearchRun.stats,
            SearchRun.value,
            SearchRun.valid,
            SearchRun.reason,
            Machine.hostname,
            SearchRun.created,
            SearchRun.finished,
        )
        .select_from(SearchRun)
        .outerjoin(SearchBuild, SearchBuild.id == SearchRun.build)
        .outerjoin(Machine, Machine.id == SearchRun.machine)
        .where(SearchRun.search == search.id)
    )
    if status == "pending":
        q = q.where(SearchRun.valid.is_(None))
    elif status is not None:
        q = q.where(SearchRun.valid.is_(status == "valid"))
    if build is not None:
        q = q.where(SearchRun.build == build)
    if order == "best":
        value = SearchRun.value.desc() if search.goal == "max" else SearchRun.value.asc()
        q = q.where(SearchRun.valid.is_(True), SearchRun.value.is_not(None))
        q = q.order_by(value, SearchRun.seq)
    else:
        q = q.where(SearchRun.seq > after).order_by(SearchRun.seq)
    if order == "best" and search.validity is not None:
        # The validity stat is in the JSON stats: read best first until enough count.
        with db.transaction() as conn:
            found = []
            for r in conn.execute(q):
                if search.counts(r.valid, r.value, r.stats):
                    found.append(_run_row(r))
                    if limit is not None and len(found) >= limit:
                        break
            return found
    if limit is not None:
        q = q.limit(limit)
    with db.transaction() as conn:
        return [_run_row(r) for r in conn.execute(q)]


def _run_row(r: Any) -> RunRow:
    point = dict(r.point or {})
    build_params = dict(r.build_params or {})
    run_params = {k: v for k, v in point.items() if k not in build_params}
    return RunRow(
        r.seq, point, r.build, build_params, run_params, r.stats, r.value, r.valid, r.reason,
        r.hostname, r.created, r.finished,
    )  # fmt: skip


def best_run(db: Database, search: SearchSummary) -> RunRow | None:
    """The run with the best value among those that count (the earliest of equals)."""
    found = runs(db, search, order="best", limit=1)
    return found[0] if found else None


def measured(db: Database, search: SearchSummary) -> Measured:
    """The search's finished runs in the order they landed (then by seq)."""
    counts = and_(SearchRun.valid.is_(True), SearchRun.value.is_not(None))
    columns: list[Any] = [SearchRun.seq, case((counts, SearchRun.value))]
    if search.validity is not None:  # the validity stat is read from the JSON stats
        columns.append(SearchRun.stats)
    q = (
        select(*columns)
        .where(SearchRun.search == search.id, SearchRun.valid.is_not(None))
        .order_by(SearchRun.finished, SearchRun.seq)
    )
    with db.transaction() as conn:
        rows = conn.execute(q).all()
    values = [
        None
        if r[1] is None or not search.counts(True, r[1], r[2] if len(r) > 2 else None)
        else float(r[1])
        for r in rows
    ]
    return Measured(search, [int(r[0]) for r in rows], values)
