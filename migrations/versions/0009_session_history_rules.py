"""a session's history rules and its retirement

* ``session.history_rules`` (JSON, NULL = the defaults): which history counts for the
  session — the library rule, the oldest library version, ``max_age`` and the platform
  fields that must match (``tuna.sessions.rules``).
* ``session.retired`` (NULL = active) and ``session.retired_reason``: a retired session's
  results leave every later skip, transfer, best and export decision; its rows stay
  (``tuna session retire`` / ``unretire``).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

Timestamp = (
    sa.DateTime()
    .with_variant(mysql.DATETIME(fsp=6), "mariadb")
    .with_variant(mysql.DATETIME(fsp=6), "mysql")
)


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on every dialect (no table rebuild on SQLite)
    op.add_column("session", sa.Column("history_rules", sa.JSON(), nullable=True))
    op.add_column("session", sa.Column("retired", Timestamp, nullable=True))
    op.add_column("session", sa.Column("retired_reason", sa.String(length=255), nullable=True))


def downgrade() -> None:
    op.drop_column("session", "retired_reason")
    op.drop_column("session", "retired")
    op.drop_column("session", "history_rules")
