"""A small tuning history for the library's tests: real configs, sessions, find and perf rows.

Rows are inserted directly (test setup only), with their ``created`` time taken from the
database clock minus an age, so that expiry rules see them as old as asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select

from tests.support.seed import make_session
from tuna.catalog.importer import import_configs
from tuna.catalog.query import resolve
from tuna.db import Database
from tuna.db.clock import db_now
from tuna.db.models import ConvConfig, FindDb, PerfDb, Platform, Solver

LINES = (
    "./bin/MIOpenDriver conv -n 16 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1",
    "./bin/MIOpenDriver conv -n 16 -c 64 -H 56 -W 56 -k 64 -y 1 -x 1 -p 0 -q 0 -F 1",
    "./bin/MIOpenDriver conv -n 16 -c 128 -H 28 -W 28 -k 128 -y 3 -x 3 -p 1 -q 1 -F 1",
)
ARCH, NUM_CU = "gfx90a", 104


@dataclass(frozen=True)
class History:
    configs: list[int]  # in the order of LINES
    keys: list[str]
    solvers: dict[str, int]


def make_configs(db: Database, tag: str = "net") -> History:
    """The configs of LINES (tagged ``tag``) and the noop backend's solvers."""
    import_configs(db, list(enumerate(LINES, 1)), tag=tag)
    session(db)  # a first session makes the noop solver rows
    keys = [e.key for e in resolve(list(enumerate(LINES, 1)))]
    with db.session() as s:
        ids = dict(s.execute(select(ConvConfig.fdb_key, ConvConfig.id)).all())
        solvers = dict(
            s.execute(select(Solver.name, Solver.id).where(Solver.backend == "noop")).all()
        )
    return History([ids[k] for k in keys], keys, solvers)


def session(db: Database, **changes: Any) -> int:
    """A session of the history's target and library build (make_session's fields)."""
    build = {"arch": ARCH, "num_cu": NUM_CU, "library_version": "3.3.0", "library_commit": "abc"}
    return make_session(db, **{**build, **changes})


def add_find(
    db: Database,
    session_id: int,
    config: int,
    solver: int,
    time_ms: float,
    *,
    params: str | None = None,
    perf_params: str | None = None,
    age_s: float = 0,
) -> None:
    with db.session() as s:
        created = s.scalar(select(db_now(-age_s)))
        s.execute(
            insert(FindDb).values(
                session=session_id, config=config, solver=solver, time_ms=time_ms,
                workspace=0, algorithm="miopenConvolutionFwdAlgoDirect", params=params,
                created=created,
            )
        )  # fmt: skip
        if perf_params is not None:
            s.execute(
                insert(PerfDb).values(
                    session=session_id, config=config, solver=solver, params=perf_params,
                    created=created,
                )
            )  # fmt: skip


def add_platform(db: Database, info: dict[str, Any]) -> int:
    """A platform row (test setup: the digest is the JSON itself, hashed)."""
    import hashlib
    import json

    digest = hashlib.sha256(json.dumps(info, sort_keys=True).encode()).hexdigest()
    with db.session() as s:
        return int(
            s.execute(insert(Platform).values(digest=digest, info=info)).inserted_primary_key[0]
        )


def add_measurements(
    db: Database,
    session_id: int,
    config: int,
    solver: int,
    times: list[float | None],
    *,
    platform: int,
    strategy: str | None = "exhaustive",
    age_s: float = 0,
    budget: int | None = None,
) -> None:
    """One measurement per time (None: an invalid candidate), params ``p<i>``, written as a
    worker's record writes them (rows and effort counts), taken ``age_s`` ago."""
    from tuna.jobs.measurements import write_measurements

    with db.session() as s:
        taken = s.scalar(select(db_now(-age_s)))
    with db.transaction() as conn:
        write_measurements(
            conn,
            [
                {
                    "session": session_id, "job": None, "config": config, "solver": solver,
                    "params": f"p{i}", "platform": platform, "machine": None,
                    "strategy": strategy, "time_ms": t, "valid": t is not None,
                    "reason": None if t is not None else "wrong result", "taken": taken,
                    "budget": budget,
                }
                for i, t in enumerate(times)
            ],
        )  # fmt: skip
