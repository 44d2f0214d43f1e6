"""the effort index of measurements covers the history rules' columns

``ix_measurement_session_config_solver`` (session, config, solver) gives way to
``ix_measurement_session_config_solver_platform_taken``. ``load_jobs --min-trials`` counts
the measurements of the sessions that count for a target, younger than ``max_age`` and on
platforms that match (``tuna.library.effort``); with platform and taken in the index that
count is read from the index alone, where each row was looked up in the table before (3.5 s
for 10^6 rows on a loaded machine). Resume and export use its prefix as before. Cost: 9
bytes a row.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

OLD = "ix_measurement_session_config_solver"
NEW = "ix_measurement_session_config_solver_platform_taken"


# The new index is made before the old one goes: the foreign key on session needs one.
def upgrade() -> None:
    op.create_index(NEW, "measurement", ["session", "config", "solver", "platform", "taken"])
    op.drop_index(OLD, table_name="measurement")


def downgrade() -> None:
    op.create_index(OLD, "measurement", ["session", "config", "solver"])
    op.drop_index(NEW, table_name="measurement")
