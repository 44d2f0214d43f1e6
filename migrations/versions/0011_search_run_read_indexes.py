"""search_run: indexes for the read side (runs by status, the best run, progress)

Through the unique (search, seq) alone, every aggregate of a search reads each of its rows
(the counts by status, the best value, the best-so-far curve need ``valid``, ``value`` and
``finished``, which that index does not hold): 11 s for a session's list and 45 s for a
search page on a search of 10^6 runs (bench/dashboard_searches.md). With these:

* ``(search, valid, seq)``: a search's runs counted by status from the index alone, and a
  page of its valid / invalid / pending runs in proposal order read from the index;
* ``(search, valid, value, finished, seq)``: the best run is the first entry of a range
  (MIN/MAX, "best first" pages), and the best-so-far curve (every finished run's value and
  finish time) is read from the index without touching the rows.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_search_run_search_valid_seq", "search_run", ["search", "valid", "seq"])
    op.create_index(
        "ix_search_run_search_valid_value_finished_seq",
        "search_run",
        ["search", "valid", "value", "finished", "seq"],
    )


def downgrade() -> None:
    # On MySQL the foreign key on search_run.search keeps the unique (search, seq).
    op.drop_index("ix_search_run_search_valid_value_finished_seq", table_name="search_run")
    op.drop_index("ix_search_run_search_valid_seq", table_name="search_run")
