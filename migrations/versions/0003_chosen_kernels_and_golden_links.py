"""chosen kernels of a job; golden rows linked to their job and frozen kernels

``job_kernel.chosen`` marks every kernel of the solution a job's evaluate phase chose (a
solution can run several; ``find_db.kernel`` / ``perf_db.kernel`` hold one and are kept
but no longer read by the kernel db export). ``golden.job`` names the job that produced a
golden row and ``golden_kernel`` freezes its chosen kernels, so re-tuning a session does
not change a golden version's kernel db.

Existing rows are filled in with what the exports used before this revision: a kernel a
find or perf row links is chosen; a golden row gets the job of the session's find row it
was copied from (what the golden kernel db export joined to) and that job's chosen kernels
are frozen now.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
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
    with op.batch_alter_table("job_kernel") as batch_op:
        batch_op.add_column(sa.Column("chosen", sa.Boolean(), server_default="0", nullable=False))
    with op.batch_alter_table("golden") as batch_op:
        batch_op.add_column(sa.Column("job", BigId, nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_golden_job_job"), "job", ["job"], ["id"], ondelete="SET NULL"
        )
    op.create_table(
        "golden_kernel",
        sa.Column("id", BigId, nullable=False),
        sa.Column("golden", BigId, nullable=False),
        sa.Column("kernel", BigId, nullable=False),
        sa.ForeignKeyConstraint(
            ["golden"],
            ["golden.id"],
            name=op.f("fk_golden_kernel_golden_golden"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["kernel"], ["kernel_cache.id"], name=op.f("fk_golden_kernel_kernel_kernel_cache")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_golden_kernel")),
        sa.UniqueConstraint("golden", "kernel", name=op.f("uq_golden_kernel_golden_kernel")),
        **TABLE_OPTIONS,
    )
    op.create_index(op.f("ix_golden_kernel_kernel"), "golden_kernel", ["kernel"], unique=False)

    op.execute(
        "UPDATE job_kernel SET chosen = 1 WHERE EXISTS (SELECT 1 FROM find_db f "
        "WHERE f.job = job_kernel.job AND f.kernel = job_kernel.kernel) OR EXISTS (SELECT 1 "
        "FROM perf_db p WHERE p.job = job_kernel.job AND p.kernel = job_kernel.kernel)"
    )
    op.execute(
        "UPDATE golden SET job = (SELECT f.job FROM find_db f WHERE f.session = golden.session "
        "AND f.config = golden.config AND f.solver = golden.solver)"
    )
    op.execute(
        "INSERT INTO golden_kernel (golden, kernel) SELECT g.id, jk.kernel FROM golden g "
        "JOIN job_kernel jk ON jk.job = g.job WHERE jk.chosen = 1 ORDER BY g.id, jk.kernel"
    )


def downgrade() -> None:
    op.drop_table("golden_kernel")  # with its index, which MySQL keeps while its FK is there
    with op.batch_alter_table("golden") as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_golden_job_job"), type_="foreignkey")
        batch_op.drop_column("job")
    with op.batch_alter_table("job_kernel") as batch_op:
        batch_op.drop_column("chosen")
