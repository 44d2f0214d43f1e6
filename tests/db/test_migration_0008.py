"""Migration 0008 (searches; a job need not tune a conv_config x solver), on both databases.

SQLite cannot ALTER a column's NOT NULL, and rebuilding ``job`` would cascade-delete its
kernel links: the upgrade from 0007 must keep every existing job and link, and the views of
0004 keep showing convolution jobs only.
"""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import func, insert, inspect, select, text

from tests.results.seed import ONE_BY_ONE, THREE_BY_THREE, run_noop
from tuna.db import Database, migrate
from tuna.db.enums import JobState, JobStep
from tuna.db.models import Job, JobKernel, Search, SearchBuild, SearchRun
from tuna.errors import DatabaseError


def _counts(db: Database) -> tuple[int, int]:
    with db.session() as s:
        jobs = s.execute(select(func.count()).select_from(Job)).scalar_one()
        links = s.execute(select(func.count()).select_from(JobKernel)).scalar_one()
    return jobs, links


def _search_jobs(db: Database, session_id: int) -> tuple[int, int]:
    with db.session() as s:
        search = s.execute(
            insert(Search).values(
                session=session_id,
                name="s",
                space_file="p.json",
                space_text="{}",
                base={},
                objective={"stat": "t", "goal": "min", "valid": None},
                parallelism=1,
                backend="bench",
                spec={"run": "true"},
            )  # fmt: skip
        ).inserted_primary_key[0]
        build = s.execute(
            insert(SearchBuild).values(search=search, build_key="k", params={"a": 1})
        ).inserted_primary_key[0]
        run = s.execute(
            insert(SearchRun).values(search=search, seq=0, point={"a": 1}, config={"a": 1})
        ).inserted_primary_key[0]
        s.execute(
            insert(Job),
            [
                {"session": session_id, "step": JobStep.BUILD, "search_build": build},
                {"session": session_id, "step": JobStep.RUN, "search_run": run,
                 "state": JobState.COMPILED},
            ],
        )  # fmt: skip
        s.commit()
    return build, run


def test_upgrade_from_0007_keeps_jobs_and_kernel_links(db: Database) -> None:
    sid = run_noop(db, [ONE_BY_ONE, THREE_BY_THREE])
    before = _counts(db)
    assert before[0] > 0 and before[1] > 0
    with db.engine.connect() as conn:
        command.downgrade(migrate.alembic_config(conn), "0007")
        conn.commit()
        assert "search" not in inspect(conn).get_table_names()
        migrate.upgrade(conn)
        conn.commit()
    assert _counts(db) == before
    _search_jobs(db, sid)
    assert _counts(db) == (before[0] + 2, before[1])


def test_search_jobs_are_not_mituna_conv_jobs(db: Database) -> None:
    sid = run_noop(db, [ONE_BY_ONE])
    with db.session() as s:
        conv_jobs = s.execute(text("SELECT COUNT(*) FROM conv_job")).scalar_one()
    _search_jobs(db, sid)
    with db.session() as s:
        assert s.execute(text("SELECT COUNT(*) FROM conv_job")).scalar_one() == conv_jobs
        steps = set(s.execute(select(Job.step).where(Job.config.is_(None))).scalars())
    assert steps == {JobStep.BUILD, JobStep.RUN}


def test_one_job_per_search_run(db: Database) -> None:
    sid = run_noop(db, [ONE_BY_ONE])
    _build, run = _search_jobs(db, sid)
    with pytest.raises(DatabaseError, match="search_run"), db.session() as s:
        s.execute(insert(Job).values(session=sid, step=JobStep.RUN, search_run=run))
        s.commit()
