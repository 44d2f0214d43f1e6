"""Result rows for the results tests, written straight through the ORM.

Configs come from real MIOpenDriver lines (``import_configs``), sessions from
``create_session`` (backend ``noop`` unless asked), find/perf rows are inserted as given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import insert, select

from tests.support.seed import make_session
from tuna.backends import SolverInfo, register_backend
from tuna.backends.noop import NoopBackend
from tuna.catalog.importer import import_configs
from tuna.db import Database
from tuna.db.models import ConvConfig, FindDb, PerfDb, Solver
from tuna.jobs.load import load_jobs
from tuna.problems.conv import ConvProblem
from tuna.worker.loop import run_worker

# 1x1: NoopDirect, NoopGemm1x1, NoopTunable apply; 3x3 stride 1: NoopDirect, NoopWinograd3x3,
# NoopTunable.
ONE_BY_ONE = "conv -n 16 -c 64 -H 56 -W 56 -k 64 -y 1 -x 1 -F 1"
THREE_BY_THREE = "conv -n 16 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1"
K1 = "64-56-56-1x1-64-56-56-16-0x0-1x1-1x1-0-NCHW-FP32-F"
K3 = "64-56-56-3x3-64-56-56-16-1x1-1x1-1x1-0-NCHW-FP32-F"


def add_configs(db: Database, lines: Sequence[str], tag: str = "net") -> dict[str, int]:
    """Import driver lines; returns every config's id by find-db key."""
    import_configs(db, list(enumerate(lines, start=1)), tag=tag)
    with db.session() as s:
        return dict(s.execute(select(ConvConfig.fdb_key, ConvConfig.id)).all())


def solver_ids(db: Database, backend: str = "noop") -> dict[str, int]:
    with db.session() as s:
        q = select(Solver.name, Solver.id).where(Solver.backend == backend)
        return dict(s.execute(q).all())


def add_find(
    db: Database,
    session: int,
    rows: Iterable[tuple[str, str, float, int, str]],
    backend: str = "noop",
) -> None:
    """(key, solver, time_ms, workspace, algorithm) rows of a session's find db."""
    configs = _config_ids(db)
    solvers = solver_ids(db, backend)
    values = [
        {
            "session": session,
            "config": configs[key],
            "solver": solvers[solver],
            "time_ms": t,
            "workspace": ws,
            "algorithm": algo,
        }
        for key, solver, t, ws, algo in rows
    ]
    with db.session() as s:
        s.execute(insert(FindDb), values)


def add_perf(db: Database, session: int, rows: Iterable[tuple[str, str, str]]) -> None:
    """(key, solver, params) rows of a session's perf db."""
    configs = _config_ids(db)
    solvers = solver_ids(db)
    values = [
        {"session": session, "config": configs[k], "solver": solvers[sv], "params": p}
        for k, sv, p in rows
    ]
    with db.session() as s:
        s.execute(insert(PerfDb), values)


def find_rows(db: Database, session: int) -> list[tuple[str, str, str, int, str]]:
    """(key, solver, time as written, workspace, algorithm), sorted."""
    with db.session() as s:
        q = (
            select(ConvConfig.fdb_key, Solver.name, FindDb.time_ms, FindDb.workspace,
                   FindDb.algorithm)
            .join(ConvConfig, ConvConfig.id == FindDb.config)
            .join(Solver, Solver.id == FindDb.solver)
            .where(FindDb.session == session)
        )  # fmt: skip
        return sorted((k, sv, f"{t:g}", ws, a) for k, sv, t, ws, a in s.execute(q))


def perf_rows(db: Database, session: int) -> list[tuple[str, str, str]]:
    with db.session() as s:
        q = (
            select(ConvConfig.fdb_key, Solver.name, PerfDb.params)
            .join(ConvConfig, ConvConfig.id == PerfDb.config)
            .join(Solver, Solver.id == PerfDb.solver)
            .where(PerfDb.session == session)
        )
        return sorted(tuple(r) for r in s.execute(q))  # type: ignore[misc]


def _config_ids(db: Database) -> dict[str, int]:
    with db.session() as s:
        return dict(s.execute(select(ConvConfig.fdb_key, ConvConfig.id)).all())


class WideBackend(NoopBackend):
    """A test backend with six solvers that all apply to every problem (for the top-4 rule)."""

    name = "results-wide"
    declares_spaces = False  # no tunable solver

    def solvers(self) -> list[SolverInfo]:
        return [SolverInfo(f"Wide{c}", algorithm="direct") for c in "ABCDEF"]

    def applicability(self, problem: ConvProblem, solver: str) -> str | None:
        return None if solver.startswith("Wide") else f"unknown solver {solver}"


register_backend(WideBackend.name, WideBackend)


def run_noop(db: Database, lines: Sequence[str], **session: Any) -> int:
    """A noop session that tuned ``lines`` for real: load_jobs, compile and evaluate."""
    add_configs(db, lines, tag="run")
    sid = make_session(db, **session)
    load_jobs(db, sid, step="find", tag="run")
    for phase in ("compile", "eval"):
        run_worker(db, sid, phase, burst=True, handle_signals=False, idle_sleep=0.01,
                   record_interval=0.0, claim_batch=16)  # fmt: skip
    return sid
