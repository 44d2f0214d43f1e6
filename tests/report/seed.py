"""A database with something to look at, made through Tuna's own services.

Configs are MIOpenDriver lines written here (2x 8x8 problems, 1x1 and 3x3 filters, three
directions); sessions use the ``noop`` backend and are tuned for real by burst workers on
two machines. A second session's jobs fail (``NOOP_FAIL``) and a third loses leases to
the reaper, so the fleet figures and failure pages have data. Shared by the report and
dashboard tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from tests.support.seed import head_database, make_session
from tuna.catalog.importer import import_configs
from tuna.db import Database
from tuna.db.models import ConvConfig, FindDb, Solver
from tuna.fleet.machines import add_machine
from tuna.jobs import Phase, claim_jobs, reap_expired
from tuna.jobs.load import load_jobs
from tuna.worker.loop import run_worker

LINES = [
    f"conv -n 2 -c {c} -H 8 -W 8 -k 8 -y {f} -x {f} -p {f // 2} -q {f // 2} -F {d}"
    for c in (4, 8)
    for f in (1, 3)
    for d in (1, 2, 4)
]


EVALUATED_ON_A = 12


@dataclass(frozen=True)
class Seeded:
    tuned: int  # compiled on "node-a", evaluated there (EVALUATED_ON_A) and on "node-b"
    failing: int  # every job errored: "boom"
    leases: int  # jobs whose lease the reaper took back
    empty: int  # a session with no job
    machines: dict[str, int]


def session(db: Database, label: str, env: dict[str, str] | None = None) -> int:
    """A noop session; the label is in its environment so that no two share a fingerprint
    (load_jobs skips work a session of the same fingerprint has done)."""
    return make_session(db, label=label, environment={"SEED": label, **(env or {})})


def work(
    db: Database,
    sid: int,
    machine: int | None,
    phases: tuple[str, ...],
    max_jobs: int | None = None,
) -> None:
    for phase in phases:
        run_worker(db, sid, phase, burst=True, handle_signals=False, idle_sleep=0.01,
                   record_interval=0.0, claim_batch=4, machine=machine,
                   max_jobs=max_jobs)  # fmt: skip


def seed(db: Database) -> Seeded:
    import_configs(db, list(enumerate(LINES, start=1)), tag="net")
    machines = {h: add_machine(db, h, arch="gfx90a", num_cu=104).id for h in ("node-a", "node-b")}
    tuned = session(db, "tuned")
    load_jobs(db, tuned, step="find", tag="net")
    work(db, tuned, machines["node-a"], ("compile",))
    work(db, tuned, machines["node-a"], ("eval",), max_jobs=EVALUATED_ON_A)
    work(db, tuned, machines["node-b"], ("eval",))
    failing = session(db, "failing", {"NOOP_FAIL": "boom"})
    load_jobs(db, failing, step="find", tag="net")
    work(db, failing, machines["node-a"], ("compile",))
    leases = session(db, "leases")
    load_jobs(db, leases, step="find", tag="net")
    claim_jobs(db, leases, Phase.COMPILE, owner="w1", limit=3, lease_seconds=-1,
               machine=machines["node-b"])  # fmt: skip
    reap_expired(db, session_id=leases)
    empty = session(db, "empty")
    return Seeded(tuned, failing, leases, empty, machines)


def add_find_rows(
    db: Database, sid: int, key_index: int, rows: list[tuple[str, float, int]]
) -> int:
    """(solver, time_ms, workspace) rows of one config of session ``sid``; its config id."""
    with db.session() as s:
        config = s.execute(select(ConvConfig.id).order_by(ConvConfig.id)).scalars().all()[key_index]
        solvers = dict(
            s.execute(select(Solver.name, Solver.id).where(Solver.backend == "noop")).all()
        )
        s.execute(
            insert(FindDb),
            [{"session": sid, "config": config, "solver": solvers[name], "time_ms": t,
              "workspace": ws, "algorithm": "x"} for name, t, ws in rows],
        )  # fmt: skip
    return config


@contextmanager
def seeded_database(request: pytest.FixtureRequest, folder: Path) -> Iterator[Database]:
    """A database for a whole module to seed, on the dialect ``request.param`` names
    (:func:`tests.support.seed.head_database`: at the head revision, SQLite in ``folder``).

    Seeding runs real workers and takes a while on MariaDB, so the modules that only read
    share one; a test that adds rows adds them to a session no other test reads.
    """
    with head_database(request, folder) as db:
        yield db
