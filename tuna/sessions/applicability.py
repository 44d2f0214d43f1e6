"""Stored applicability: which solvers apply to which configs, as a session's library said.

``update_applicability`` asks the session's backend about every config (tagged ``tag``, or
all) and stores one ``solver_applicability`` row per (config, solver of the backend), with
the reason when the solver does not apply. A backend that asks its library (MIOpen: fin
``applicability``, see :class:`tuna.backends.LibraryQueries`) is asked with the session's
settings; any other answers with :meth:`Backend.applicability`. A config the library gave
no answer for keeps the rows it had, and the report says why.

``stored_applicability`` reads the rows back for ``load_jobs``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import delete, select
from sqlalchemy.orm import Session as OrmSession

from tuna.backends import ApplicabilityAnswer, LibraryQueries, get_backend
from tuna.catalog.records import configs_with_tensors, conv_problem
from tuna.db import Database
from tuna.db.bulk import chunks, insert_missing
from tuna.db.models import (
    Solver,
    SolverApplicability,
)
from tuna.errors import NotFoundError, TunaError
from tuna.problems.conv import ConvProblem
from tuna.sessions import session_info, session_row, sync_solvers

REASON_LENGTH = 512  # solver_applicability.reason


@dataclass
class ApplicabilityReport:
    session: int
    backend: str
    source: str  # "library" (asked the library build) or "backend"
    configs: int = 0
    answered: int = 0
    applicable: int = 0  # (config, solver) rows stored as applicable
    not_applicable: int = 0
    failed: dict[int, str] = field(default_factory=dict)  # config -> why there is no answer
    unknown_solvers: Counter[str] = field(default_factory=Counter)  # named by the library only


def update_applicability(
    db: Database,
    session_id: int,
    *,
    tag: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> ApplicabilityReport:
    """Ask the session's backend which solvers apply to the configs tagged ``tag`` (or all
    configs) and store the answers, replacing the session's earlier rows for them."""
    with db.session() as s:
        sess = session_row(s, session_id)
        info = session_info(sess)
        sync_solvers(s, sess.backend)
        solver_ids = dict(
            s.execute(
                select(Solver.name, Solver.id).where(
                    Solver.backend == sess.backend, Solver.valid.is_(True)
                )
            ).all()
        )
        problems, invalid = _problems(s, tag)
    backend = get_backend(info.backend)
    library = isinstance(backend, LibraryQueries)
    report = ApplicabilityReport(session_id, info.backend, "library" if library else "backend")
    report.configs = len(problems) + len(invalid)
    report.failed.update(invalid)
    if progress:
        progress("asking", 0, len(problems))
    if isinstance(backend, LibraryQueries):
        answer = backend.session_applicability(info, problems)
        report.failed.update(answer.failed)
        verdicts = _library_verdicts(answer, problems, solver_ids, report)
    else:
        verdicts = {
            cid: {name: backend.applicability(p, name) for name in solver_ids}
            for cid, p in problems
        }
    if progress:
        progress("asking", len(problems), len(problems))
    report.answered = len(verdicts)
    rows = []
    for cid, by_solver in verdicts.items():
        for name, reason in by_solver.items():
            rows.append(
                {
                    "session": session_id,
                    "config": cid,
                    "solver": solver_ids[name],
                    "applicable": reason is None,
                    "reason": None if reason is None else reason[:REASON_LENGTH],
                }
            )
            if reason is None:
                report.applicable += 1
            else:
                report.not_applicable += 1
    with db.session() as s:
        for part in chunks(list(verdicts), 1000):
            s.execute(
                delete(SolverApplicability).where(
                    SolverApplicability.session == session_id,
                    SolverApplicability.config.in_(part),
                )
            )
        insert_missing(s, SolverApplicability, rows, progress=progress, stage="storing")
    return report


def _library_verdicts(
    answer: ApplicabilityAnswer,
    problems: Sequence[tuple[int, ConvProblem]],
    solver_ids: dict[str, int],
    report: ApplicabilityReport,
) -> dict[int, dict[str, str | None]]:
    """config -> solver -> None (applies) or the reason it does not, for answered configs."""
    verdicts: dict[int, dict[str, str | None]] = {}
    for cid, _p in problems:
        names = answer.applicable.get(cid)
        if names is None:
            continue
        report.unknown_solvers.update(n for n in names if n not in solver_ids)
        why = answer.reason(cid)
        verdicts[cid] = {name: None if name in names else why for name in solver_ids}
    return verdicts


def _problems(
    s: OrmSession, tag: str | None
) -> tuple[list[tuple[int, ConvProblem]], dict[int, str]]:
    query = configs_with_tensors(tag)
    problems: list[tuple[int, ConvProblem]] = []
    invalid: dict[int, str] = {}
    for cfg, xt, wt in s.execute(query):
        try:
            problems.append((cfg.id, conv_problem(cfg, xt, wt)))
        except TunaError as e:
            invalid[cfg.id] = f"config {cfg.id} is not a valid problem: {e}"
    if tag is not None and not problems and not invalid:
        raise NotFoundError(f"no config is tagged {tag!r}; import_configs -t {tag} -f FILE")
    return problems, invalid


def stored_applicability(
    s: OrmSession, session_id: int, config_ids: Iterable[int]
) -> dict[int, dict[int, tuple[bool, str | None]]]:
    """config -> solver id -> (applicable, reason), for the configs that have rows."""
    found: dict[int, dict[int, tuple[bool, str | None]]] = {}
    for part in chunks(sorted(set(config_ids)), 1000):
        for cid, sid, ok, reason in s.execute(
            select(
                SolverApplicability.config,
                SolverApplicability.solver,
                SolverApplicability.applicable,
                SolverApplicability.reason,
            ).where(SolverApplicability.session == session_id, SolverApplicability.config.in_(part))
        ):
            found.setdefault(cid, {})[sid] = (bool(ok), reason)
    return found
