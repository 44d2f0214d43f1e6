"""Migration 0014 (effort counts), on both databases: the upgrade counts the measurement
rows already there exactly as the write path would have."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, select

from tests.support.history import add_measurements, add_platform, make_configs, session
from tuna.db import Database, migrate
from tuna.db.models import MeasurementEffort


def _counts(db: Database) -> list[tuple]:
    e = MeasurementEffort
    with db.session() as s:
        rows = s.execute(select(e).order_by(e.session, e.config, e.day, e.strategy)).scalars()
        return [
            (r.session, r.config, r.solver, r.platform, str(r.day), r.strategy, r.measurements,
             r.valid)
            for r in rows
        ]  # fmt: skip


def test_upgrade_from_0013_counts_the_measurements_there(db: Database) -> None:
    h = make_configs(db)
    a, b = session(db), session(db)
    p = add_platform(db, {"gpu": {"model": "x"}})
    direct = h.solvers["NoopDirect"]
    add_measurements(db, a, h.configs[0], direct, [1.0, None, 2.0], platform=p)
    add_measurements(db, a, h.configs[0], direct, [1.0], platform=p, strategy=None)
    add_measurements(db, b, h.configs[1], direct, [1.0, 3.0], platform=p, age_s=5 * 86400)
    written = _counts(db)
    assert len(written) == 3 and sum(r[6] for r in written) == 6
    with db.engine.connect() as conn:
        command.downgrade(migrate.alembic_config(conn), "0013")
        conn.commit()
        assert "measurement_effort" not in inspect(conn).get_table_names()
        migrate.upgrade(conn)
        conn.commit()
    assert _counts(db) == written
