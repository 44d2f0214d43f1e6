"""pruning and a wall-clock budget for searches (issue #28)

* ``search.pruner`` (JSON, NULL = none): the pruner that stops hopeless runs early
  (``{"name": "median", "warmup_runs": 5, "warmup_steps": 0}`` or ``{"name": "halving",
  "min_step": 1, "factor": 3}``: :mod:`tuna.searchers.prune`);
* ``search.time_budget_s`` (DOUBLE, NULL = none): the search's wall-clock budget;
* ``search_run.intermediate`` (JSON, NULL = none reported): ``[[step, value], ...]``, the
  values a run reported as it ran (``tuna:intermediate STEP VALUE`` lines,
  ``trial.report``), written while it runs when the search has a pruner;
* ``search_run.pruned`` (BOOL, default false): the pruner stopped the run (it is then
  ``valid`` false with the pruner's reason: not counted, never the best, not an error).

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on every dialect (no table rebuild on SQLite)
    op.add_column("search", sa.Column("pruner", sa.JSON(), nullable=True))
    op.add_column("search", sa.Column("time_budget_s", sa.Double(), nullable=True))
    op.add_column("search_run", sa.Column("intermediate", sa.JSON(), nullable=True))
    op.add_column(
        "search_run",
        sa.Column("pruned", sa.Boolean(), server_default="0", nullable=False),
    )


def downgrade() -> None:
    op.drop_column("search_run", "pruned")  # ALTER TABLE ... DROP COLUMN (SQLite >= 3.35)
    op.drop_column("search_run", "intermediate")
    op.drop_column("search", "time_budget_s")
    op.drop_column("search", "pruner")
