"""Golden versions: immutable, versioned snapshots of find results, each with its parent.

``update_golden`` creates version V from a session's find results (checked like an export)
and, given a base version B, the rows of B carried forward: the session's row wins for
each (config, solver) it has, B's rows stay for the rest. V records B as its parent.
A version is never changed once created: creating an existing version is an error, so a
golden version number always means the same rows (reference mituna.md §10.8; MITuna's
``--overwrite`` rewrote history).

Each row keeps the job that produced it (``golden.job``) and the kernels of that job's
chosen solution as they were when the row was frozen (``golden_kernel``): re-tuning the
session later (a requeued or reset job chooses or compiles again) does not change what a
golden version's kernel db holds. Carried rows keep their job and frozen kernels.

The report lists the keys whose fastest time got slower than in the parent by more than a
threshold, so a regression is seen before the version is exported.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, exists, func, insert, literal, select
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session, aliased

from tuna.db import Database
from tuna.db.models import (
    ConvConfig,
    FindDb,
    Golden,
    GoldenKernel,
    GoldenVersion,
    JobKernel,
    PerfDb,
    Solver,
)
from tuna.errors import NotFoundError, TunaError
from tuna.library.best import (
    best_per_solver,
    history_and_configs,
    no_history_message,
    target_label,
    why_none,
)
from tuna.results.export import check_session_find
from tuna.results.formats import db_arch
from tuna.sessions import session_info, session_row
from tuna.sessions.history import check_not_retired

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.1


class GoldenExistsError(TunaError):
    """Raised when a golden version is created again: golden versions are never rewritten."""


@dataclass(frozen=True)
class SlowerKey:
    """A key whose fastest entry is slower than in the parent version."""

    key: str
    parent_solver: str
    parent_ms: float
    solver: str
    time_ms: float

    @property
    def slowdown(self) -> float:
        """How much slower, as a fraction of the parent's time (0.25 = 25 % slower)."""
        return self.time_ms / self.parent_ms - 1 if self.parent_ms > 0 else float("inf")


@dataclass
class GoldenReport:
    version: int
    parent: int | None
    session: int
    arch: str
    num_cu: int
    carried: int
    from_session: int
    keys: int
    threshold: float
    slower: list[SlowerKey] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return self.carried + self.from_session


def update_golden(
    db: Database,
    version: int,
    session_id: int,
    *,
    base: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    note: str | None = None,
) -> GoldenReport:
    """Create golden version ``version`` from a session's find rows (and ``base``'s rows).

    Refuses, writing nothing, when the version exists (:class:`GoldenExistsError`), when the
    session's rows fail the export checks (``ExportRefusedError``), or when the base holds
    another arch or CU count.
    """
    if threshold < 0:
        raise TunaError(f"--threshold {threshold}: give a fraction >= 0, e.g. 0.1 for 10 %")
    check_version(version)
    with db.session() as s:
        return _create(s, version, session_id, base, threshold, note)


def check_version(version: int) -> None:
    """``TunaError`` for a golden version number below 1 (versions count 1, 2, ...)."""
    if version < 1:
        raise TunaError(f"--golden_v {version}: golden versions are numbered from 1")


def _exists(version: int) -> GoldenExistsError:
    return GoldenExistsError(
        f"golden version {version} exists; golden versions are never rewritten: create a new "
        f"version with --base_golden_v {version} to build on it"
    )


def _create(
    s: Session, version: int, session_id: int, base: int | None, threshold: float, note: str | None
) -> GoldenReport:
    if s.get(GoldenVersion, version) is not None:
        raise _exists(version)
    sess = session_row(s, session_id)
    check_not_retired(session_info(sess), "golden version")
    if base is not None:
        parent = s.get(GoldenVersion, base)
        if parent is None:
            raise NotFoundError(f"base golden version {base} does not exist")
        if db_arch(parent.arch) != db_arch(sess.arch) or parent.num_cu != sess.num_cu:
            raise TunaError(
                f"base golden version {base} holds {parent.arch} {parent.num_cu} CUs; session "
                f"{session_id} tuned {sess.arch} {sess.num_cu} CUs"
            )
    from_session = check_session_find(s, sess)
    if not from_session:
        raise NotFoundError(f"session {session_id} has no find results to put in a golden version")
    s.add(
        GoldenVersion(version=version, parent=base, arch=sess.arch, num_cu=sess.num_cu, note=note)
    )
    try:
        s.flush()
    except sa_exc.IntegrityError as e:  # another update_golden created it since the check
        raise _exists(version) from e
    carried = 0
    if base is not None:
        carried = _carry_forward(s, version, base, session_id)
        _carry_kernels(s, version, base)
    _add_session_rows(s, version, session_id)
    _freeze_session_kernels(s, version, session_id)
    keys = s.scalar(
        select(func.count(func.distinct(Golden.config))).where(Golden.golden_v == version)
    )
    slower = _slower(s, version, base, session_id, threshold) if base is not None else []
    log.info(
        "golden %d: %d rows (%d carried from %s, %d from session %d), %d slower keys",
        version,
        carried + from_session,
        carried,
        base,
        from_session,
        session_id,
        len(slower),
    )
    return GoldenReport(
        version=version,
        parent=base,
        session=session_id,
        arch=sess.arch,
        num_cu=sess.num_cu,
        carried=carried,
        from_session=from_session,
        keys=keys or 0,
        threshold=threshold,
        slower=slower,
    )


_GOLDEN_COLUMNS = (
    "golden_v",
    "session",
    "config",
    "solver",
    "fdb_key",
    "params",
    "time_ms",
    "workspace",
    "algorithm",
    "job",
)


def _carry_forward(s: Session, version: int, base: int, session_id: int) -> int:
    """Copy the base's rows the session does not override; returns how many."""
    overridden = exists().where(
        FindDb.session == session_id,
        FindDb.config == Golden.config,
        FindDb.solver == Golden.solver,
    )
    cols: list[Any] = [
        literal(version),
        Golden.session,
        Golden.config,
        Golden.solver,
        Golden.fdb_key,
        Golden.params,
        Golden.time_ms,
        Golden.workspace,
        Golden.algorithm,
        Golden.job,
    ]
    rows = select(*cols).where(Golden.golden_v == base, ~overridden)
    result = s.execute(insert(Golden).from_select(_GOLDEN_COLUMNS, rows))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def _carry_kernels(s: Session, version: int, base: int) -> None:
    """Copy the frozen kernels of the base's rows to the rows carried from them.

    Run right after :func:`_carry_forward`, while the version holds carried rows only.
    """
    new, old = aliased(Golden), aliased(Golden)
    rows = (
        select(new.id, GoldenKernel.kernel)
        .join(old, and_(old.golden_v == base, old.config == new.config, old.solver == new.solver))
        .join(GoldenKernel, GoldenKernel.golden == old.id)
        .where(new.golden_v == version)
    )
    s.execute(insert(GoldenKernel).from_select(["golden", "kernel"], rows))


def _add_session_rows(s: Session, version: int, session_id: int) -> None:
    """Copy the session's find rows, with the tuned params of its perf rows where it has them."""
    cols: list[Any] = [
        literal(version),
        FindDb.session,
        FindDb.config,
        FindDb.solver,
        ConvConfig.fdb_key,
        func.coalesce(PerfDb.params, FindDb.params),
        FindDb.time_ms,
        FindDb.workspace,
        FindDb.algorithm,
        FindDb.job,
    ]
    rows = (
        select(*cols)
        .join(ConvConfig, ConvConfig.id == FindDb.config)
        .outerjoin(
            PerfDb,
            and_(
                PerfDb.session == FindDb.session,
                PerfDb.config == FindDb.config,
                PerfDb.solver == FindDb.solver,
            ),
        )
        .where(FindDb.session == session_id)
    )
    s.execute(insert(Golden).from_select(_GOLDEN_COLUMNS, rows))


def _freeze_session_kernels(s: Session, version: int, session_id: int) -> None:
    """Freeze the chosen kernels of the jobs of the rows copied from the session.

    A job with none chosen freezes nothing: the backend never said which of its kernels
    the solution runs, and the kernel db export takes all of its kernels then.
    """
    from_session = exists().where(
        FindDb.session == session_id,
        FindDb.config == Golden.config,
        FindDb.solver == Golden.solver,
    )
    rows = (
        select(Golden.id, JobKernel.kernel)
        .join(JobKernel, and_(JobKernel.job == Golden.job, JobKernel.chosen))
        .where(Golden.golden_v == version, from_session)
    )
    s.execute(insert(GoldenKernel).from_select(["golden", "kernel"], rows))


def _fastest(s: Session, version: int, session_id: int) -> dict[str, tuple[float, str]]:
    """key -> (time, solver) of the fastest entry, for the keys the session has rows for."""
    touched = select(FindDb.config).where(FindDb.session == session_id)
    cols: list[Any] = [Golden.fdb_key, Golden.time_ms, Solver.name]
    q = (
        select(*cols)
        .join(Solver, Solver.id == Golden.solver)
        .where(Golden.golden_v == version, Golden.config.in_(touched))
    )
    best: dict[str, tuple[float, str]] = {}
    for key, time_ms, solver in s.execute(q):
        entry = (time_ms, solver)
        if key not in best or entry < best[key]:
            best[key] = entry
    return best


def _slower(
    s: Session, version: int, parent: int, session_id: int, threshold: float
) -> list[SlowerKey]:
    before = _fastest(s, parent, session_id)
    after = _fastest(s, version, session_id)
    slower = []
    for key, (parent_ms, parent_solver) in before.items():
        time_ms, solver = after[key]
        if time_ms > parent_ms * (1 + threshold):
            slower.append(SlowerKey(key, parent_solver, parent_ms, solver, time_ms))
    return sorted(slower, key=lambda k: (-k.slowdown, k.key))


@dataclass
class BestGoldenReport:
    """A golden version made of the best rows of every session that counts for a target."""

    version: int
    arch: str
    num_cu: int
    rows: int
    keys: int
    sessions: list[int]


def golden_from_best(
    db: Database,
    version: int,
    *,
    session: int | None = None,
    arch: str | None = None,
    num_cu: int | None = None,
    backend: str | None = None,
    tag: str | None = None,
    rule_changes: Mapping[str, Any] | None = None,
    note: str | None = None,
) -> BestGoldenReport:
    """Create golden version ``version`` from the fastest row per (config, solver) among the
    find rows that count for a target (``tuna best --golden_v``): ``export_db --golden_v``
    then writes MIOpen's files of the best known configurations, checked like any export.

    The chosen kernels of each row's job are frozen with it, as ``update_golden`` does.
    """
    check_version(version)
    with db.session() as s:
        if s.get(GoldenVersion, version) is not None:
            raise _exists(version)
        history, config_ids = history_and_configs(
            s, session=session, arch=arch, num_cu=num_cu, backend=backend, tag=tag,
            rule_changes=rule_changes,
        )  # fmt: skip
        rows = best_per_solver(s, history, config_ids)
        if not rows:
            raise NotFoundError(no_history_message(history, why_none(s, history, config_ids), tag))
        target = history.target
        s.add(
            GoldenVersion(
                version=version, parent=None, arch=target.arch, num_cu=target.num_cu,
                note=note or f"best of {target_label(history)} ({history.rules.describe()})",
            )
        )  # fmt: skip
        try:
            s.flush()
        except sa_exc.IntegrityError as e:  # another one created it since the check
            raise _exists(version) from e
        for i in range(0, len(rows), 1000):
            s.execute(insert(Golden), [{"golden_v": version, **r} for r in rows[i : i + 1000]])
        frozen = (
            select(Golden.id, JobKernel.kernel)
            .join(JobKernel, and_(JobKernel.job == Golden.job, JobKernel.chosen))
            .where(Golden.golden_v == version)
        )
        s.execute(insert(GoldenKernel).from_select(["golden", "kernel"], frozen))
        log.info("golden %d: best of %s, %d rows", version, target_label(history), len(rows))
        return BestGoldenReport(
            version, target.arch, target.num_cu, len(rows), len({r["config"] for r in rows}),
            sorted({r["session"] for r in rows}),
        )  # fmt: skip
