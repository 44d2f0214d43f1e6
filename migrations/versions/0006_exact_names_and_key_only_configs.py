"""solver names compare exactly; configs that only a db key describes; a session's runtime

* ``solver.name`` gets a binary collation on MySQL/MariaDB (``utf8mb4_bin``): under the
  table's ``utf8mb4_unicode_ci`` ``ConvAsm1x1U`` and ``convasm1x1u`` were one name, so an
  import of both collapsed them into one row. (``utf8mb4_bin`` still pads trailing spaces;
  import_db refuses names with white space, so no two stored names differ only there.)
  SQLite compares bytes already.
* ``conv_config.driver`` is empty for a config imported from a db key that no MIOpenDriver
  line gives (INT8 keys, "same" padding): no schema change (it stays NOT NULL, so SQLite
  need not rebuild a table that foreign keys point at).
* ``conv_config.pad_mode``: ``default``, or ``same`` for MIOpen's ``miopenPaddingSame``
  problems (y = ceil(x / stride)), which only db keys describe.
* ``session.runtime``: ``HIP`` or ``OpenCL``, the MIOpen backend a find db was made with
  (``<base>.OpenCL.fdb.txt``); NULL means HIP, the default.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

LongText = (
    sa.Text().with_variant(mysql.MEDIUMTEXT(), "mariadb").with_variant(mysql.MEDIUMTEXT(), "mysql")
)


def _name(collation: str) -> sa.types.TypeEngine[str]:
    return (
        sa.String(length=128)
        .with_variant(mysql.VARCHAR(length=128, charset="utf8mb4", collation=collation), "mariadb")
        .with_variant(mysql.VARCHAR(length=128, charset="utf8mb4", collation=collation), "mysql")
    )


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":  # SQLite compares bytes already
        op.alter_column(
            "solver", "name", existing_type=sa.String(length=128), type_=_name("utf8mb4_bin"),
            existing_nullable=False,
        )  # fmt: skip
    # plain ALTER TABLE ... ADD COLUMN on every dialect (no table rebuild on SQLite)
    op.add_column(
        "conv_config",
        sa.Column("pad_mode", sa.String(length=8), server_default="default", nullable=False),
    )
    op.add_column("session", sa.Column("runtime", sa.String(length=16), nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN (SQLite >= 3.35), no rebuild of tables foreign keys point at
    op.drop_column("session", "runtime")
    # 'same'-padding configs stay, read as default padding: their keys still say what they are
    op.drop_column("conv_config", "pad_mode")
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column(
            "solver", "name", existing_type=_name("utf8mb4_bin"),
            type_=_name("utf8mb4_unicode_ci"), existing_nullable=False,
        )  # fmt: skip
