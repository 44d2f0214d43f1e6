"""search_run: (build, valid) instead of (build), for claims that prefer a held build

A worker that holds a build's artifact claims that build's ready runs first
(``tuna.jobs.states``): it looks for them through the runs of the build. Through an index
on ``build`` alone that read passes every run the build ever had, finished ones included,
on every claim; ``valid`` is NULL until a run ends, so (build, valid) reaches only the
runs not ended. It serves the foreign key on ``build`` as the old index did.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_search_run_build_valid", "search_run", ["build", "valid"])
    op.drop_index("ix_search_run_build", table_name="search_run")


def downgrade() -> None:
    op.create_index("ix_search_run_build", "search_run", ["build"])
    op.drop_index("ix_search_run_build_valid", table_name="search_run")
