"""measurement_effort.budget: with which budget the measurements were spent

The effort counts (0014) said how many measurements a session spent on a problem, solver
and platform, by strategy and day; ``budget`` adds how many candidates that strategy was
allowed (the largest given, from ``Measurement.budget``; NULL where the backend or the
strategy did not say, as for every count made before this revision).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on every dialect (no table rebuild on SQLite)
    op.add_column("measurement_effort", sa.Column("budget", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("measurement_effort", "budget")  # ALTER TABLE ... DROP COLUMN
