"""search_run: (search, finished, seq, valid, value), the best-so-far curve without a full read

The curve is ordered by when runs finished. Through the indexes of 0011 (which start with
``valid``) its first and latest measurements and a step's position need every finished run
of the search sorted (14 s for the first view of a search of 10^6 runs,
bench/dashboard_searches.md). This covering index reads them as ranges in finish order.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_search_run_search_finished_seq_valid_value",
        "search_run",
        ["search", "finished", "seq", "valid", "value"],
    )


def downgrade() -> None:
    op.drop_index("ix_search_run_search_finished_seq_valid_value", table_name="search_run")
