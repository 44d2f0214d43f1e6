"""measurement: two secondary indexes become one, (session, config, solver, platform)

With the effort counts (0014) no query reads the measurement table without a session:
resume (``measured_before``), a search round's rows, ``counting_measurements`` (resume and
transfer) and ``tuna history effort``'s best time all start from the sessions that count.
So ``ix_measurement_config_solver_platform`` goes (26 bytes a row at 10^7 rows, measured),
and ``taken`` leaves the session index, which 0010 added for the effort count that the
counts now answer (5 bytes a row more). ``tuna history prune`` sorts every row anyway.
The foreign key on ``config`` goes with its index (InnoDB needs one starting with
``config``), as ``job``, ``solver``, ``platform`` and ``machine`` have none: configs are
never deleted. On MySQL / MariaDB it is one ALTER TABLE; SQLite rebuilds the table (batch
mode) to drop the foreign key.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

WIDE = "ix_measurement_session_config_solver_platform_taken"
BY_CONFIG = "ix_measurement_config_solver_platform"
NEW = "ix_measurement_session_config_solver_platform"
FK = "fk_measurement_config_conv_config"


def _mysql() -> bool:
    return op.get_context().dialect.name in ("mysql", "mariadb")


def upgrade() -> None:
    if _mysql():
        op.execute(
            f"ALTER TABLE measurement ADD INDEX {NEW} (session, config, solver, platform), "
            f"DROP FOREIGN KEY {FK}, DROP INDEX {WIDE}, DROP INDEX {BY_CONFIG}"
        )
        return
    op.create_index(NEW, "measurement", ["session", "config", "solver", "platform"])
    op.drop_index(WIDE, table_name="measurement")
    op.drop_index(BY_CONFIG, table_name="measurement")
    with op.batch_alter_table("measurement") as batch:
        batch.drop_constraint(FK, type_="foreignkey")


def downgrade() -> None:
    if _mysql():
        op.execute(
            f"ALTER TABLE measurement "
            f"ADD INDEX {WIDE} (session, config, solver, platform, taken), "
            f"ADD INDEX {BY_CONFIG} (config, solver, platform), DROP INDEX {NEW}, "
            f"ADD CONSTRAINT {FK} FOREIGN KEY (config) REFERENCES conv_config (id)"
        )
        return
    with op.batch_alter_table("measurement") as batch:
        batch.create_foreign_key(FK, "conv_config", ["config"], ["id"])
    op.create_index(WIDE, "measurement", ["session", "config", "solver", "platform", "taken"])
    op.create_index(BY_CONFIG, "measurement", ["config", "solver", "platform"])
    op.drop_index(NEW, table_name="measurement")
