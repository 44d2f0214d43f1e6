"""A Core statement compiled once into the driver's SQL does what ``conn.execute`` does."""

from __future__ import annotations

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, bindparam, select, update
from sqlalchemy import exc as sa_exc

from tests.support.seed import job_row, seed
from tuna.db import Database, tables
from tuna.db import precompiled as pc
from tuna.db.enums import JobState, JobStep
from tuna.db.precompiled import Precompiled
from tuna.errors import DatabaseError

S = JobState
Job = tables.job.c


def _move(to: JobState = S.NOT_APPLICABLE) -> Precompiled:
    """A compare-and-set with an enum constant in SET and WHERE, a bound value and an IN list."""
    stmt = (
        update(tables.job)
        .where(Job.id.in_(bindparam("ids", expanding=True)), Job.state == S.NEW)
        .values(state=to, reason=bindparam("why", type_=Job.reason.type))
    )
    return Precompiled(stmt, expanding=["ids"])


def test_it_moves_the_rows_conn_execute_would_for_each_in_list_length(db: Database):
    sd = seed(db, configs=6, solvers=["NoopDirect"])
    move = _move()
    with db.transaction() as conn:
        assert move.execute(conn, {"ids": sd.jobs[:1], "why": "one"}).rowcount == 1
        assert move.execute(conn, {"ids": sd.jobs[1:4], "why": "three"}).rowcount == 3
        # Fenced by the state: the first job is no longer new, one row of two moves.
        assert move.execute(conn, {"ids": [sd.jobs[0], sd.jobs[4]], "why": "two"}).rowcount == 1
    rows = [job_row(db, j) for j in sd.jobs]
    assert [(r.state, r.reason) for r in rows] == [
        (S.NOT_APPLICABLE, "one"),
        (S.NOT_APPLICABLE, "three"),
        (S.NOT_APPLICABLE, "three"),
        (S.NOT_APPLICABLE, "three"),
        (S.NOT_APPLICABLE, "two"),
        (S.NEW, None),
    ]


def test_executemany_takes_one_parameter_set_per_row(db: Database):
    sd = seed(db, configs=3, solvers=["NoopDirect"])
    per_row = Precompiled(
        update(tables.job)
        .where(Job.id == bindparam("row_id", type_=Integer), Job.state == S.NEW)
        .values(state=S.ERRORED, reason=bindparam("why", type_=Job.reason.type))
    )
    sets = [{"row_id": j, "why": f"job {j}"} for j in sd.jobs[:2]]
    with db.transaction() as conn:
        assert per_row.execute(conn, sets).rowcount == 2
    assert [job_row(db, j).reason for j in sd.jobs] == [
        f"job {sd.jobs[0]}",
        f"job {sd.jobs[1]}",
        None,
    ]
    assert job_row(db, sd.jobs[2]).state is S.NEW


def test_rows_come_back_as_the_drivers_tuples_in_column_order(db: Database):
    sd = seed(db, configs=2, solvers=["NoopDirect"])
    ready = Precompiled(
        select(Job.id, Job.step)
        .where(Job.session == bindparam("session", type_=Integer), Job.state == S.NEW)
        .order_by(Job.id)
        .limit(bindparam("limit", type_=Integer))
    )
    with db.transaction() as conn:
        one = ready.execute(conn, {"session": sd.session, "limit": 1})
        assert [(i, JobStep(step)) for i, step in one.rows] == [(sd.jobs[0], JobStep.PERF)]
        assert len(ready.execute(conn, {"session": sd.session, "limit": 5}).rows) == 2


def test_a_driver_error_is_raised_as_sqlalchemy_raises_it(db: Database):
    """As from conn.execute: a DBAPIError from the driver's error (what tuna.db.retry reads),
    which Database.transaction turns into a DatabaseError after rolling back."""
    sd = seed(db, configs=1, solvers=["NoopDirect"])
    # The solver id must name a solver: the foreign key refuses the write.
    bad = Precompiled(
        update(tables.job)
        .where(Job.id == bindparam("row_id", type_=Integer))
        .values(solver=bindparam("solver", type_=Integer), label="never")
    )
    with pytest.raises(DatabaseError) as failed, db.transaction() as conn:
        conn.execute(update(tables.job).where(Job.id == sd.jobs[0]).values(label="rolled back"))
        bad.execute(conn, {"row_id": sd.jobs[0], "solver": 10**9})
    cause = failed.value.__cause__
    assert isinstance(cause, sa_exc.IntegrityError), repr(cause)
    assert isinstance(cause.orig, db.engine.dialect.loaded_dbapi.Error)
    assert not cause.connection_invalidated
    assert job_row(db, sd.jobs[0]).label is None


def test_in_list_lengths_past_the_cap_run_through_conn_execute(db: Database, monkeypatch):
    monkeypatch.setattr(pc, "MAX_SHAPES", 1)
    sd = seed(db, configs=3, solvers=["NoopDirect"])
    move = _move()
    with db.transaction() as conn:
        assert move.execute(conn, {"ids": sd.jobs[:1], "why": "kept"}).rowcount == 1
        assert move.execute(conn, {"ids": sd.jobs[1:], "why": "not kept"}).rowcount == 2
    assert [job_row(db, j).state for j in sd.jobs] == [S.NOT_APPLICABLE] * 3
    assert len(move._dialects[db.engine.dialect][1]) == 1


def test_a_python_side_default_leaves_the_statement_to_conn_execute(lite: Database):
    # An onupdate computed in Python per execution cannot be frozen into the SQL string.
    calls = []
    t = Table(
        "bumped",
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("n", Integer),
        Column("seen", Integer, onupdate=lambda: calls.append(1) or len(calls)),
    )
    with lite.transaction() as conn:
        t.create(conn)
        conn.execute(t.insert(), [{"id": 1, "n": 0}])
        bump = Precompiled(t.update().where(t.c.id == bindparam("row", type_=Integer)).values(n=5))
        bump.execute(conn, {"row": 1})
        bump.execute(conn, {"row": 1})
        assert conn.execute(select(t.c.n, t.c.seen)).one() == (5, 2)
    assert bump._dialects[lite.engine.dialect][0] is None
