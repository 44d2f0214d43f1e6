"""a session's default strategy

* ``session.default_strategy`` (JSON, NULL = none): how ``load_jobs --step perf`` searches
  a tunable solver's space when no ``--strategy`` is given (``tuna session create
  --strategy NAME --budget ...``): the strategy and its budget, patience, seed, round size
  and transfer. ``load_jobs --strategy NAME`` overrides it for one load, ``--strategy none``
  queues the perf jobs.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on every dialect (no table rebuild on SQLite)
    op.add_column("session", sa.Column("default_strategy", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("session", "default_strategy")
