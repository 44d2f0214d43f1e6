"""a search's validation stage: its front measured again on a second input set (issue #28)

``search_validation``: one row per (search, input set, run validated): the run's ``seq``
(-1: the baseline) and ``config``, what the search's model predicted of its stats when it
chose it (``predicted``, NULL when chosen otherwise), the ``stats`` measured on those
inputs (NULL with a ``reason`` when the measurement failed) and whether it is ``kept``
there (it meets the search's constraints against the baseline measured on the same
inputs). Written by :mod:`tuna.searches.validation`; validating again on the same inputs
replaces a search's rows.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

TABLE_OPTIONS = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
LongText = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "search_validation",
        sa.Column("id", BigId, nullable=False),
        sa.Column("search", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("inputs", sa.String(length=64), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("predicted", sa.JSON(), nullable=True),
        sa.Column("stats", sa.JSON(), nullable=True),
        sa.Column("reason", LongText, nullable=True),
        sa.Column("kept", sa.Boolean(), nullable=False),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["search"], ["search.id"], name=op.f("fk_search_validation_search_search")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_search_validation")),
        sa.UniqueConstraint(
            "search", "inputs", "seq", name=op.f("uq_search_validation_search_inputs_seq")
        ),
        **TABLE_OPTIONS,
    )


def downgrade() -> None:
    op.drop_table("search_validation")
