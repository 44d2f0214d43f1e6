"""Migration 0019 (search_run.landed): the upgrade numbers the runs that ended before it,
per search in (finished, seq) order, on both databases; the downgrade drops the column."""

from __future__ import annotations

import datetime as dt

from alembic import command
from sqlalchemy import inspect, select

from tests.report.seed import session
from tests.searches.seed import add_search
from tuna.db import Database, migrate
from tuna.db.models import SearchRun

T0 = dt.datetime(2026, 11, 24, 1, 0, 0)


def test_the_upgrade_numbers_the_ended_runs_in_finish_order(db: Database) -> None:
    sid = session(db, "landed")
    first = add_search(db, sid, "first", {"stat": "t", "goal": "min"})
    second = add_search(db, sid, "second", {"stat": "t", "goal": "min"})
    # (search, seq, valid, seconds after T0 it finished): out of seq order, with a tie
    runs = [
        (first, 0, True, 30),
        (first, 1, None, None),
        (first, 2, False, 10),
        (first, 3, True, 20),
        (first, 4, True, 10),
        (second, 0, None, None),
        (second, 1, True, 5),
        (second, 2, False, 1),
    ]
    with db.engine.connect() as conn:
        command.downgrade(migrate.alembic_config(conn), "0018")
        conn.commit()
        assert "landed" not in {c["name"] for c in inspect(conn).get_columns("search_run")}
        conn.execute(  # names no ``landed``: the table at 0018 has none
            SearchRun.__table__.insert().values(
                [
                    {
                        "search": s,
                        "seq": q,
                        "point": {},
                        "config": {},
                        "valid": v,
                        "finished": None if at is None else T0 + dt.timedelta(seconds=at),
                    }
                    for s, q, v, at in runs
                ]  # fmt: skip
            ),
        )
        conn.commit()
        migrate.upgrade(conn)
        conn.commit()
    with db.session() as s:
        landed = {
            (r.search, r.seq): r.landed
            for r in s.execute(select(SearchRun.search, SearchRun.seq, SearchRun.landed))
        }
    assert landed == {
        (first, 0): 4,
        (first, 1): None,
        (first, 2): 1,  # finished with seq 4: the lower seq first
        (first, 3): 3,
        (first, 4): 2,
        (second, 0): None,
        (second, 1): 2,
        (second, 2): 1,
    }
