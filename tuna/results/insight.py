"""Find-db results, read for people: points per problem, winners, speed-ups, filtered lists.

The read side behind ``tuna report`` and the dashboard's results page. Problems are
grouped into *families* by direction and filter size (``F 3x3``, ``W 1x1``, ``B 5x5 g32``),
which is how kernel-library people talk about which solver wins where. Nothing here
writes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import aliased

from tuna.db import Database
from tuna.db.models import ConvConfig, FindDb, Golden, Solver, Tensor, TuningSession
from tuna.errors import NotFoundError, TunaError
from tuna.library.stability import Spread, spreads_of
from tuna.sessions.session import no_session

_DIRECTIONS = {"F": "fwd", "B": "bwd", "W": "wrw"}


@dataclass(frozen=True)
class FindPoint:
    """One find-db row: a solver's time and workspace on one problem in one session."""

    id: int
    session: int
    config: int
    solver_id: int
    fdb_key: str
    family: str
    solver: str
    time_ms: float
    workspace: int
    params: str | None = None
    """The winning candidate's parameters (``None``: the solver has none)."""


def geomean(values: Iterable[float]) -> float | None:
    """The geometric mean of the positive, finite ``values`` (a speed-up of a zero time is
    infinite and left out); None when there are none."""
    kept = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in kept) / len(kept)) if kept else None


@dataclass(frozen=True)
class Speedup:
    """The best time of a problem against a baseline time of the same problem."""

    config: int
    fdb_key: str
    family: str
    best_solver: str
    best_ms: float
    baseline: str
    baseline_ms: float
    best_params: str | None = None
    session: int | None = None

    @property
    def speedup(self) -> float:
        return self.baseline_ms / self.best_ms if self.best_ms > 0 else float("inf")


def family_name(direction: str, y: int, x: int, groups: int) -> str:
    """``fwd 3x3``, ``wrw 1x1 g32``: a problem's family for "which solver wins where"."""
    name = f"{_DIRECTIONS.get(direction, direction)} {y}x{x}"
    return f"{name} g{groups}" if groups > 1 else name


_W = aliased(Tensor)


def _point_query() -> Any:
    # The weight tensor is [K, C/G, (D,) Y, X]: for 2D problems Y, X are dim2, dim3.
    return (
        select(
            FindDb.id,
            FindDb.session,
            FindDb.config,
            FindDb.solver.label("solver_id"),
            ConvConfig.fdb_key,
            ConvConfig.direction,
            ConvConfig.spatial_dim,
            ConvConfig.group_count,
            _W.dim2,
            _W.dim3,
            _W.dim4,
            Solver.name,
            FindDb.time_ms,
            FindDb.workspace,
            FindDb.params,
        )
        .join(ConvConfig, ConvConfig.id == FindDb.config)
        .join(_W, _W.id == ConvConfig.weight_tensor)
        .join(Solver, Solver.id == FindDb.solver)
    )


def _point(r: Any) -> FindPoint:
    y, x = (r.dim3, r.dim4) if r.spatial_dim == 3 else (r.dim2, r.dim3)
    return FindPoint(
        r.id,
        r.session,
        r.config,
        r.solver_id,
        r.fdb_key,
        family_name(r.direction, y, x, r.group_count),
        r.name,
        float(r.time_ms),
        int(r.workspace),
        r.params,
    )


def check_sessions(db: Database, session_ids: Sequence[int]) -> dict[int, str]:
    """The arch of each session; a missing one is a :class:`NotFoundError` naming it."""
    with db.transaction() as conn:
        found = dict(
            conn.execute(
                select(TuningSession.id, TuningSession.arch).where(
                    TuningSession.id.in_(session_ids)
                )
            ).all()
        )
    missing = [s for s in session_ids if s not in found]
    if missing:
        raise no_session(*missing)
    return {int(k): str(v) for k, v in found.items()}


def count_find_rows(db: Database, session_ids: Sequence[int]) -> dict[int, int]:
    with db.transaction() as conn:
        rows = conn.execute(
            select(FindDb.session, func.count())
            .where(FindDb.session.in_(session_ids))
            .group_by(FindDb.session)
        ).all()
    counts = {int(s): int(n) for s, n in rows}
    return {s: counts.get(s, 0) for s in session_ids}


def find_points(
    db: Database, session_ids: Sequence[int], *, configs: Sequence[int] | None = None
) -> Iterator[FindPoint]:
    """The find rows of ``session_ids`` (optionally of some configs), by config then time."""
    q = _point_query().where(FindDb.session.in_(session_ids))
    if configs is not None:
        q = q.where(FindDb.config.in_(configs))
    q = q.order_by(FindDb.config, FindDb.session, FindDb.time_ms, Solver.name)
    with db.transaction() as conn:
        for r in conn.execution_options(yield_per=5000).execute(q):
            yield _point(r)


@dataclass(frozen=True)
class ResultFilter:
    """What the dashboard's results page narrows find rows by. Unset fields match all."""

    session: int
    solver: str | None = None
    key: str | None = None
    family: str | None = None
    max_ms: float | None = None


@dataclass(frozen=True)
class ResultPage:
    """A page of find rows and where the next one starts (None: this was the last)."""

    points: list[FindPoint]
    next_after: tuple[int, int] | None


SCAN_WINDOW = 5000
"""Find rows a page with a time or family filter reads at most (then it may come back short)."""


def filter_results(
    db: Database, flt: ResultFilter, *, after: tuple[int, int] = (0, 0), limit: int = 100
) -> ResultPage:
    """One page of a session's find rows matching ``flt``, by (config, solver id), after
    the (config, solver id) ``after`` (keyset paging).

    The page's ids are chosen first, reading the unique index (session, config, solver)
    from ``after`` on; then its rows are read by id. MariaDB would otherwise start from the
    tiny tensor table and sort the whole session, or read the session's part of the index
    from its start (it prefers a ``ref`` on the session to the range whenever the query
    needs a column the index lacks). So a solver filter becomes solver ids (in the index),
    and a time or family filter (columns outside it) is applied to a window of at most
    :data:`SCAN_WINDOW` index entries: such a page may come back short, and its next page
    starts after the window. A key prefix starts from ``conv_config``'s key index instead.
    """
    config, solver = after
    keyset = (
        FindDb.session == flt.session,
        # The first condition alone is a range of the index; the second trims its start.
        FindDb.config >= config,
        or_(FindDb.config > config, FindDb.solver > solver),
    )
    order = (FindDb.config, FindDb.solver)
    with db.transaction() as conn:
        solver_ids: list[int] | None = None
        if flt.solver:
            solver_ids = list(
                conn.execute(select(Solver.id).where(Solver.name == flt.solver)).scalars()
            ) or [-1]
        windowed = flt.max_ms is not None or bool(flt.family)
        window_end: tuple[int, int] | None = None
        if flt.key:
            ids = (
                select(FindDb.id)
                .join(ConvConfig, ConvConfig.id == FindDb.config)
                .where(*keyset, ConvConfig.fdb_key.startswith(flt.key, autoescape=True))
            )
        else:
            ids = select(FindDb.id).where(*keyset)
        if solver_ids is not None:
            ids = ids.where(FindDb.solver.in_(solver_ids))
        order_by: tuple[Any, ...] = order
        window = None
        if windowed:
            window = (
                ids.add_columns(FindDb.config, FindDb.solver)
                .order_by(*order)
                .limit(SCAN_WINDOW)
                .subquery("scan_window")
            )
            ids = select(FindDb.id).join(window, window.c.id == FindDb.id)
            order_by = (window.c.config, window.c.solver)
            if flt.max_ms is not None:
                ids = ids.where(FindDb.time_ms <= flt.max_ms)
            if flt.family:
                ids = (
                    ids.join(ConvConfig, ConvConfig.id == FindDb.config)
                    .join(_W, _W.id == ConvConfig.weight_tensor)
                    .where(*_family_where(flt.family))
                )
        page = ids.order_by(*order_by).limit(limit).subquery()
        q = _point_query().where(FindDb.id.in_(select(page.c.id))).order_by(*order)
        points = [_point(r) for r in conn.execute(q)]
        if len(points) == limit:
            return ResultPage(points, (points[-1].config, points[-1].solver_id))
        if window is not None:
            (n,) = conn.execute(select(func.count()).select_from(window)).one()
            if n == SCAN_WINDOW:
                last = conn.execute(
                    select(window.c.config, window.c.solver)
                    .order_by(window.c.config.desc(), window.c.solver.desc())
                    .limit(1)
                ).one()
                window_end = (int(last.config), int(last.solver))
    return ResultPage(points, window_end)


_FAMILY = re.compile(r"^(fwd|bwd|wrw) (\d+)x(\d+)(?: g(\d+))?$")


def parse_family(text: str) -> tuple[str, int, int, int]:
    """``wrw 3x3 g32`` -> (direction, y, x, groups); the inverse of :func:`family_name`."""
    m = _FAMILY.match(text.strip())
    if not m:
        raise TunaError(
            f"family {text!r}: expected DIRECTION YxX [gGROUPS] with fwd, bwd or wrw, "
            "e.g. 'fwd 3x3' or 'wrw 1x1 g32'"
        )
    direction = {v: k for k, v in _DIRECTIONS.items()}[m.group(1)]
    return direction, int(m.group(2)), int(m.group(3)), int(m.group(4) or 1)


def _family_where(text: str) -> list[Any]:
    direction, y, x, groups = parse_family(text)
    # 2D problems: Y, X are the weight's dim2, dim3; 3D ones: dim3, dim4.
    two_d = and_(ConvConfig.spatial_dim == 2, _W.dim2 == y, _W.dim3 == x)
    three_d = and_(ConvConfig.spatial_dim == 3, _W.dim3 == y, _W.dim4 == x)
    return [ConvConfig.direction == direction, ConvConfig.group_count == groups,
            or_(two_d, three_d)]  # fmt: skip


def solvers_with_results(db: Database, session_id: int) -> list[str]:
    """Names of the solvers of the session's backend (for a filter's choices)."""
    with db.transaction() as conn:
        backend = conn.execute(
            select(TuningSession.backend).where(TuningSession.id == session_id)
        ).scalar_one_or_none()
        if backend is None:
            return []
        return list(
            conn.execute(
                select(Solver.name).where(Solver.backend == backend).order_by(Solver.name)
            ).scalars()
        )


def best_per_problem(points: Sequence[FindPoint]) -> dict[tuple[int, int], FindPoint]:
    """The fastest point of each (session, config)."""
    best: dict[tuple[int, int], FindPoint] = {}
    for p in points:
        k = (p.session, p.config)
        if k not in best or p.time_ms < best[k].time_ms:
            best[k] = p
    return best


def winner_spreads(db: Database, points: Sequence[FindPoint]) -> dict[tuple[int, int], Spread]:
    """(session, config) -> the repeated timings of its winner (:func:`best_per_problem`)
    and how far apart they were (:mod:`tuna.library.stability`); absent: none kept."""
    best = best_per_problem(points)
    key = {k: (p.session, p.config, p.solver_id, p.params or "") for k, p in best.items()}
    found = spreads_of(db, [(key[k], p.time_ms) for k, p in best.items()])
    return {k: found[key[k]] for k in best if key[k] in found}


def solver_wins(
    points: Sequence[FindPoint], arch_of: dict[int, str]
) -> dict[tuple[str, str], dict[str, int]]:
    """How many problems each solver is fastest on, per (arch, family).

    A problem is a config on an arch: measured in two sessions of one arch, it is one
    problem, won by the fastest of both (counting it per session counted 4 fwd 1x1 wins
    where there were 2 such problems)."""
    best: dict[tuple[str, int], FindPoint] = {}
    for p in points:
        k = (arch_of[p.session], p.config)
        if k not in best or p.time_ms < best[k].time_ms:
            best[k] = p
    wins: dict[tuple[str, str], dict[str, int]] = {}
    for p in best.values():
        per = wins.setdefault((arch_of[p.session], p.family), {})
        per[p.solver] = per.get(p.solver, 0) + 1
    return wins


def speedups_vs_solver(points: Sequence[FindPoint], solver: str) -> list[Speedup]:
    """Each problem's best time against ``solver``'s time on it (problems it ran on)."""
    base = {(p.session, p.config): p for p in points if p.solver == solver}
    return [
        Speedup(
            b.config,
            b.fdb_key,
            b.family,
            b.solver,
            b.time_ms,
            solver,
            base[k].time_ms,
            b.params,
            b.session,
        )  # fmt: skip
        for k, b in best_per_problem(points).items()
        if k in base
    ]


def speedups_vs_slowest(points: Sequence[FindPoint]) -> list[Speedup]:
    """Each problem's best time against its slowest measured solver."""
    slowest: dict[tuple[int, int], FindPoint] = {}
    for p in points:
        k = (p.session, p.config)
        if k not in slowest or p.time_ms > slowest[k].time_ms:
            slowest[k] = p
    return [
        Speedup(
            b.config,
            b.fdb_key,
            b.family,
            b.solver,
            b.time_ms,
            "slowest solver",
            slowest[k].time_ms,
            b.params,
            b.session,
        )  # fmt: skip
        for k, b in best_per_problem(points).items()
    ]


def baseline_times(
    db: Database, *, session: int | None = None, golden: int | None = None
) -> tuple[str, dict[int, float]]:
    """The best time per config of a base session or of a golden version, and its name."""
    if (session is None) == (golden is None):
        raise ValueError("give exactly one of session, golden")
    with db.transaction() as conn:
        if session is not None:
            check_sessions(db, [session])
            q = (
                select(FindDb.config, func.min(FindDb.time_ms))
                .where(FindDb.session == session)
                .group_by(FindDb.config)
            )
            name = f"session {session}"
        else:
            q = (
                select(Golden.config, func.min(Golden.time_ms))
                .where(Golden.golden_v == golden)
                .group_by(Golden.config)
            )
            name = f"golden v{golden}"
        times = {int(c): float(t) for c, t in conn.execute(q)}
    if not times:
        raise NotFoundError(f"{name} has no find results to compare with")
    return name, times


def solver_times(db: Database, session: int) -> dict[tuple[int, str], float]:
    """Each (config, solver name)'s time in ``session``: a base session's same-solver times."""
    check_sessions(db, [session])
    q = (
        select(FindDb.config, Solver.name, FindDb.time_ms)
        .join(Solver, Solver.id == FindDb.solver)
        .where(FindDb.session == session)
    )
    with db.transaction() as conn:
        times = {(int(c), str(n)): float(t) for c, n, t in conn.execute(q)}
    if not times:
        raise NotFoundError(f"session {session} has no find results to compare with")
    return times


def speedups_vs_same_solver(
    points: Sequence[FindPoint], name: str, times: dict[tuple[int, str], float]
) -> list[Speedup]:
    """Each problem's best time against the same solver's time on it in a base session
    (what tuning gained, each side timed in its own session; ``tuna quickstart``'s "vs
    default params" times the two side by side in one), where it has one."""
    return [
        Speedup(
            b.config,
            b.fdb_key,
            b.family,
            b.solver,
            b.time_ms,
            name,
            times[(b.config, b.solver)],
            b.params,
            b.session,
        )  # fmt: skip
        for b in best_per_problem(points).values()
        if (b.config, b.solver) in times
    ]


def speedups_vs_times(
    points: Sequence[FindPoint], name: str, times: dict[int, float]
) -> list[Speedup]:
    """Each problem's best time against a base time of the same config (where it has one)."""
    return [
        Speedup(
            b.config,
            b.fdb_key,
            b.family,
            b.solver,
            b.time_ms,
            name,
            times[b.config],
            b.params,
            b.session,
        )  # fmt: skip
        for b in best_per_problem(points).values()
        if b.config in times
    ]
