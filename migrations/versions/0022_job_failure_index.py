"""an index for a session's failed jobs of one reason (the dashboard's failure drill-down)

``ix_job_failure`` on ``job (session, state, reason)``, the reason by its first 255
characters on MySQL/MariaDB (a ``LONGTEXT`` is indexed by a prefix; SQLite indexes it
whole). Without it, ``WHERE session = ? AND state = ? AND reason = ? AND id > ? ORDER BY id
LIMIT 100`` is a range over the primary key that reads rows until 100 match: on a session of
600,000 jobs (10^6 in the table) a reason held by 3 errored jobs read all 10^6 rows (888 ms
on MariaDB 10.11), one held by 1,542 read 39,209 (26 ms). With it both are a range of that
reason's entries (0.05 ms and 1.6 ms).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_job_failure", "job", ["session", "state", "reason"], mysql_length={"reason": 255}
    )


def downgrade() -> None:
    op.drop_index("ix_job_failure", table_name="job")
