"""Tuning sessions: what is tuned, where, with which library build.

A session's *fingerprint* hashes what makes its results comparable with another's: the
target (arch, CUs), the backend, the library build (version, commit), the toolchain, the
image (its digest when known) and the environment. Label and ticket are bookkeeping and
leave it unchanged. ``load_jobs`` skips work an earlier session with the same fingerprint
already finished.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row, select

from tuna.backends import LibraryQueries, get_backend
from tuna.backends.base import RUNTIMES, SessionInfo, SessionSpec, SolverInfo
from tuna.db import Database, tables
from tuna.db.bulk import insert_missing
from tuna.errors import NotFoundError, TunaError

# The ORM classes are imported in the functions that use them: a worker only reads its
# session (get_session, on the Core table) and never loads the ORM.
if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from tuna.db.models import TuningSession


def fingerprint(spec: SessionSpec) -> str:
    """sha256 of the comparable part of a session, in a canonical JSON form."""
    comparable = {
        "arch": spec.arch,
        "num_cu": spec.num_cu,
        "backend": spec.backend,
        "library_version": spec.library_version,
        "library_commit": spec.library_commit,
        "toolchain": spec.toolchain,
        "image": spec.docker_digest or spec.docker_image,
        "environment": dict(sorted(spec.environment.items())),
    }
    text = json.dumps(comparable, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def sync_solvers(session: OrmSession, backend_name: str) -> dict[str, int]:
    """Make the solver table hold the backend's solvers; return their ids by name."""
    from tuna.db.models import Solver

    backend = get_backend(backend_name)
    rows = [
        {
            "backend": backend_name,
            "name": s.name,
            "tunable": s.tunable,
            "numeric_id": s.numeric_id,
            "algorithm": s.algorithm,
        }
        for s in backend.solvers()
    ]
    insert_missing(session, Solver, rows)
    found = session.execute(select(Solver.name, Solver.id).where(Solver.backend == backend_name))
    return {name: id_ for name, id_ in found}


@dataclass
class SolverUpdate:
    """What ``update_solvers`` changed in the solver table of one backend."""

    backend: str
    source: str  # where the list came from: the library build (fin) or the backend itself
    reported: int = 0
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    unchanged: int = 0


def session_info(row: TuningSession | Row[Any]) -> SessionInfo:
    """A session row as everyone outside the database sees it (the one conversion)."""
    return SessionInfo(
        id=row.id,
        arch=row.arch,
        num_cu=row.num_cu,
        backend=row.backend,
        library_version=row.library_version,
        library_commit=row.library_commit,
        toolchain=row.toolchain,
        docker_image=row.docker_image,
        docker_digest=row.docker_digest,
        label=row.label,
        ticket=row.ticket,
        environment=dict(row.environment or {}),
        user_platform=dict(row.user_platform or {}),
        fingerprint=row.fingerprint,
        created=row.created,
        runtime=row.runtime,
        history_rules=dict(row.history_rules or {}),
        retired=row.retired,
        retired_reason=row.retired_reason,
        default_strategy=dict(row.default_strategy or {}),
    )


def update_solvers(db: Database, session_id: int) -> SolverUpdate:
    """Make the solver table of the session's backend what its library build reports.

    A backend that asks its library (MIOpen: fin ``get_solvers``) is asked with the
    session's settings; any other gives its own list. New solvers are added; the tunable
    flag, numeric id and algorithm of known ones follow the report; solvers no longer
    reported are marked invalid (``valid`` 0), never deleted, since results refer to them.
    """
    from tuna.db.models import Solver

    with db.session() as session:
        row = session_row(session, session_id)
        info = session_info(row)
    backend = get_backend(info.backend)
    reported: list[SolverInfo]
    if isinstance(backend, LibraryQueries):
        reported, source = backend.session_solvers(info), "library"
    else:
        reported, source = backend.solvers(), "backend"
    report = SolverUpdate(info.backend, source, reported=len(reported))
    by_name = {s.name: s for s in reported}
    with db.session() as session:
        existing = {
            r.name: r for r in session.scalars(select(Solver).where(Solver.backend == info.backend))
        }
        for name, s in by_name.items():
            r = existing.get(name)
            if r is None:
                session.add(
                    Solver(
                        backend=info.backend,
                        name=name,
                        tunable=s.tunable,
                        numeric_id=s.numeric_id,
                        algorithm=s.algorithm,
                    )
                )
                report.added.append(name)
                continue
            wanted = (s.tunable, s.numeric_id, s.algorithm or r.algorithm, True)
            if (r.tunable, r.numeric_id, r.algorithm, r.valid) == wanted:
                report.unchanged += 1
                continue
            r.tunable, r.numeric_id, r.algorithm, r.valid = wanted
            report.updated.append(name)
        for name, r in existing.items():
            if name not in by_name and r.valid:
                r.valid = False
                report.retired.append(name)
    return report


@dataclass(frozen=True)
class SolverRow:
    id: int
    backend: str
    name: str
    tunable: bool
    numeric_id: int | None
    algorithm: str | None
    valid: bool


def list_solvers(db: Database, backend: str | None = None) -> list[SolverRow]:
    """The solver table (of one backend), by backend and numeric id."""
    from tuna.db.models import Solver

    query = select(Solver).order_by(Solver.backend, Solver.numeric_id, Solver.name)
    if backend is not None:
        query = query.where(Solver.backend == backend)
    with db.session() as session:
        return [
            SolverRow(r.id, r.backend, r.name, r.tunable, r.numeric_id, r.algorithm, r.valid)
            for r in session.scalars(query)
        ]


def create_session(db: Database, spec: SessionSpec) -> SessionInfo:
    """Record a new session (and its backend's solvers); returns it with its id."""
    with db.session() as session:
        return add_session(session, spec)


def add_session(session: OrmSession, spec: SessionSpec) -> SessionInfo:
    """:func:`create_session` in the caller's transaction (an import that creates its session
    commits both or neither)."""
    from tuna.db.models import TuningSession

    if spec.num_cu <= 0:
        raise TunaError(f"--num-cu must be positive, not {spec.num_cu}")
    if spec.runtime is not None and spec.runtime not in RUNTIMES:
        raise TunaError(f"--runtime: runtime {spec.runtime!r} is not one of {', '.join(RUNTIMES)}")
    get_backend(spec.backend)  # unknown backend: a clear error naming the known ones
    sync_solvers(session, spec.backend)
    values = {
        **asdict(spec),
        # stored NULL when not given, as before the one session type
        "user_platform": dict(spec.user_platform) or None,
        "default_strategy": dict(spec.default_strategy) or None,
    }
    row = TuningSession(**values, fingerprint=fingerprint(spec))
    session.add(row)
    session.flush()
    session.refresh(row)
    return session_info(row)


def session_row(s: OrmSession, session_id: int) -> TuningSession:
    """The session's row in ``s``; :class:`NotFoundError` (saying where to look) if none."""
    from tuna.db.models import TuningSession

    row = s.get(TuningSession, session_id)
    if row is None:
        raise no_session(session_id)
    return row


def no_session(*session_ids: int) -> NotFoundError:
    """The one error for sessions that do not exist (:func:`get_session`, :func:`session_row`,
    and a query that looked for them itself)."""
    return NotFoundError(
        f"session {', '.join(map(str, session_ids))} does not exist; "
        "`tuna session list` shows the sessions"
    )


def get_session(db: Database, session_id: int) -> SessionInfo:
    """The session (the one loader); :class:`NotFoundError` if there is none."""
    table = tables.session
    with db.transaction() as conn:
        row = conn.execute(select(table).where(table.c.id == session_id)).one_or_none()
    if row is None:
        raise no_session(session_id)
    return session_info(row)


def list_sessions(
    db: Database, *, newest: int | None = None, arch: str | None = None
) -> list[SessionInfo]:
    """The sessions (of ``arch``), oldest first; with ``newest``, that many of the newest,
    newest first (as a list of recent sessions shows them)."""
    table = tables.session
    q = select(table)
    if arch:
        q = q.where(table.c.arch == arch)
    q = q.order_by(table.c.id) if newest is None else q.order_by(table.c.id.desc()).limit(newest)
    with db.transaction() as conn:
        return [session_info(r) for r in conn.execute(q)]
