"""The failed jobs behind a reason: the drill-down's statement reads a range of its index."""

from __future__ import annotations

import sqlalchemy as sa

from tests.support.seed import make_session
from tuna.db import Database
from tuna.db.enums import JobState, JobStep
from tuna.db.models import Job
from tuna.jobs.detail import failed_jobs, failed_jobs_query

RARE = "rare: one machine ran out of disk"


def seed_failures(db: Database) -> tuple[int, list[int]]:
    """A session of 3,000 jobs: most evaluated, 300 errored with a common reason, 3 with a
    rare one (the last three errored), 30 errored with none; the rare ones' ids."""
    session = make_session(db)
    rows = []
    for i in range(3000):
        state, reason = JobState.EVALUATED, None
        if i % 10 == 0:
            state, reason = JobState.ERRORED, "timeout (gave up after 4 tries)"
        elif i % 100 == 1:
            state = JobState.ERRORED
        elif i in (2995, 2996, 2998):
            state, reason = JobState.ERRORED, RARE
        rows.append({"session": session, "step": JobStep.FIND, "state": state, "reason": reason})
    with db.transaction() as conn:
        conn.execute(sa.insert(Job), rows)
        if conn.dialect.name != "sqlite":
            conn.exec_driver_sql("ANALYZE TABLE job")
        else:
            conn.exec_driver_sql("ANALYZE")
        rare = conn.execute(sa.select(Job.id).where(Job.reason == RARE).order_by(Job.id))
        return session, list(rare.scalars())


def plan(db: Database, stmt: sa.Select) -> str:
    """The database's plan of ``stmt``, as text (MariaDB's EXPLAIN, SQLite's QUERY PLAN)."""
    with db.transaction() as conn:
        sql = str(stmt.compile(conn, compile_kwargs={"literal_binds": True}))
        if conn.dialect.name == "sqlite":
            return " ".join(str(r[-1]) for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}"))
        rows = conn.exec_driver_sql(f"EXPLAIN {sql}").mappings().all()
        return " ".join(f"{r['table']}:{r['type']}:{r['key']}" for r in rows)


def test_a_reasons_failed_jobs_are_a_range_of_the_failure_index(db: Database) -> None:
    session, rare = seed_failures(db)
    got = failed_jobs(db, session, JobState.ERRORED, RARE)
    assert [j.id for j in got] == rare and {j.reason for j in got} == {RARE}
    assert [j.id for j in failed_jobs(db, session, JobState.ERRORED, RARE, after=rare[0])] == (
        rare[1:]
    )
    stmt = failed_jobs_query(session, JobState.ERRORED, RARE)
    shown = plan(db, stmt)
    # without the index: a range over the primary key, reading rows until 100 match
    assert "ix_job_failure" in shown, shown
    assert len(failed_jobs(db, session, JobState.ERRORED, "", limit=1000)) == 30  # no reason
    assert "ix_job_failure" in plan(db, failed_jobs_query(session, JobState.ERRORED, ""))
    common = failed_jobs(db, session, JobState.ERRORED, "timeout (gave up after 4 tries)")
    assert len(common) == 100 and [j.id for j in common] == sorted(j.id for j in common)
    assert len(failed_jobs(db, session, JobState.ERRORED, None, limit=1000)) == 333
