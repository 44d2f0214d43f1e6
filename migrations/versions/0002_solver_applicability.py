"""solver applicability per session

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# InnoDB and utf8mb4 on MySQL / MariaDB; ignored by SQLite.
TABLE_OPTIONS = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


def upgrade() -> None:
    op.create_table(
        "solver_applicability",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("session", sa.Integer(), nullable=False),
        sa.Column("config", sa.Integer(), nullable=False),
        sa.Column("solver", sa.Integer(), nullable=False),
        sa.Column("applicable", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.String(length=512), nullable=True),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["config"],
            ["conv_config.id"],
            name=op.f("fk_solver_applicability_config_conv_config"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["session"], ["session.id"], name=op.f("fk_solver_applicability_session_session")
        ),
        sa.ForeignKeyConstraint(
            ["solver"], ["solver.id"], name=op.f("fk_solver_applicability_solver_solver")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_solver_applicability")),
        sa.UniqueConstraint(
            "session",
            "config",
            "solver",
            name=op.f("uq_solver_applicability_session_config_solver"),
        ),
        **TABLE_OPTIONS,
    )


def downgrade() -> None:
    op.drop_table("solver_applicability")
