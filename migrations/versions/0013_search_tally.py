"""search_tally: a search's runs counted as they land (proposed, ended, ended valid)

The counts by status of a search of 10^6 runs read ~950,000 index entries each time
(~280 ms, and ~165 ms more for the best-so-far curve's count of finished runs; the first
view of a search page took 532 ms, bench/dashboard_searches.md). The result writer keeps
these counters in the transaction that changes a run; the upgrade fills them from the
runs stored so far.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

TABLE_OPTIONS = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


def upgrade() -> None:
    op.create_table(
        "search_tally",
        sa.Column("search", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("runs", sa.BigInteger(), nullable=False),
        sa.Column("done", sa.BigInteger(), nullable=False),
        sa.Column("valid", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["search"], ["search.id"], name=op.f("fk_search_tally_search_search")
        ),
        sa.PrimaryKeyConstraint("search", name=op.f("pk_search_tally")),
        **TABLE_OPTIONS,
    )
    op.execute(
        "INSERT INTO search_tally (search, runs, done, valid) "
        "SELECT s.id, COUNT(r.id), COUNT(r.valid), "
        "COALESCE(SUM(CASE WHEN r.valid = 1 THEN 1 ELSE 0 END), 0) "
        "FROM search s LEFT JOIN search_run r ON r.search = s.id GROUP BY s.id"
    )


def downgrade() -> None:
    op.drop_table("search_tally")
