"""search_run.lease_expires: a study's claim of a trial lapses unless its process beats

Several processes may drive one ``tuna.study``; each claims a trial as a pending
``search_run`` row whose ``reason`` names the process. A claim was dropped only when its
process was gone *on the host that looked*, so the claim of a process that died on another
host stayed forever (a dynamic searcher waited for it forever). A claim now carries a lease
on the database clock, extended by its process's heartbeat; a claim whose lease expired is
taken over by the next process that asks the trial. NULL for runs that are not such claims
(and for claims made before this revision, which keep the old same-host check).

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

Timestamp = (
    sa.DateTime()
    .with_variant(mysql.DATETIME(fsp=6), "mariadb")
    .with_variant(mysql.DATETIME(fsp=6), "mysql")
)


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on every dialect (no table rebuild on SQLite)
    op.add_column("search_run", sa.Column("lease_expires", Timestamp, nullable=True))


def downgrade() -> None:
    op.drop_column("search_run", "lease_expires")  # ALTER TABLE ... DROP COLUMN (SQLite >= 3.35)
