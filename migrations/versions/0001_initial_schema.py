"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0001"
down_revision = None
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
        "bn_config",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "bn_key",
            sa.String(length=255)
            .with_variant(
                mysql.VARCHAR(charset="ascii", collation="ascii_bin", length=255), "mariadb"
            )
            .with_variant(
                mysql.VARCHAR(charset="ascii", collation="ascii_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("data_type", sa.String(length=32), nullable=False),
        sa.Column("layout", sa.String(length=16), nullable=False),
        sa.Column("batchsize", sa.Integer(), nullable=False),
        sa.Column("in_channels", sa.Integer(), nullable=False),
        sa.Column("in_d", sa.Integer(), server_default="0", nullable=False),
        sa.Column("in_h", sa.Integer(), nullable=False),
        sa.Column("in_w", sa.Integer(), nullable=False),
        sa.Column("mode", sa.SmallInteger(), nullable=False),
        sa.Column("direction", sa.String(length=16), nullable=False),
        sa.Column("save", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("run", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("alpha", sa.Double(), server_default="1", nullable=False),
        sa.Column("beta", sa.Double(), server_default="0", nullable=False),
        sa.Column(
            "driver",
            sa.Text()
            .with_variant(mysql.MEDIUMTEXT(), "mariadb")
            .with_variant(mysql.MEDIUMTEXT(), "mysql"),
            nullable=False,
        ),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bn_config")),
        sa.UniqueConstraint("bn_key", name=op.f("uq_bn_config_bn_key")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "golden_version",
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("parent", sa.Integer(), nullable=True),
        sa.Column("arch", sa.String(length=64), nullable=False),
        sa.Column("num_cu", sa.Integer(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["parent"],
            ["golden_version.version"],
            name=op.f("fk_golden_version_parent_golden_version"),
        ),
        sa.PrimaryKeyConstraint("version", name=op.f("pk_golden_version")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "kernel_cache",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("identity", sa.String(length=64), nullable=False),
        sa.Column("kernel_name", sa.String(length=512), nullable=False),
        sa.Column(
            "kernel_args",
            sa.Text()
            .with_variant(mysql.MEDIUMTEXT(), "mariadb")
            .with_variant(mysql.MEDIUMTEXT(), "mysql"),
            nullable=False,
        ),
        sa.Column("kernel_hash", sa.String(length=64), nullable=False),
        sa.Column("uncompressed_size", sa.BigInteger(), nullable=False),
        sa.Column(
            "blob",
            sa.LargeBinary()
            .with_variant(mysql.LONGBLOB(), "mariadb")
            .with_variant(mysql.LONGBLOB(), "mysql"),
            nullable=False,
        ),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_kernel_cache")),
        sa.UniqueConstraint("identity", name=op.f("uq_kernel_cache_identity")),
        **TABLE_OPTIONS,
    )
    op.create_index(
        op.f("ix_kernel_cache_kernel_hash"), "kernel_cache", ["kernel_hash"], unique=False
    )
    op.create_table(
        "machine",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("port", sa.Integer(), server_default="22", nullable=False),
        sa.Column("user", sa.String(length=64), nullable=True),
        sa.Column("arch", sa.String(length=64), nullable=True),
        sa.Column("num_cu", sa.Integer(), nullable=True),
        sa.Column("gpus", sa.JSON(), nullable=True),
        sa.Column("available", sa.Boolean(), server_default="1", nullable=False),
        sa.Column("key_file", sa.String(length=512), nullable=True),
        sa.Column("docker_settings", sa.JSON(), nullable=True),
        sa.Column("ipmi_address", sa.String(length=255), nullable=True),
        sa.Column(
            "last_seen",
            sa.DateTime()
            .with_variant(mysql.DATETIME(fsp=6), "mariadb")
            .with_variant(mysql.DATETIME(fsp=6), "mysql"),
            nullable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_machine")),
        sa.UniqueConstraint("hostname", "port", name=op.f("uq_machine_hostname_port")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("arch", sa.String(length=64), nullable=False),
        sa.Column("num_cu", sa.Integer(), nullable=False),
        sa.Column("backend", sa.String(length=32), nullable=False),
        sa.Column("library_version", sa.String(length=64), nullable=True),
        sa.Column("library_commit", sa.String(length=64), nullable=True),
        sa.Column("toolchain", sa.String(length=255), nullable=True),
        sa.Column("docker_image", sa.String(length=255), nullable=True),
        sa.Column("docker_digest", sa.String(length=128), nullable=True),
        sa.Column("label", sa.String(length=128), nullable=True),
        sa.Column("ticket", sa.String(length=64), nullable=True),
        sa.Column("environment", sa.JSON(), nullable=True),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_session")),
        **TABLE_OPTIONS,
    )
    op.create_index(op.f("ix_session_fingerprint"), "session", ["fingerprint"], unique=False)
    op.create_table(
        "solver",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("backend", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("tunable", sa.Boolean(), server_default="0", nullable=False),
        sa.Column("numeric_id", sa.Integer(), nullable=True),
        sa.Column("algorithm", sa.String(length=64), nullable=True),
        sa.Column("valid", sa.Boolean(), server_default="1", nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_solver")),
        sa.UniqueConstraint("backend", "name", name=op.f("uq_solver_backend_name")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "tensor",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("num_dims", sa.SmallInteger(), nullable=False),
        sa.Column("dim0", sa.Integer(), nullable=False),
        sa.Column("dim1", sa.Integer(), nullable=False),
        sa.Column("dim2", sa.Integer(), nullable=False),
        sa.Column("dim3", sa.Integer(), nullable=False),
        sa.Column("dim4", sa.Integer(), server_default="0", nullable=False),
        sa.Column("layout", sa.String(length=16), nullable=False),
        sa.Column("data_type", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tensor")),
        sa.UniqueConstraint(
            "num_dims",
            "dim0",
            "dim1",
            "dim2",
            "dim3",
            "dim4",
            "layout",
            "data_type",
            name=op.f("uq_tensor_num_dims_dim0_dim1_dim2_dim3_dim4_layout_data_type"),
        ),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "bn_config_tag",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("config", sa.Integer(), nullable=False),
        sa.Column("tag", sa.String(length=128), nullable=False),
        sa.Column("recurrent", sa.Boolean(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(
            ["config"],
            ["bn_config.id"],
            name=op.f("fk_bn_config_tag_config_bn_config"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bn_config_tag")),
        sa.UniqueConstraint("config", "tag", name=op.f("uq_bn_config_tag_config_tag")),
        **TABLE_OPTIONS,
    )
    op.create_index(op.f("ix_bn_config_tag_tag"), "bn_config_tag", ["tag"], unique=False)
    op.create_table(
        "conv_config",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "fdb_key",
            sa.String(length=255)
            .with_variant(
                mysql.VARCHAR(charset="ascii", collation="ascii_bin", length=255), "mariadb"
            )
            .with_variant(
                mysql.VARCHAR(charset="ascii", collation="ascii_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("spatial_dim", sa.SmallInteger(), nullable=False),
        sa.Column("direction", sa.String(length=1), nullable=False),
        sa.Column("mode", sa.String(length=8), server_default="conv", nullable=False),
        sa.Column("group_count", sa.Integer(), server_default="1", nullable=False),
        sa.Column("pad_d", sa.Integer(), server_default="0", nullable=False),
        sa.Column("pad_h", sa.Integer(), nullable=False),
        sa.Column("pad_w", sa.Integer(), nullable=False),
        sa.Column("conv_stride_d", sa.Integer(), server_default="1", nullable=False),
        sa.Column("conv_stride_h", sa.Integer(), nullable=False),
        sa.Column("conv_stride_w", sa.Integer(), nullable=False),
        sa.Column("dilation_d", sa.Integer(), server_default="1", nullable=False),
        sa.Column("dilation_h", sa.Integer(), nullable=False),
        sa.Column("dilation_w", sa.Integer(), nullable=False),
        sa.Column("trans_output_pad_d", sa.Integer(), server_default="0", nullable=False),
        sa.Column("trans_output_pad_h", sa.Integer(), server_default="0", nullable=False),
        sa.Column("trans_output_pad_w", sa.Integer(), server_default="0", nullable=False),
        sa.Column("bias", sa.Integer(), server_default="0", nullable=False),
        sa.Column("input_tensor", sa.Integer(), nullable=False),
        sa.Column("weight_tensor", sa.Integer(), nullable=False),
        sa.Column("out_layout", sa.String(length=16), nullable=False),
        sa.Column("out_type", sa.String(length=16), nullable=False),
        sa.Column("in_cast", sa.String(length=8), nullable=True),
        sa.Column("wei_cast", sa.String(length=8), nullable=True),
        sa.Column("out_cast", sa.String(length=8), nullable=True),
        sa.Column(
            "driver",
            sa.Text()
            .with_variant(mysql.MEDIUMTEXT(), "mariadb")
            .with_variant(mysql.MEDIUMTEXT(), "mysql"),
            nullable=False,
        ),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["input_tensor"], ["tensor.id"], name=op.f("fk_conv_config_input_tensor_tensor")
        ),
        sa.ForeignKeyConstraint(
            ["weight_tensor"], ["tensor.id"], name=op.f("fk_conv_config_weight_tensor_tensor")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conv_config")),
        sa.UniqueConstraint("fdb_key", name=op.f("uq_conv_config_fdb_key")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "config_tag",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("config", sa.Integer(), nullable=False),
        sa.Column("tag", sa.String(length=128), nullable=False),
        sa.Column("recurrent", sa.Boolean(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(
            ["config"],
            ["conv_config.id"],
            name=op.f("fk_config_tag_config_conv_config"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_config_tag")),
        sa.UniqueConstraint("config", "tag", name=op.f("uq_config_tag_config_tag")),
        **TABLE_OPTIONS,
    )
    op.create_index(op.f("ix_config_tag_tag"), "config_tag", ["tag"], unique=False)
    op.create_table(
        "golden",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("golden_v", sa.Integer(), nullable=False),
        sa.Column("session", sa.Integer(), nullable=False),
        sa.Column("config", sa.Integer(), nullable=False),
        sa.Column("solver", sa.Integer(), nullable=False),
        sa.Column(
            "fdb_key",
            sa.String(length=255)
            .with_variant(
                mysql.VARCHAR(charset="ascii", collation="ascii_bin", length=255), "mariadb"
            )
            .with_variant(
                mysql.VARCHAR(charset="ascii", collation="ascii_bin", length=255), "mysql"
            ),
            nullable=False,
        ),
        sa.Column("params", sa.Text(), nullable=True),
        sa.Column("time_ms", sa.Double(), nullable=False),
        sa.Column("workspace", sa.BigInteger(), nullable=False),
        sa.Column("algorithm", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["config"], ["conv_config.id"], name=op.f("fk_golden_config_conv_config")
        ),
        sa.ForeignKeyConstraint(
            ["golden_v"], ["golden_version.version"], name=op.f("fk_golden_golden_v_golden_version")
        ),
        sa.ForeignKeyConstraint(
            ["session"], ["session.id"], name=op.f("fk_golden_session_session")
        ),
        sa.ForeignKeyConstraint(["solver"], ["solver.id"], name=op.f("fk_golden_solver_solver")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_golden")),
        sa.UniqueConstraint(
            "golden_v", "config", "solver", name=op.f("uq_golden_golden_v_config_solver")
        ),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "job",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("session", sa.Integer(), nullable=False),
        sa.Column("config", sa.Integer(), nullable=False),
        sa.Column("solver", sa.Integer(), nullable=False),
        sa.Column(
            "step",
            sa.Enum(
                "perf",
                "find",
                "kernel",
                name="job_step",
                native_enum=False,
                create_constraint=True,
                length=20,
            ),
            nullable=False,
        ),
        sa.Column(
            "state",
            sa.Enum(
                "new",
                "compile_start",
                "compiled",
                "eval_start",
                "evaluated",
                "errored",
                "not_applicable",
                name="job_state",
                native_enum=False,
                create_constraint=True,
                length=20,
            ),
            server_default="new",
            nullable=False,
        ),
        sa.Column("label", sa.String(length=128), nullable=True),
        sa.Column("priority", sa.SmallInteger(), server_default="0", nullable=False),
        sa.Column("attempt", sa.Integer(), server_default="0", nullable=False),
        sa.Column("retries", sa.Integer(), server_default="0", nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column(
            "lease_expires",
            sa.DateTime()
            .with_variant(mysql.DATETIME(fsp=6), "mariadb")
            .with_variant(mysql.DATETIME(fsp=6), "mysql"),
            nullable=True,
        ),
        sa.Column("machine", sa.Integer(), nullable=True),
        sa.Column("gpu", sa.Integer(), nullable=True),
        sa.Column(
            "result",
            sa.Text()
            .with_variant(mysql.MEDIUMTEXT(), "mariadb")
            .with_variant(mysql.MEDIUMTEXT(), "mysql"),
            nullable=True,
        ),
        sa.Column(
            "reason",
            sa.Text()
            .with_variant(mysql.MEDIUMTEXT(), "mariadb")
            .with_variant(mysql.MEDIUMTEXT(), "mysql"),
            nullable=True,
        ),
        sa.Column(
            "compile_start",
            sa.DateTime()
            .with_variant(mysql.DATETIME(fsp=6), "mariadb")
            .with_variant(mysql.DATETIME(fsp=6), "mysql"),
            nullable=True,
        ),
        sa.Column(
            "compile_end",
            sa.DateTime()
            .with_variant(mysql.DATETIME(fsp=6), "mariadb")
            .with_variant(mysql.DATETIME(fsp=6), "mysql"),
            nullable=True,
        ),
        sa.Column(
            "eval_start",
            sa.DateTime()
            .with_variant(mysql.DATETIME(fsp=6), "mariadb")
            .with_variant(mysql.DATETIME(fsp=6), "mysql"),
            nullable=True,
        ),
        sa.Column(
            "eval_end",
            sa.DateTime()
            .with_variant(mysql.DATETIME(fsp=6), "mariadb")
            .with_variant(mysql.DATETIME(fsp=6), "mysql"),
            nullable=True,
        ),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["config"], ["conv_config.id"], name=op.f("fk_job_config_conv_config")
        ),
        sa.ForeignKeyConstraint(["machine"], ["machine.id"], name=op.f("fk_job_machine_machine")),
        sa.ForeignKeyConstraint(["session"], ["session.id"], name=op.f("fk_job_session_session")),
        sa.ForeignKeyConstraint(["solver"], ["solver.id"], name=op.f("fk_job_solver_solver")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job")),
        sa.UniqueConstraint(
            "session", "config", "solver", "step", name=op.f("uq_job_session_config_solver_step")
        ),
        **TABLE_OPTIONS,
    )
    op.create_index("ix_job_claim", "job", ["session", "state", "priority", "id"], unique=False)
    op.create_index("ix_job_lease", "job", ["state", "lease_expires"], unique=False)
    op.create_table(
        "find_db",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("session", sa.Integer(), nullable=False),
        sa.Column("config", sa.Integer(), nullable=False),
        sa.Column("solver", sa.Integer(), nullable=False),
        sa.Column("time_ms", sa.Double(), nullable=False),
        sa.Column("workspace", sa.BigInteger(), nullable=False),
        sa.Column("algorithm", sa.String(length=64), nullable=False),
        sa.Column("params", sa.Text(), nullable=True),
        sa.Column("job", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("kernel", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["config"], ["conv_config.id"], name=op.f("fk_find_db_config_conv_config")
        ),
        sa.ForeignKeyConstraint(
            ["job"], ["job.id"], name=op.f("fk_find_db_job_job"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["kernel"], ["kernel_cache.id"], name=op.f("fk_find_db_kernel_kernel_cache")
        ),
        sa.ForeignKeyConstraint(
            ["session"], ["session.id"], name=op.f("fk_find_db_session_session")
        ),
        sa.ForeignKeyConstraint(["solver"], ["solver.id"], name=op.f("fk_find_db_solver_solver")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_find_db")),
        sa.UniqueConstraint(
            "session", "config", "solver", name=op.f("uq_find_db_session_config_solver")
        ),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "job_kernel",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("job", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("kernel", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.ForeignKeyConstraint(
            ["job"], ["job.id"], name=op.f("fk_job_kernel_job_job"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["kernel"], ["kernel_cache.id"], name=op.f("fk_job_kernel_kernel_kernel_cache")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_kernel")),
        sa.UniqueConstraint("job", "kernel", name=op.f("uq_job_kernel_job_kernel")),
        **TABLE_OPTIONS,
    )
    op.create_index(op.f("ix_job_kernel_kernel"), "job_kernel", ["kernel"], unique=False)
    op.create_table(
        "perf_db",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("session", sa.Integer(), nullable=False),
        sa.Column("config", sa.Integer(), nullable=False),
        sa.Column("solver", sa.Integer(), nullable=False),
        sa.Column("params", sa.Text(), nullable=False),
        sa.Column("job", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("kernel", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["config"], ["conv_config.id"], name=op.f("fk_perf_db_config_conv_config")
        ),
        sa.ForeignKeyConstraint(
            ["job"], ["job.id"], name=op.f("fk_perf_db_job_job"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["kernel"], ["kernel_cache.id"], name=op.f("fk_perf_db_kernel_kernel_cache")
        ),
        sa.ForeignKeyConstraint(
            ["session"], ["session.id"], name=op.f("fk_perf_db_session_session")
        ),
        sa.ForeignKeyConstraint(["solver"], ["solver.id"], name=op.f("fk_perf_db_solver_solver")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_perf_db")),
        sa.UniqueConstraint(
            "session", "config", "solver", name=op.f("uq_perf_db_session_config_solver")
        ),
        **TABLE_OPTIONS,
    )


def downgrade() -> None:
    # Dropping a table drops its indexes; dropping an index first fails on MySQL when a
    # foreign key needs it (error 1553).
    op.drop_table("perf_db")
    op.drop_table("job_kernel")
    op.drop_table("find_db")
    op.drop_table("job")
    op.drop_table("golden")
    op.drop_table("config_tag")
    op.drop_table("conv_config")
    op.drop_table("bn_config_tag")
    op.drop_table("tensor")
    op.drop_table("solver")
    op.drop_table("session")
    op.drop_table("machine")
    op.drop_table("kernel_cache")
    op.drop_table("golden_version")
    op.drop_table("bn_config")
