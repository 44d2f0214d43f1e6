"""Searches, read-only: what ``tuna search list/show``, the report and the dashboard show.

Every query goes through an index: a session's searches through ``search``'s unique
(session, name), a search's runs through ``search_run``'s unique (search, seq), its builds
through ``search_build``'s unique (search, build_key). The aggregates of a list read the
runs of the listed searches only, never the whole table. Nothing here writes.

A run **counts** towards the objective when it finished valid with a value
(``search_run.valid`` and ``search_run.value``, which the driver fills from the stats) and,
when the objective names a validity stat (``objective.valid``, e.g. ``result_validity``),
that stat says valid, and it meets the objective's constraints (read against the stats of
the search's baseline run, ``seq`` -1, when it has one) and has every objective's stat
(:meth:`tuna.searchers.Objective.counts`). Without a validity stat, constraints or more
objectives the aggregates are SQL's; with one, the valid runs' stats are read and checked
here. A search's answer is its **Pareto front** (:func:`pareto`): derived from the stored
runs by the one function every view calls, so ``tuna search show``, the dashboard and
``tuna best --search`` agree (with one objective, the best run and any equal to it).

Runs **land** in the order of ``search_run.landed`` (1, 2, 3, ... per search, numbered by
the result writer as each run ends: :mod:`tuna.jobs.search_results`): the best-so-far
curve's order, and the earliest of equal values.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, case, false, func, or_, select, true
from sqlalchemy.engine import Connection

from tuna.db import Database
from tuna.db.enums import JobState
from tuna.db.models import (
    Job,
    Machine,
    Search,
    SearchBuild,
    SearchRun,
    SearchTally,
    TuningSession,
)
from tuna.errors import NotFoundError, TunaError
from tuna.searchers import Objective, Run
from tuna.searchers.errors import SearchError
from tuna.searchers.pareto import Goal, front
from tuna.searchers.progress import best_so_far, improvements
from tuna.searches.create import BASELINE_SEQ
from tuna.sessions.session import no_session

RunStatus = Literal["valid", "invalid", "pruned", "pending"]
RUN_STATUSES: tuple[RunStatus, ...] = ("valid", "invalid", "pruned", "pending")
RunOrder = Literal["seq", "best"]
BEFORE_ALL = BASELINE_SEQ - 1
"""A ``seq`` before every run's (the baseline's included): the first page's ``after``."""


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
    full_objective: Objective | None = None
    """Every objective, the constraints and the baseline's stats (None: ``stat``/``goal``/
    ``validity`` alone)."""
    pruner: dict[str, Any] | None = None
    """How hopeless runs are stopped (:mod:`tuna.searchers.prune`'s JSON; None: never)."""
    time_budget_s: float | None = None
    pruned: int = 0  # ended stopped by its pruner (or objective): not valid, not invalid

    @property
    def in_flight(self) -> int:
        return self.runs - self.done

    @property
    def invalid(self) -> int:  # failed or refused, the pruned left out
        return self.done - self.valid - self.pruned

    @property
    def objective(self) -> Objective:
        if self.full_objective is not None:
            return self.full_objective
        return Objective(self.stat, self.goal, self.validity)

    @property
    def reads_stats(self) -> bool:
        """Whether whether a run counts is read from its stats (not its value alone)."""
        return self.objective.reads_stats

    @property
    def objectives_text(self) -> str:
        """``time_ms:min, accuracy:max``: every objective in priority order."""
        return ", ".join(str(t) for t in self.objective.targets)

    def counts(self, valid: bool | None, value: float | None, stats: Any) -> bool:
        """Whether a run with these columns counts towards the objective."""
        return _counts(self.objective, valid, value, stats)

    def not_counted(self, run: RunRow) -> str | None:
        """Why a valid run does not count, in a few words (the constraint it fails, the
        validity stat that says invalid, the stat it lacks); None when it counts or is not
        valid (its ``reason`` says why)."""
        if run.status != "valid" or self.counts(run.valid, run.value, run.stats):
            return None
        return self.objective.unmet(Run({}, run.stats or {})) or f"no number {self.stat!r}"

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
    pruned: bool = False  # its search's pruner stopped it (then not valid)

    @property
    def status(self) -> RunStatus:
        if self.valid is None:
            return "pending"
        return "valid" if self.valid else "pruned" if self.pruned else "invalid"


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
    if not objective.reads_stats:
        return True
    return objective.counts(Run({}, stats if isinstance(stats, dict) else {}))


def _objective(raw: Any, baseline: Any) -> Objective:
    """A search row's stored objective, with its baseline run's stats (None: none)."""
    if isinstance(raw, dict) and isinstance(raw.get("stat"), str):
        try:
            objective = Objective.from_stored(raw)
        except SearchError:  # a constraint that no longer parses: the stored answer is kept
            objective = Objective.from_stored({k: raw.get(k) for k in ("stat", "goal", "valid")})
        return objective.with_baseline(baseline if isinstance(baseline, dict) else None)
    return Objective("?")


def best_where(search_id: int) -> tuple[ColumnElement[bool], ...]:
    """A search's valid runs with a value."""
    return (SearchRun.search == search_id, SearchRun.valid == true(), SearchRun.value.is_not(None))


def best_order(goal: Goal) -> list[ColumnElement[Any]]:
    """Best first, in the order of the index ``(search, valid, value, landed)`` (equal
    values: the earliest landed first when minimising, the latest when maximising)."""
    cols = (SearchRun.value, SearchRun.landed)
    return [c.desc() for c in cols] if goal == "max" else [c.asc() for c in cols]


BEST_BATCH = 256
"""Runs read per round trip while looking for the best run that passes a validity stat."""


def _best_checked(conn: Connection, search_id: int, objective: Objective) -> float | None:
    """The best value among the runs that count, when the objective names a validity stat:
    the valid runs best first, a batch at a time, until one's stats say it is valid."""
    q = (
        select(SearchRun.value, SearchRun.stats)
        .where(*best_where(search_id))
        .order_by(*best_order(objective.goal))
        .limit(BEST_BATCH)
    )
    offset = 0
    while True:
        batch = conn.execute(q.offset(offset)).all()
        for value, stats in batch:
            if _counts(objective, True, value, stats):
                return float(value)
        if len(batch) < BEST_BATCH:
            return None
        offset += BEST_BATCH


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
    Search.pruner,
    Search.time_budget_s,
)


@dataclass
class _Counts:
    runs: int = 0
    done: int = 0
    valid: int = 0
    pruned: int = 0


def _summaries(conn: Connection, rows: Sequence[Any]) -> list[SearchSummary]:
    """Each search row with its run and build aggregates: runs by status from its
    ``search_tally`` row (counted from the index ``(search, valid, seq)`` for a search
    without one), the best value from ``(search, valid, value, ...)``."""
    ids = [r.id for r in rows]
    runs: dict[int, _Counts] = {i: _Counts() for i in ids}
    lo_hi: dict[int, tuple[Any, Any]] = {}
    builds: dict[int, tuple[int, int]] = {}
    baselines: dict[int, Any] = {}
    if ids:
        tallied = {
            t.search: _Counts(int(t.runs), int(t.done), int(t.valid), int(t.pruned))
            for t in conn.execute(select(SearchTally).where(SearchTally.search.in_(ids)))
        }
        runs.update(tallied)
        untallied = [i for i in ids if i not in tallied]
        by_status = (
            select(SearchRun.search, SearchRun.valid, func.count())
            .where(SearchRun.search.in_(untallied))
            .group_by(SearchRun.search, SearchRun.valid)
        )
        for sid, status, n in conn.execute(by_status) if untallied else ():
            c = runs[sid]
            c.runs += int(n)
            if status is not None:
                c.done += int(n)
                c.valid += int(n) if status else 0
        invalid = [SearchRun.search.in_(untallied), SearchRun.valid == false()]  # the index's
        pruned = select(SearchRun.search, func.count()).where(*invalid, SearchRun.pruned == true())
        for sid, n in conn.execute(pruned.group_by(SearchRun.search)) if untallied else ():
            runs[sid].pruned += int(n)
        for sid, lo, hi in conn.execute(
            select(SearchRun.search, func.min(SearchRun.value), func.max(SearchRun.value))
            .where(SearchRun.search.in_(ids), SearchRun.valid == true())
            .group_by(SearchRun.search)
        ):
            lo_hi[sid] = (lo, hi)
        # Built: a benchmark's build stored its artifact; a strategy's round (no artifact:
        # its kernels are built and timed in one job) ended evaluated.
        built = or_(SearchBuild.artifact.is_not(None), Job.state == JobState.EVALUATED)
        for sid, stats in conn.execute(
            select(SearchRun.search, SearchRun.stats).where(
                SearchRun.search.in_(ids),
                SearchRun.seq == BASELINE_SEQ,
                SearchRun.valid == true(),
            )
        ):
            baselines[sid] = stats
        for sid, n, done in conn.execute(
            select(SearchBuild.search, func.count(), func.count(case((built, 1))))
            .outerjoin(Job, Job.search_build == SearchBuild.id)
            .where(SearchBuild.search.in_(ids))
            .group_by(SearchBuild.search)
        ):
            builds[sid] = (int(n), int(done))
    out = []
    for r in rows:
        objective = _objective(r.objective, baselines.get(r.id))
        stat, goal = objective.stat, objective.goal
        validity = objective.validity if isinstance(objective.validity, str) else None
        agg = runs[r.id]
        if objective.reads_stats:
            best = _best_checked(conn, r.id, objective)
        else:
            lo, hi = lo_hi.get(r.id, (None, None))
            best = hi if goal == "max" else lo
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
                runs=agg.runs,
                done=agg.done,
                valid=agg.valid,
                builds=nb,
                builds_done=nb_done,
                best=None if best is None else float(best),
                created=r.created,
                finished=r.finished,
                reason=r.reason,
                full_objective=objective,
                pruner=r.pruner,
                time_budget_s=r.time_budget_s,
                pruned=agg.pruned,
            )
        )
    return out


def list_searches(db: Database, session_id: int) -> list[SearchSummary]:
    """The session's searches, oldest first; a missing session is a :class:`NotFoundError`."""
    with db.transaction() as conn:
        found = select(TuningSession.id).where(TuningSession.id == session_id)
        if conn.execute(found).first() is None:
            raise no_session(session_id)
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
    """A search by id (an int, or digits without ``session_id``; of that session when one
    is given), or by name within ``session_id``; else a :class:`NotFoundError`."""
    with db.transaction() as conn:
        q = select(*_SEARCH_COLUMNS)
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit() and session_id is None):
            q = q.where(Search.id == int(ref))
            where = f"search {ref}"
            if session_id is not None:
                q = q.where(Search.session == session_id)
                where += f" of session {session_id}"
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
    after: int = BEFORE_ALL,
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
            SearchRun.pruned,
        )
        .select_from(SearchRun)
        .outerjoin(SearchBuild, SearchBuild.id == SearchRun.build)
        .outerjoin(Machine, Machine.id == SearchRun.machine)
        .where(SearchRun.search == search.id)
    )
    if status == "pending":
        q = q.where(SearchRun.valid.is_(None))
    elif status == "valid":
        q = q.where(SearchRun.valid == true())
    elif status is not None:  # invalid or pruned: not valid, and pruned or not
        q = q.where(SearchRun.valid == false(), SearchRun.pruned == (status == "pruned"))
    if build is not None:
        q = q.where(SearchRun.build == build)
    if order == "best":
        q = q.where(*best_where(search.id)).order_by(*best_order(search.goal))
    else:
        q = q.where(SearchRun.seq > after).order_by(SearchRun.seq)
    if order == "best" and search.reads_stats:
        # The validity stat (constraints, more objectives) is in the JSON stats: read best
        # first, a batch at a time (the driver reads a whole result), until enough count.
        batch = max(BEST_BATCH, 2 * (limit or 0))
        found = []
        with db.transaction() as conn:
            for offset in itertools.count(0, batch):
                rows = conn.execute(q.limit(batch).offset(offset)).all()
                for r in rows:
                    if search.counts(r.valid, r.value, r.stats):
                        found.append(_run_row(r))
                        if limit is not None and len(found) >= limit:
                            return found
                if len(rows) < batch:
                    return found
        raise AssertionError("unreachable")
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
        r.hostname, r.created, r.finished, bool(r.pruned),
    )  # fmt: skip


def best_run(db: Database, search: SearchSummary) -> RunRow | None:
    """The run with the best value among those that count (the earliest of equals); with
    several objectives, the first of :func:`pareto` (ties on the first objective broken by
    the next ones, as :meth:`tuna.searchers.Objective.best` breaks them)."""
    several = bool(search.objective.more)
    found = pareto(db, search) if several else runs(db, search, order="best", limit=1)
    return found[0] if found else None


def baseline_run(db: Database, search: SearchSummary) -> RunRow | None:
    """The search's baseline run (``seq`` -1), if it has one."""
    first = runs(db, search, limit=1)
    return first[0] if first and first[0].seq == BASELINE_SEQ else None


def pareto(db: Database, search: SearchSummary) -> list[RunRow]:
    """The search's answer: the Pareto front of its runs that count, in priority order (the
    best by the first objective first), the earliest of runs equal on every objective
    first; with one objective, the best run and those equal to it.

    The baseline run (``seq`` -1) is one of the runs: a configuration measured like the
    others. It reads the valid runs and keeps those that count and no other dominates.
    """
    if not search.objective.more:  # the best and its equals: from the best-first index
        top = runs(db, search, order="best", limit=BEST_BATCH)
        ties = [r for r in top if r.value == top[0].value]
        if len(ties) < BEST_BATCH:
            return sorted(ties, key=lambda r: r.seq)
    candidates = runs(db, search, status="valid", order="seq", limit=None)
    counting = [r for r in candidates if search.counts(r.valid, r.value, r.stats)]
    return front(counting, search.objective.targets, lambda r: r.stats or {})


def measured(db: Database, search: SearchSummary) -> Measured:
    """The search's finished runs in the order they landed (``landed``)."""
    counts = and_(SearchRun.valid == true(), SearchRun.value.is_not(None))
    columns: list[Any] = [SearchRun.seq, case((counts, SearchRun.value))]
    if search.reads_stats:  # the validity stat (constraints, ...) is read from the JSON stats
        columns.append(SearchRun.stats)
    q = (
        select(*columns)
        .where(SearchRun.search == search.id, SearchRun.valid.is_not(None))
        .order_by(SearchRun.landed)
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


UNITS = {"_ms": "ms", "_us": "µs", "_ns": "ns", "_s": "s", "_bytes": "bytes", "_mib": "MiB",
         "_gflops": "GFLOP/s", "_qps": "queries/s", "_rps": "requests/s"}  # fmt: skip
"""A stat's unit from its name's suffix (cpuconv's ``time_ms``: ms)."""


def stat_unit(stat: str) -> str:
    """The unit a stat is in, from its name (``time_ms``: ms), else "the benchmark's unit"."""
    low = stat.lower()
    return next((u for suffix, u in UNITS.items() if low.endswith(suffix)),
                "the benchmark's unit")  # fmt: skip
