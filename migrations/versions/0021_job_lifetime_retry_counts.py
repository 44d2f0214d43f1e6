"""a job's lost leases and failed tries over its life

* ``job.leases_lost``: leases the reaper took back from this job's workers, and
  ``job.tries_failed``: tries of a phase that failed and were retried or gave up, both over
  the job's whole life. ``retries`` and ``reason`` are the current phase's and a completed
  phase clears them, so after a run nothing said that leases were lost; these are never
  cleared (not by a completed phase, nor by ``tuna jobs reset``). ``tuna jobs status``
  shows their totals.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on every dialect (no table rebuild on SQLite)
    for name in ("leases_lost", "tries_failed"):
        op.add_column("job", sa.Column(name, sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    op.drop_column("job", "tries_failed")
    op.drop_column("job", "leases_lost")
