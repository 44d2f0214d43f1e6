"""measurement_effort: measurements spent per (session, config, solver, platform, day, strategy)

``load_jobs --min-trials`` counted the measurement rows of the sessions that count for a
target: 8·10^6 index entries read for 10^7 measurements over 100,000 problems (17.5 s of
server time, bench/library_min_trials.md). This table keeps the counts, written in the
transaction that inserts the measurement rows (``tuna.jobs.measurements``), so the decision
reads one row per (session, problem, solver, platform, day, strategy) instead of one per
measurement. ``day`` is ``DATE(taken)``: ``max_age`` cuts at day granularity. The upgrade
fills it from the measurement rows already there.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context, op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# InnoDB and utf8mb4 on MySQL / MariaDB; ignored by SQLite.
TABLE_OPTIONS = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}

SELECT = """
SELECT session, config, solver, platform, DATE(taken), COALESCE(strategy, ''), COUNT(*),
       SUM(CASE WHEN valid THEN 1 ELSE 0 END)
FROM measurement{where}
GROUP BY session, config, solver, platform, DATE(taken), COALESCE(strategy, '')
"""
INSERT = """
INSERT INTO measurement_effort
    (session, config, solver, platform, day, strategy, measurements, valid)"""


ROWS_PER_STATEMENT = 500_000


def backfill(conn: sa.Connection) -> None:
    """Count the measurement rows already there.

    On MySQL / MariaDB in ranges of 500,000 ids: each statement reads a stretch of the
    table in its primary-key order (the columns counted are not all in an index: a scan
    through one would look every row up at random) and adds its groups to the counts
    already there, so no temporary table holds more than one stretch's groups. SQLite
    databases are small: one statement."""
    if conn.dialect.name not in ("mysql", "mariadb"):
        conn.execute(sa.text(INSERT + SELECT.format(where="")))
        return
    statement = sa.text(
        INSERT
        + SELECT.format(where=" WHERE id BETWEEN :lo AND :hi")
        + "ON DUPLICATE KEY UPDATE measurements = measurements + VALUES(measurements), "
        "valid = valid + VALUES(valid)"
    )
    lo, hi = conn.execute(sa.text("SELECT MIN(id), MAX(id) FROM measurement")).one()
    if lo is None:
        return
    for start in range(lo, hi + 1, ROWS_PER_STATEMENT):
        conn.execute(statement, {"lo": start, "hi": start + ROWS_PER_STATEMENT - 1})


def upgrade() -> None:
    op.create_table(
        "measurement_effort",
        sa.Column("session", sa.Integer(), nullable=False),
        sa.Column("config", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("solver", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("platform", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("strategy", sa.String(length=32), server_default="", nullable=False),
        sa.Column("measurements", sa.Integer(), nullable=False),
        sa.Column("valid", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session"], ["session.id"], name=op.f("fk_measurement_effort_session_session")
        ),
        sa.PrimaryKeyConstraint(
            "session",
            "config",
            "solver",
            "platform",
            "day",
            "strategy",
            name=op.f("pk_measurement_effort"),
        ),
        **TABLE_OPTIONS,
    )
    if context.is_offline_mode():  # `tuna db schema`: the SQL, for every session at once
        op.execute(INSERT + SELECT.format(where=""))
    else:
        backfill(op.get_bind())


def downgrade() -> None:
    op.drop_table("measurement_effort")
