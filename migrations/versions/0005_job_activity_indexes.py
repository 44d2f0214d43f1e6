"""job: indexes on (session, compile_end) and (session, eval_end)

What the dashboard and go_fish show as a session's rate and ETA is a count of the phases
that ended in the last minutes. Through ``ix_job_claim`` that count reads every row of the
session (its state says nothing about when); with these it reads the recent index entries
only. bench/dashboard.md has the figures (10^6 jobs).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_job_session_compile_end", "job", ["session", "compile_end"])
    op.create_index("ix_job_session_eval_end", "job", ["session", "eval_end"])


def downgrade() -> None:
    # On MySQL the foreign key on job.session can use ix_job_claim; these can go.
    op.drop_index("ix_job_session_eval_end", table_name="job")
    op.drop_index("ix_job_session_compile_end", table_name="job")
