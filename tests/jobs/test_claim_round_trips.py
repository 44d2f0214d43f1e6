"""What a claim costs on the wire, and the pool settings that keep it at three round trips.

A claim is SELECT ... FOR UPDATE SKIP LOCKED, UPDATE, COMMIT: no ping of a connection used
moments ago, no ROLLBACK after the COMMIT, nothing read back. The wire is watched through
PyMySQL's public connection methods (``query``, ``commit``, ``rollback``, ``ping``).
"""

from __future__ import annotations

import sqlite3

import pymysql
import pytest
from sqlalchemy import select, text, update
from sqlalchemy.dialects import mysql

from tests.support.seed import job_row, seed
from tuna.backends import CompileOutcome
from tuna.db import Database
from tuna.db import engine as db_engine
from tuna.db.enums import JobState
from tuna.db.models import Job
from tuna.errors import DatabaseError
from tuna.jobs import Phase, claim_jobs, record_and_claim, record_outcomes
from tuna.jobs.claims import claim_query

S = JobState


@pytest.fixture
def my(mysql_db: Database) -> Database:
    return mysql_db


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every command PyMySQL sends from now on: the SQL of a query, else the method's name."""
    sent: list[str] = []
    cls = pymysql.connections.Connection
    for name in ("query", "commit", "rollback", "ping"):
        original = getattr(cls, name)

        def watched(self, *args, _name=name, _original=original, **kwargs):
            sent.append(" ".join(str(args[0]).split()) if _name == "query" else _name.upper())
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, watched)
    return sent


def _connection_id(db: Database) -> int:
    with db.engine.connect() as conn:
        return int(conn.exec_driver_sql("SELECT CONNECTION_ID()").scalar_one())


def _kill(db: Database, conn_id: int) -> None:
    admin = Database(db.url)
    with admin.engine.connect() as conn:
        conn.exec_driver_sql(f"KILL {conn_id}")
    admin.dispose()


def test_a_claim_is_select_update_commit_and_a_record_update_commit(my, wire):
    sd = seed(my, configs=4, solvers=["NoopDirect", "NoopTunable"])
    claim_jobs(my, sd.session, Phase.COMPILE, owner="warm")  # the pool holds a connection
    wire.clear()
    jobs = claim_jobs(my, sd.session, Phase.COMPILE, owner="w", limit=4)
    assert len(wire) == 3, wire
    select_sql, update_sql, commit = wire
    assert select_sql.startswith("SELECT") and select_sql.endswith("FOR UPDATE SKIP LOCKED")
    # One UPDATE by primary key; the lease expiry is the server's clock, computed in it.
    assert update_sql.startswith("UPDATE job SET state='compile_start'")
    assert "lease_expires=(NOW(6) + INTERVAL 60.0e0 SECOND)" in update_sql
    ids = ", ".join(str(i) for i in sorted(j.id for j in jobs))
    assert f"WHERE job.id IN ({ids}) AND job.state = 'new'" in update_sql
    assert commit == "COMMIT"
    wire.clear()
    record_outcomes(my, "w", [(j, CompileOutcome()) for j in jobs])
    assert [w.split(" ")[0] for w in wire] == ["UPDATE", "COMMIT"]


def test_a_worker_records_and_claims_its_next_job_in_four_round_trips_and_one_commit(my, wire):
    """At one job per claim, separate record and claim cost 5 round trips and 2 durable
    commits per job; together 4 and 1."""
    sd = seed(my, configs=4, solvers=["NoopDirect"])
    [job] = claim_jobs(my, sd.session, Phase.COMPILE, owner="w")
    wire.clear()
    rec, [nxt] = record_and_claim(my, "w", [(job, CompileOutcome())], sd.session, Phase.COMPILE)
    assert rec.states == {job.id: S.COMPILED}
    assert [w.split(" ")[0] for w in wire] == ["UPDATE", "SELECT", "UPDATE", "COMMIT"], wire
    assert wire[0].startswith("UPDATE job SET state='compiled'")
    assert wire[1].endswith("FOR UPDATE SKIP LOCKED")
    assert f"WHERE job.id IN ({nxt.id}) AND job.state = 'new'" in wire[2]


def test_a_connection_left_in_a_transaction_is_rolled_back_on_return(my, wire):
    sd = seed(my, configs=1, solvers=["NoopDirect"])
    with my.engine.connect() as conn:
        conn.execute(select(Job.id).where(Job.id == sd.jobs[0]).with_for_update()).all()
        wire.clear()
    assert wire == ["ROLLBACK"]
    # The row lock went with it: a claim takes the job at once.
    assert [j.id for j in claim_jobs(my, sd.session, Phase.COMPILE, owner="w")] == sd.jobs


def test_a_connection_idle_past_the_window_is_pinged(my, wire, monkeypatch):
    sd = seed(my, configs=1, solvers=["NoopDirect"])
    claim_jobs(my, sd.session, Phase.COMPILE, owner="warm")
    monkeypatch.setattr(db_engine, "PING_AFTER_IDLE_S", 0.0)
    wire.clear()
    assert claim_jobs(my, sd.session, Phase.COMPILE, owner="w") == []
    assert wire[0] == "PING"


def test_a_dead_idle_connection_is_replaced_before_the_claim(my, monkeypatch):
    sd = seed(my, configs=1, solvers=["NoopDirect"])
    _kill(my, _connection_id(my))
    monkeypatch.setattr(db_engine, "PING_AFTER_IDLE_S", 0.0)
    [job] = claim_jobs(my, sd.session, Phase.COMPILE, owner="w")
    assert job.id == sd.jobs[0]


def test_a_connection_that_died_within_the_window_fails_once_then_is_replaced(my, monkeypatch):
    # The trade-off of not pinging busy connections: the first transaction on a connection
    # that died moments after its last use fails (the worker loop repeats it), the next
    # one gets a fresh connection.
    sd = seed(my, configs=1, solvers=["NoopDirect"])
    monkeypatch.setattr(db_engine, "PING_AFTER_IDLE_S", 3600.0)
    _kill(my, _connection_id(my))
    with pytest.raises(DatabaseError) as failed:
        claim_jobs(my, sd.session, Phase.COMPILE, owner="w")
    assert failed.value.__cause__.connection_invalidated
    assert job_row(my, sd.jobs[0]).state is S.NEW
    [job] = claim_jobs(my, sd.session, Phase.COMPILE, owner="w")
    assert job.id == sd.jobs[0]


def test_leases_follow_each_claims_lease_seconds(db):
    sd = seed(db, configs=2, solvers=["NoopDirect"])
    [short] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", lease_seconds=30)
    [long] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", lease_seconds=600)
    for job, seconds in ((short, 30), (long, 600)):
        row = job_row(db, job.id)
        assert seconds - 1 <= (row.lease_expires - row.compile_start).total_seconds() <= seconds + 1


def test_claim_query_renders_with_its_values():
    sql = str(
        claim_query(7, Phase.EVAL, 16).compile(
            dialect=mysql.dialect(), compile_kwargs={"literal_binds": True}
        )
    )
    sql = " ".join(sql.split())
    assert "job.result" in sql
    assert "WHERE job.session = 7 AND job.state = 'compiled'" in sql
    assert sql.endswith("ORDER BY job.priority, job.id LIMIT 16 FOR UPDATE SKIP LOCKED")


def test_a_transaction_commits_or_rolls_back_and_translates_driver_errors(db):
    sd = seed(db, configs=1, solvers=["NoopDirect"])
    with pytest.raises(RuntimeError), db.transaction() as conn:
        conn.execute(update(Job).where(Job.id == sd.jobs[0]).values(label="changed"))
        raise RuntimeError("boom")
    assert job_row(db, sd.jobs[0]).label is None
    with db.transaction() as conn:
        conn.execute(update(Job).where(Job.id == sd.jobs[0]).values(label="kept"))
    assert job_row(db, sd.jobs[0]).label == "kept"
    with pytest.raises(DatabaseError, match="no_such_table"), db.transaction() as conn:
        conn.execute(text("SELECT * FROM no_such_table"))


def test_an_immediate_transaction_takes_sqlites_write_lock_at_begin(lite, tmp_path):
    seed(lite, configs=1, solvers=["NoopDirect"])
    with lite.transaction(immediate=True):
        other = sqlite3.connect(tmp_path / "tuna.db", timeout=0, isolation_level=None)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
        other.close()
