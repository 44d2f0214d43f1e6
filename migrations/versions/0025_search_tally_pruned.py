"""search_tally.pruned: a search's pruned runs counted as they land (issue #28)

A run its pruner stopped is ``valid`` false and ``pruned`` true; the counts a search shows
(``tuna search show``, the dashboard, the report) read ``search_tally``, which held only
runs, done and valid, so a pruned run was counted invalid. ``pruned`` (BIGINT, default 0)
is kept by the writers of ``tuna.jobs.search_results`` beside the others; the upgrade
counts each search's pruned runs so far.

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on every dialect (no table rebuild on SQLite)
    op.add_column(
        "search_tally", sa.Column("pruned", sa.BigInteger(), server_default="0", nullable=False)
    )
    op.execute(
        "UPDATE search_tally SET pruned = (SELECT COUNT(*) FROM search_run "
        "WHERE search_run.search = search_tally.search AND search_run.pruned = 1)"
    )


def downgrade() -> None:
    op.drop_column("search_tally", "pruned")  # ALTER TABLE ... DROP COLUMN (SQLite >= 3.35)
