"""Migration 0013 (search_tally): the upgrade counts the runs stored before it, on both
databases."""

from __future__ import annotations

import datetime as dt

from alembic import command
from sqlalchemy import inspect, select

from tests.report.seed import session
from tests.searches.seed import add_search
from tuna.db import Database, migrate
from tuna.db.models import SearchRun, SearchTally


def test_the_upgrade_counts_the_runs_stored_before_it(db: Database) -> None:
    sid = session(db, "tally")
    busy = add_search(db, sid, "busy", {"stat": "t", "goal": "min"})
    idle = add_search(db, sid, "idle", {"stat": "t", "goal": "min"})
    with db.engine.connect() as conn:
        command.downgrade(migrate.alembic_config(conn), "0012")
        conn.commit()
        assert "search_tally" not in inspect(conn).get_table_names()
        at = dt.datetime(2026, 11, 24, 1, 0, 0)
        conn.execute(
            SearchRun.__table__.insert(),
            [
                {
                    "search": busy,
                    "seq": i,
                    "point": {},
                    "config": {},
                    "valid": valid,
                    "finished": None if valid is None else at,
                }
                for i, valid in enumerate([None, True, False, True, None, True])
            ],  # fmt: skip
        )
        conn.commit()
        migrate.upgrade(conn)
        conn.commit()
    with db.session() as s:
        rows = s.execute(select(SearchTally).order_by(SearchTally.search)).scalars().all()
        assert [(r.search, r.runs, r.done, r.valid) for r in rows] == [
            (busy, 6, 4, 3),
            (idle, 0, 0, 0),
        ]
