"""Seeded test databases: one way to open a database at the head revision, and a noop queue.

``open_test_db`` opens a test database at the head revision, migrating it when it is empty (the
fixtures ``db``, ``lite``, ``mysql_db`` and ``cluster_db`` migrate once and reuse:
tests/support/databases.py); ``head_database`` gives a module-scoped fixture one of those to
seed once for many tests. ``seed`` inserts a noop session with configs, solvers and jobs
directly, so that queue tests do not depend on sessions or ``load_jobs``;
``force_state``/``expire_leases`` set up states by raw SQL, bypassing the state machine (test
setup only).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, select, text
from sqlalchemy.engine import make_url

from tests.support.databases import MysqlPool, copy_sqlite_template
from tuna.backends.base import KernelBinary
from tuna.backends.noop import SOLVERS
from tuna.db import Database, migrate, open_database
from tuna.db.engine import make_engine
from tuna.db.models import ConvConfig, Job, Solver, Tensor, TuningSession
from tuna.sessions import SessionSpec, create_session

ALL_NOOP_SOLVERS = tuple(s.name for s in SOLVERS)
KERNEL = KernelBinary("k", "-DX", b"\x7fELF kernel bytes")  # a compile outcome's kernel
# Noop solvers that apply to every (ungrouped) problem the seed makes.
UNIVERSAL = ("NoopDirect", "NoopTunable")


def open_test_db(url: str) -> Database:
    """Open a test database at the head revision (a MySQL test database starts empty).

    A SQLite file that does not exist yet becomes a copy of a migrated one (the same as
    migrating it, in a fraction of the time: tests/support/databases.py).
    """
    if url.startswith("sqlite"):
        path = make_url(url).database
        if path and path != ":memory:" and not Path(path).exists():
            copy_sqlite_template(Path(path))
    else:
        engine = make_engine(url)
        with engine.begin() as conn:
            if migrate.current_revision(conn) is None:
                migrate.upgrade(conn)
        engine.dispose()
    return open_database(url)


@contextmanager
def head_database(request: pytest.FixtureRequest, folder: Path) -> Iterator[Database]:
    """A database at the head revision for as long as the block lasts, on the dialect
    ``request.param`` names: ``sqlite`` (a copy of the migrated template, ``folder/tuna.db``)
    or ``mysql`` (one from this process's pool, given back cleaned: the ``mysql_db`` fixture's).
    For module-scoped fixtures that seed a database once for many tests."""
    if request.param == "sqlite":
        database = open_test_db(f"sqlite:///{folder / 'tuna.db'}")
        try:
            yield database
        finally:
            database.dispose()
    else:
        pool: MysqlPool = request.getfixturevalue("_mysql_pool")
        with pool.database() as database:
            yield database


@dataclass(frozen=True)
class Seeded:
    session: int
    jobs: list[int]
    solvers: dict[str, int]
    configs: list[int]


def make_session(db: Database, **fields: Any) -> int:
    """A session created as ``tuna session create`` creates one (its backend's solvers
    synced): noop on gfx90a with 104 CUs unless ``fields`` say otherwise. Its id."""
    spec: dict[str, Any] = {"arch": "gfx90a", "num_cu": 104, "backend": "noop", **fields}
    return create_session(db, SessionSpec(**spec)).id


def seed(
    db: Database,
    *,
    configs: int = 4,
    solvers: Sequence[str] = UNIVERSAL,
    environment: dict[str, Any] | None = None,
    label: str | None = None,
    priorities: Sequence[int] | None = None,
) -> Seeded:
    """A noop session with ``configs`` configs x ``solvers`` jobs (step perf), all new."""
    with db.session() as s:
        session_id = s.execute(
            insert(TuningSession).values(
                arch="gfx-noop",
                num_cu=1,
                backend="noop",
                fingerprint="test",
                environment=environment or {},
            )
        ).inserted_primary_key[0]
        solver_ids = _solvers(s, solvers)
        config_ids = _configs(s, configs, session_id)
        rows = [
            {
                "session": session_id,
                "config": c,
                "solver": solver_ids[name],
                "step": "perf",
                "label": label,
            }
            for c in config_ids
            for name in solvers
        ]
        if priorities is not None:
            for row, p in zip(rows, priorities, strict=False):
                row["priority"] = p
        for i in range(0, len(rows), 5000):
            s.execute(insert(Job), rows[i : i + 5000])
        job_ids = list(
            s.execute(select(Job.id).where(Job.session == session_id).order_by(Job.id)).scalars()
        )
    return Seeded(session_id, job_ids, solver_ids, config_ids)


def _solvers(s: Any, names: Sequence[str]) -> dict[str, int]:
    existing = dict(s.execute(select(Solver.name, Solver.id).where(Solver.backend == "noop")).all())
    info = {x.name: x for x in SOLVERS}
    for name in names:
        if name not in existing:
            x = info[name]
            existing[name] = s.execute(
                insert(Solver).values(
                    backend="noop",
                    name=name,
                    tunable=x.tunable,
                    numeric_id=x.numeric_id,
                    algorithm=x.algorithm,
                )
            ).inserted_primary_key[0]
    return {n: existing[n] for n in names}


def _configs(s: Any, n: int, session_id: int) -> list[int]:
    """``n`` distinct 2D forward configs, alternately 1x1 and 3x3 filters."""
    tensors: dict[tuple[Any, ...], int] = {}
    specs = []
    for i in range(n):
        batch, hw, fil = 1 + i % 64, 4 + (i // 64) % 64, 1 if i % 2 else 3
        chans = 8 * (1 + i // 4096)
        x = (4, batch, chans, hw, hw, 0, "NCHW", "FP32")
        w = (4, chans, chans, fil, fil, 0, "NCHW", "FP32")
        specs.append((i, x, w, fil))
        for t in (x, w):
            tensors.setdefault(t, 0)
    cols = ("num_dims", "dim0", "dim1", "dim2", "dim3", "dim4", "layout", "data_type")
    existing = {
        tuple(r[1:]): r[0]
        for r in s.execute(select(Tensor.id, *[getattr(Tensor, c) for c in cols]))
    }
    missing = [dict(zip(cols, t, strict=True)) for t in tensors if t not in existing]
    for i in range(0, len(missing), 5000):
        s.execute(insert(Tensor), missing[i : i + 5000])
    ids = {
        tuple(r[1:]): r[0]
        for r in s.execute(select(Tensor.id, *[getattr(Tensor, c) for c in cols]))
    }
    rows = []
    for i, x, w, fil in specs:
        pad = fil // 2
        rows.append(
            {
                "fdb_key": f"test-{session_id}-{i}",
                "spatial_dim": 2,
                "direction": "F",
                "pad_h": pad,
                "pad_w": pad,
                "conv_stride_h": 1,
                "conv_stride_w": 1,
                "dilation_h": 1,
                "dilation_w": 1,
                "input_tensor": ids[x],
                "weight_tensor": ids[w],
                "out_layout": "NCHW",
                "out_type": "FP32",
                "driver": f"test config {i}",
            }
        )
    for i in range(0, len(rows), 5000):
        s.execute(insert(ConvConfig), rows[i : i + 5000])
    return list(
        s.execute(
            select(ConvConfig.id)
            .where(ConvConfig.fdb_key.like(f"test-{session_id}-%"))
            .order_by(ConvConfig.id)
        ).scalars()
    )


def force_state(db: Database, job_id: int, state: str, **values: Any) -> None:
    """Test setup only: put a job in ``state`` by raw SQL, bypassing the state machine."""
    sets = ", ".join(f"{k} = :{k}" for k in ("state", *values))
    with db.session() as s:
        s.execute(
            text(f"UPDATE job SET {sets} WHERE id = :id"), {"state": state, "id": job_id, **values}
        )


def expire_leases(db: Database, job_ids: Sequence[int] | None = None) -> None:
    """Test setup only: move the lease expiry of in-flight jobs into the past."""
    past = (
        "NOW(6) - INTERVAL 1 SECOND"
        if not db.is_sqlite
        else ("strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 seconds')")
    )
    where = "state IN ('compile_start', 'eval_start')"
    with db.session() as s:
        if job_ids is None:
            s.execute(text(f"UPDATE job SET lease_expires = {past} WHERE {where}"))
        else:
            for job_id in job_ids:
                s.execute(
                    text(f"UPDATE job SET lease_expires = {past} WHERE {where} AND id = :id"),
                    {"id": job_id},
                )


def job_row(db: Database, job_id: int) -> Any:
    with db.session() as s:
        return s.execute(select(Job).where(Job.id == job_id)).scalar_one()
