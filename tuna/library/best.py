"""The best known configuration per problem for a target, across sessions, under the rules.

For each config, the fastest find row (time, workspace, algorithm, params; the perf-db
params of the same session and solver when the find row has none) among the rows that
count for the target (:class:`tuna.sessions.history.Eligibility`: compatible, unretired
sessions, rows young enough). Ties go to the solver MIOpen orders first (numeric id, then
name), then to the newer row. When nothing counts, :func:`why_none` says which rule excluded
which rows. Each best row says how far apart its repeated timings were
(:mod:`tuna.library.stability`): ``tuna best`` writes it beside the time and marks the
unstable ones.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, func, select
from sqlalchemy.orm import Session as OrmSession

from tuna.db import Database
from tuna.db.bulk import chunks
from tuna.db.models import (
    ConfigTag,
    ConvConfig,
    FindDb,
    Measurement,
    PerfDb,
    Solver,
    TuningSession,
)
from tuna.errors import NotFoundError, TunaError
from tuna.library.stability import Key, Spread, timing_spreads, unstable_note
from tuna.sessions.history import Eligibility, Target, eligibility, rules_of
from tuna.sessions.rules import HistoryRules, exclusion_hint
from tuna.sessions.session import session_info, session_row

_CONFIGS_PER_QUERY = 2_000


@dataclass(frozen=True)
class Best:
    """The fastest known solver and parameters of one problem, and where they come from."""

    key: str
    driver: str
    solver: str
    params: str | None
    time_ms: float
    workspace: int
    algorithm: str
    session: int
    created: dt.datetime | None
    config: int = 0
    solver_id: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "driver": self.driver or None,
            "solver": self.solver,
            "params": self.params,
            "time_ms": self.time_ms,
            "workspace": self.workspace,
            "algorithm": self.algorithm,
            "session": self.session,
            "created": self.created,
        }


def config_ids_for(s: OrmSession, tag: str | None) -> list[int] | None:
    """The configs tagged ``tag`` (None: every config)."""
    if tag is None:
        return None
    return list(s.scalars(select(ConfigTag.config).where(ConfigTag.tag == tag)))


def best_configs(
    s: OrmSession, history: Eligibility, config_ids: Sequence[int] | None = None
) -> dict[int, Best]:
    """config id -> its best row that counts for the target (configs without one: absent)."""
    found: dict[int, Best] = {}
    if not history.sessions:
        return found
    order = _solver_rank(s)
    best_key: dict[int, tuple[float, int, float]] = {}
    for row in _rows(s, history, config_ids):
        config, key, driver, solver_id, solver, params, time_ms, ws, alg, session, created = row
        if time_ms is None or not math.isfinite(time_ms) or time_ms < 0:
            continue
        stamp = -created.timestamp() if isinstance(created, dt.datetime) else 0.0
        rank = (time_ms, order.get(solver_id, 1 << 30), stamp)
        if config in best_key and best_key[config] <= rank:
            continue
        best_key[config] = rank
        found[config] = Best(
            key, driver, solver, params, time_ms, ws, alg, session, created, config, solver_id
        )
    return found


def best_per_solver(
    s: OrmSession, history: Eligibility, config_ids: Sequence[int] | None = None
) -> list[dict[str, Any]]:
    """The fastest row that counts per (config, solver), across sessions (the newer row on a
    tie): what a golden version of the best holds, so that a find db of it lists each
    key's fastest solvers (``tuna best --golden_v``). Dicts of the golden row's columns."""
    best: dict[tuple[int, int], tuple[tuple[float, float], dict[str, Any]]] = {}
    if not history.sessions:
        return []
    for row in _rows(s, history, config_ids, with_job=True):
        config, key, _drv, solver_id, _name, params, time_ms, ws, alg, session, created, job = row
        if time_ms is None or not math.isfinite(time_ms) or time_ms < 0:
            continue
        rank = (time_ms, -created.timestamp() if isinstance(created, dt.datetime) else 0.0)
        pair = (config, solver_id)
        if pair in best and best[pair][0] <= rank:
            continue
        best[pair] = (rank, {
            "session": session, "config": config, "solver": solver_id, "fdb_key": key,
            "params": params, "time_ms": time_ms, "workspace": ws, "algorithm": alg, "job": job,
        })  # fmt: skip
    return [v for _, v in (best[p] for p in sorted(best))]


def _rows(
    s: OrmSession,
    history: Eligibility,
    config_ids: Sequence[int] | None,
    *,
    with_job: bool = False,
) -> Iterator[tuple[Any, ...]]:
    f, p = FindDb, PerfDb
    q = (
        select(
            f.config,
            ConvConfig.fdb_key,
            ConvConfig.driver,
            f.solver,
            Solver.name,
            func.coalesce(f.params, p.params),
            f.time_ms,
            f.workspace,
            f.algorithm,
            f.session,
            f.created,
            *([f.job] if with_job else []),
        )
        .join(ConvConfig, ConvConfig.id == f.config)
        .join(Solver, Solver.id == f.solver)
        .outerjoin(p, and_(p.session == f.session, p.config == f.config, p.solver == f.solver))
        .where(*history.where(f.session, f.created))
    )
    if history.platforms is not None:
        q = q.where(measured_on_counting_platform(history, f, p))
    if config_ids is None:
        yield from s.execute(q)
        return
    for part in chunks(sorted(config_ids), _CONFIGS_PER_QUERY):
        yield from s.execute(q.where(f.config.in_(part)))


def measured_on_counting_platform(history: Eligibility, f: Any, p: Any) -> ColumnElement[bool]:
    """A find row (``f``, its perf row ``p``) counts under platform rules when its time was
    measured on a platform that counts: a valid measurement of its session, problem, solver
    and parameters with that time. A row with none (imported, or measured before
    measurements were kept) does not: where it ran is not known."""
    m = Measurement
    return exists().where(
        m.session == f.session,
        m.config == f.config,
        m.solver == f.solver,
        m.params == func.coalesce(f.params, p.params, ""),
        m.time_ms == f.time_ms,
        m.valid,
        m.platform.in_(history.platforms or ()),
    )


def _solver_rank(s: OrmSession) -> dict[int, int]:
    rows = s.execute(select(Solver.id, Solver.numeric_id, Solver.name)).all()
    ranked = sorted(rows, key=lambda r: (r[1] is None, r[1] or 0, r[2]))
    return {r[0]: rank for rank, r in enumerate(ranked)}


def why_none(
    s: OrmSession, history: Eligibility, config_ids: Sequence[int] | None = None
) -> Counter[str]:
    """Rule -> find rows of the asked configs it excluded (``no find rows`` when none exist)."""
    f, p = FindDb, PerfDb
    q: Any = select(f.session, f.created)
    if history.platforms is not None:
        q = select(f.session, f.created, measured_on_counting_platform(history, f, p)).outerjoin(
            p, and_(p.session == f.session, p.config == f.config, p.solver == f.solver)
        )
    reasons: Counter[str] = Counter()
    parts: list[Sequence[int] | None] = (
        [None] if config_ids is None else list(chunks(sorted(config_ids), _CONFIGS_PER_QUERY))
    )
    for part in parts:
        query = q if part is None else q.where(f.config.in_(part))
        for row in s.execute(query):
            session, created, on_platform = row[0], row[1], row[2:]
            if session in history.excluded:
                reasons[history.excluded[session]] += 1
            elif not history.counts(session, created):
                reasons["max_age"] += 1
            elif session not in history.sessions:
                reasons["not a session of the target"] += 1
            elif on_platform and not on_platform[0]:
                reasons[_platform_rule(history)] += 1
    if not reasons:
        reasons["no find rows"] = 0
    return reasons


def _platform_rule(history: Eligibility) -> str:
    """How the platform rule names itself (``platform user.cooling``, as effort says)."""
    return "platform " + ",".join(sorted(history.rules.platform or {}))


# --- a target, its history and its report --------------------------------------------------------


def target_history(
    s: OrmSession,
    *,
    session: int | None = None,
    arch: str | None = None,
    num_cu: int | None = None,
    backend: str | None = None,
    rules: HistoryRules | None = None,
    rule_changes: Mapping[str, Any] | None = None,
) -> Eligibility:
    """The history of a target: a session (its target and rules; ``arch``/``num_cu`` must
    agree) or an arch and CU count (any library unless ``library_min``; the backend the
    sessions of that target used, when only one). ``rule_changes`` override single rules."""
    changes = dict(rule_changes or {})
    if session is not None:
        info = session_info(session_row(s, session))
        if arch is not None and arch != info.arch:
            raise TunaError(f"-a {arch}: session {session} tuned {info.arch}; leave -a out")
        if num_cu is not None and num_cu != info.num_cu:
            raise TunaError(f"-n {num_cu}: session {session} tuned {info.num_cu} CUs")
        base = rules if rules is not None else rules_of(info)
        return eligibility(s, info, replace(base, **changes) if changes else base)
    if arch is None or num_cu is None:
        raise TunaError("give the target: -s SESSION, or -a ARCH and -n CUS")
    if backend is None:
        used = set(
            s.scalars(
                select(TuningSession.backend)
                .where(TuningSession.arch == arch, TuningSession.num_cu == num_cu)
                .distinct()
            )
        )
        if len(used) > 1:
            raise TunaError(
                f"sessions of {arch} {num_cu} CUs used backends {', '.join(sorted(used))}: "
                "give --backend"
            )
        backend = used.pop() if used else "-"
    base = rules if rules is not None else HistoryRules(library="any")
    return eligibility(
        s, Target(arch, num_cu, backend), replace(base, **changes) if changes else base
    )


def target_label(history: Eligibility) -> str:
    t = history.target
    name = f"session {t.id}: " if t.id else ""
    return f"{name}{t.arch} {t.num_cu} CUs, backend {t.backend}"


@dataclass
class BestReport:
    """What ``tuna best`` writes: the target, its rules, the sessions counted, the best rows."""

    history: Eligibility
    best: list[Best]
    asked: int | None  # configs asked for (None: every config)
    tag: str | None
    spreads: dict[Key, Spread] = field(default_factory=dict)
    """Each best row's repeated timings (absent: none kept, e.g. imported)."""

    def spread(self, b: Best) -> Spread | None:
        return self.spreads.get(winner_key(b))

    def unstable_note(self) -> str:
        """What ``tuna best`` says beside the figures when some are unstable."""
        return unstable_note(self.spreads.values(), "best row")

    @property
    def target_label(self) -> str:
        return target_label(self.history)

    def document(self) -> dict[str, Any]:
        t = self.history.target
        return {
            "target": {
                "session": t.id or None,
                "arch": t.arch,
                "num_cu": t.num_cu,
                "backend": t.backend,
            },
            "rules": self.history.rules.to_json(),
            "tag": self.tag,
            "sessions": list(self.history.sessions),
            "excluded_sessions": {str(k): v for k, v in sorted(self.history.excluded.items())},
            "problems": [b.as_dict() | _timings(self.spread(b)) for b in self.best],
        }


def best_report(
    db: Database,
    *,
    session: int | None = None,
    arch: str | None = None,
    num_cu: int | None = None,
    backend: str | None = None,
    tag: str | None = None,
    rule_changes: Mapping[str, Any] | None = None,
) -> BestReport:
    """The best known configuration per problem (tagged ``tag``) for a target.

    :class:`NotFoundError` when no row counts, saying which rule excluded how many rows.
    """
    with db.session() as s:
        history, config_ids = history_and_configs(
            s, session=session, arch=arch, num_cu=num_cu, backend=backend, tag=tag,
            rule_changes=rule_changes,
        )  # fmt: skip
        found = best_configs(s, history, config_ids)
        if not found:
            reasons = why_none(s, history, config_ids)
            raise NotFoundError(no_history_message(history, reasons, tag))
        spreads = timing_spreads(s, [(winner_key(b), b.time_ms) for b in found.values()])
    best = sorted(found.values(), key=lambda b: b.key)
    asked = None if config_ids is None else len(config_ids)
    return BestReport(history, best, asked, tag, spreads)


def winner_key(b: Best) -> Key:
    """A best row as :mod:`tuna.library.stability` names a stored winner."""
    return (b.session, b.config, b.solver_id, b.params or "")


def _timings(spread: Spread | None) -> dict[str, Any]:
    """A best row's repeated timings as ``tuna best`` writes them."""
    if spread is None:
        return {"timings": 0, "spread": None, "unstable": False}
    return spread.as_dict()


def history_and_configs(
    s: OrmSession,
    *,
    session: int | None,
    arch: str | None,
    num_cu: int | None,
    backend: str | None,
    tag: str | None,
    rule_changes: Mapping[str, Any] | None,
) -> tuple[Eligibility, list[int] | None]:
    """A target's history (:func:`target_history`) and the configs tagged ``tag`` (None: all);
    a tag that names no config is a :class:`NotFoundError`."""
    history = target_history(
        s, session=session, arch=arch, num_cu=num_cu, backend=backend, rule_changes=rule_changes
    )
    config_ids = config_ids_for(s, tag)
    if config_ids is not None and not config_ids:
        raise NotFoundError(f"no config is tagged {tag!r}; import_configs -t {tag} -f FILE")
    return history, config_ids


def no_history_message(history: Eligibility, reasons: Counter[str], tag: str | None) -> str:
    """'no compatible history for ...: retired excluded 12 find row(s) (how to undo); ...'."""
    tagged = f" (configs tagged {tag!r})" if tag else ""
    parts = []
    for rule, n in reasons.most_common():
        if rule == "no find rows":
            parts.append("there are no find rows at all; run the find step (load_jobs --step find)")
            continue
        hint = exclusion_hint(rule)
        parts.append(f"rule {rule} excluded {n} find row(s)" + (f" ({hint})" if hint else ""))
    return (
        f"no compatible history for {target_label(history)}{tagged} under "
        f"{history.rules.describe()}: " + "; ".join(parts)
    )
