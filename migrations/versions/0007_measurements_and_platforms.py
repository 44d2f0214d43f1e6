"""every candidate measured; the platforms measurements are taken on

* ``platform``: what a measurement was taken on, content-addressed (``digest`` is the
  sha256 of ``info``'s canonical JSON), so the same machine or container reports one row.
* ``measurement``: one row per candidate timed (issues #16 and #17): session, job, config,
  solver, params, platform, machine, strategy, time, validity, what happened, when. Sized
  for 10^8 rows: two secondary indexes, (session, config, solver) for resume and export
  and (config, solver, platform) for effort; ``job``, ``solver``, ``platform`` and
  ``machine`` have no foreign-key constraint, which on InnoDB would add an index each
  (266 against 180 bytes a row on MariaDB 10.11, measured with 10^6 rows).
* ``machine.user_platform`` / ``session.user_platform``: what the user adds to the
  platform (``--platform-json FILE``); ``machine.platform``: the platform the machine's
  latest evaluation worker reported (no foreign key: platforms are never deleted).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# InnoDB and utf8mb4 on MySQL / MariaDB; ignored by SQLite.
TABLE_OPTIONS = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "platform",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("info", sa.JSON(), nullable=False),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_platform")),
        sa.UniqueConstraint("digest", name=op.f("uq_platform_digest")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "measurement",
        sa.Column("id", BigId, nullable=False),
        sa.Column("session", sa.Integer(), nullable=False),
        sa.Column("job", sa.BigInteger(), nullable=True),
        sa.Column("config", sa.Integer(), nullable=False),
        sa.Column("solver", sa.Integer(), nullable=False),
        sa.Column("params", sa.Text(), nullable=False),
        sa.Column("platform", sa.Integer(), nullable=False),
        sa.Column("machine", sa.Integer(), nullable=True),
        sa.Column("strategy", sa.String(length=32), nullable=True),
        sa.Column("time_ms", sa.Double(), nullable=True),
        sa.Column("valid", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.String(length=255), nullable=True),
        sa.Column(
            "taken", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["session"], ["session.id"], name=op.f("fk_measurement_session_session")
        ),
        sa.ForeignKeyConstraint(
            ["config"], ["conv_config.id"], name=op.f("fk_measurement_config_conv_config")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_measurement")),
        **TABLE_OPTIONS,
    )
    op.create_index(
        "ix_measurement_session_config_solver", "measurement", ["session", "config", "solver"]
    )
    op.create_index(
        "ix_measurement_config_solver_platform", "measurement", ["config", "solver", "platform"]
    )
    # plain ALTER TABLE ... ADD COLUMN (SQLite: no rebuild of tables foreign keys point at)
    op.add_column("session", sa.Column("user_platform", sa.JSON(), nullable=True))
    op.add_column("machine", sa.Column("user_platform", sa.JSON(), nullable=True))
    # No foreign key to platform anywhere: platforms are never deleted, and SQLite could
    # only drop a referencing column by rebuilding machine, which job rows point at.
    op.add_column("machine", sa.Column("platform", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("machine", "platform")  # ALTER TABLE ... DROP COLUMN (SQLite >= 3.35)
    op.drop_column("machine", "user_platform")
    op.drop_column("session", "user_platform")
    op.drop_table("measurement")
    op.drop_table("platform")
