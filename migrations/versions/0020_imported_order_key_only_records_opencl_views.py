"""find rows keep the order they were imported in; key-only records; ``opencl`` in MITuna's views

* ``find_db.import_order``: an imported find row's place in the record it came from (0 is
  first); NULL for a row a job wrote. A record whose rows are all still as imported exports
  in that order with all its entries (MIOpen's shipped files order equal times either way,
  so Tuna's own tie order changed 651 of 1,800 ties), any other record in Tuna's order.
* ``key_only_record``: a find-db record whose key Tuna cannot turn into a problem (MIOpen's
  legacy keys with 2D pads on 3D filters) is still MIOpen's key: kept per session as the key
  and its entries, exported byte for byte. No config, so no job is ever loaded for it.
* ``conv_find_db.opencl`` and ``conv_golden.opencl`` are 1 for rows of an OpenCL session
  (``session.runtime``); they were 0 for every row, so MITuna's ``opencl = 0`` counted
  OpenCL rows as HIP ones. The two views are dropped and created again (their definitions
  frozen here; 0004 keeps its own).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

KeyString = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset="ascii", collation="ascii_bin"), "mysql", "mariadb"
)
LongText = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
TABLE_OPTIONS = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}

_FIND_VIEW = """
SELECT f.id AS id, f.created AS insert_ts, f.created AS update_ts, 1 AS valid,
       f.config AS config, f.solver AS solver, f.session AS session,
       c.fdb_key AS fdb_key, f.params AS params, f.time_ms AS kernel_time,
       f.workspace AS workspace_sz, f.algorithm AS alg_lib, {opencl} AS opencl,
       f.id AS kernel_group
  FROM find_db f JOIN conv_config c ON c.id = f.config{join}"""
_GOLDEN_VIEW = """
SELECT g.id AS id, v.created AS insert_ts, v.created AS update_ts, 1 AS valid,
       g.golden_v AS golden_miopen_v, v.arch AS arch, v.num_cu AS num_cu,
       g.session AS session, g.solver AS solver, g.config AS config,
       g.fdb_key AS fdb_key, g.params AS params, g.time_ms AS kernel_time,
       g.workspace AS workspace_sz, g.algorithm AS alg_lib, {opencl} AS opencl,
       g.id AS kernel_group
  FROM golden g JOIN golden_version v ON v.version = g.golden_v{join}"""
_OPENCL = "CASE WHEN s.runtime = 'OpenCL' THEN 1 ELSE 0 END"


def _views(opencl: bool) -> dict[str, str]:
    if opencl:
        return {
            "conv_find_db": _FIND_VIEW.format(
                opencl=_OPENCL, join="\n  JOIN session s ON s.id = f.session"
            ),
            "conv_golden": _GOLDEN_VIEW.format(
                opencl=_OPENCL, join="\n  JOIN session s ON s.id = g.session"
            ),
        }
    return {  # 0004's definitions
        "conv_find_db": _FIND_VIEW.format(opencl="0", join=""),
        "conv_golden": _GOLDEN_VIEW.format(opencl="0", join=""),
    }


def _replace_views(opencl: bool) -> None:
    for name, select in _views(opencl).items():
        op.execute(f"DROP VIEW IF EXISTS {name}")
        op.execute(f"CREATE VIEW {name} AS{select}")


def upgrade() -> None:
    # plain ALTER TABLE ... ADD COLUMN on every dialect (no table rebuild on SQLite)
    op.add_column("find_db", sa.Column("import_order", sa.Integer(), nullable=True))
    op.create_table(
        "key_only_record",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session", sa.Integer(), nullable=False),
        sa.Column("fdb_key", KeyString, nullable=False),
        sa.Column("entries", LongText, nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column(
            "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["session"],
            ["session.id"],
            name=op.f("fk_key_only_record_session_session"),
            ondelete="CASCADE",
        ),  # fmt: skip
        sa.PrimaryKeyConstraint("id", name=op.f("pk_key_only_record")),
        sa.UniqueConstraint("session", "fdb_key", name=op.f("uq_key_only_record_session_fdb_key")),
        **TABLE_OPTIONS,
    )
    _replace_views(opencl=True)


def downgrade() -> None:
    _replace_views(opencl=False)
    op.drop_table("key_only_record")
    op.drop_column("find_db", "import_order")
