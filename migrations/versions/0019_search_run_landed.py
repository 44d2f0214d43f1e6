"""search_run.landed: a run's place in its search's landing order, numbered as it lands

The best-so-far curve is ordered by when runs landed. Ordered by (finished, seq), a late
step's position was a count over the finish-order index up to it, and the curve's first
and latest runs were read by sorting on two columns (the first view of a search of 10^6
runs with a validity stat took 254-313 ms on a quiet machine, bench/dashboard_searches.md).
``landed`` (1, 2, 3, ... per search) is given by the result writer
(:mod:`tuna.jobs.search_results`) under the search's ``search_tally`` row lock, so a
step's position is its number and the first and latest runs are ranges of it. It is the
one landing order: the curve, ``measured()`` and the earliest-of-equal-values order.

The upgrade numbers the runs that ended before it, per search in (finished, seq) order,
and replaces the two indexes that held (finished, seq):

* ``(search, valid, value, finished, seq)`` by ``(search, valid, value, landed)``: the best
  run and the earliest of equal values (landed is unique within a search's ended runs);
* ``(search, finished, seq, valid, value)`` by ``(search, landed, valid, value)``: the
  curve's first and latest runs as ranges of ``landed`` from the index alone.

Same number of indexes; each entry is narrower (an INT for a DATETIME(6) and an INT).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_NUMBERED = (
    "SELECT id, ROW_NUMBER() OVER (PARTITION BY search ORDER BY finished, seq) AS n "
    "FROM search_run WHERE valid IS NOT NULL"
)


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on every dialect (no table rebuild on SQLite)
    op.add_column("search_run", sa.Column("landed", sa.Integer(), nullable=True))
    if op.get_context().dialect.name == "sqlite":  # UPDATE ... FROM: SQLite >= 3.33
        op.execute(
            f"UPDATE search_run SET landed = x.n FROM ({_NUMBERED}) AS x WHERE search_run.id = x.id"
        )
    else:
        op.execute(f"UPDATE search_run r JOIN ({_NUMBERED}) AS x ON r.id = x.id SET r.landed = x.n")
    op.create_index(
        "ix_search_run_search_valid_value_landed",
        "search_run",
        ["search", "valid", "value", "landed"],
    )
    op.create_index(
        "ix_search_run_search_landed_valid_value",
        "search_run",
        ["search", "landed", "valid", "value"],
    )
    op.drop_index("ix_search_run_search_valid_value_finished_seq", table_name="search_run")
    op.drop_index("ix_search_run_search_finished_seq_valid_value", table_name="search_run")


def downgrade() -> None:
    op.create_index(
        "ix_search_run_search_valid_value_finished_seq",
        "search_run",
        ["search", "valid", "value", "finished", "seq"],
    )
    op.create_index(
        "ix_search_run_search_finished_seq_valid_value",
        "search_run",
        ["search", "finished", "seq", "valid", "value"],
    )
    op.drop_index("ix_search_run_search_landed_valid_value", table_name="search_run")
    op.drop_index("ix_search_run_search_valid_value_landed", table_name="search_run")
    op.drop_column("search_run", "landed")  # ALTER TABLE ... DROP COLUMN (SQLite >= 3.35)
