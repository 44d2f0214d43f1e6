"""Migration 0003 (chosen kernels, golden rows' jobs and frozen kernels), on both databases.

Downgraded to 0002 and upgraded again, a database gets back what the exports read: the
kernel a find row links is chosen, a golden row names its find row's job and freezes its
chosen kernels.
"""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, select

from tests.results.seed import ONE_BY_ONE, THREE_BY_THREE, run_noop
from tuna.db import Database, migrate
from tuna.db.models import Golden, GoldenKernel, JobKernel
from tuna.results.golden import update_golden

Pairs = list[tuple[int, int | None]]


def state(db: Database) -> tuple[Pairs, Pairs, Pairs]:
    """(job, kernel) chosen; (golden row, job); (golden row, kernel) frozen."""
    queries = (
        select(JobKernel.job, JobKernel.kernel).where(JobKernel.chosen),
        select(Golden.id, Golden.job),
        select(GoldenKernel.golden, GoldenKernel.kernel),
    )
    with db.session() as s:
        chosen, golden, frozen = ([(a, b) for a, b in s.execute(q)] for q in queries)
    return sorted(chosen), sorted(golden), sorted(frozen)


def test_down_to_0002_and_up_again_fills_in_what_the_exports_read(db: Database) -> None:
    sid = run_noop(db, [ONE_BY_ONE, THREE_BY_THREE])
    update_golden(db, 1, sid)
    before = state(db)
    chosen, golden, frozen = before
    assert chosen and frozen and len(golden) == len(frozen)  # noop names one kernel per job
    with db.engine.connect() as conn:
        command.downgrade(migrate.alembic_config(conn), "0002")
        conn.commit()
        assert migrate.current_revision(conn) == "0002"
        insp = inspect(conn)
        assert "golden_kernel" not in insp.get_table_names()
        assert "chosen" not in {c["name"] for c in insp.get_columns("job_kernel")}
        assert "job" not in {c["name"] for c in insp.get_columns("golden")}
        migrate.upgrade(conn)
        conn.commit()
    assert state(db) == before
