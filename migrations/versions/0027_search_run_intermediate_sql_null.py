"""search_run.intermediate: an empty curve is SQL NULL, not JSON null

The writers store a run that reported no intermediate value with ``intermediate`` None,
which SQLAlchemy's JSON type wrote as the JSON text ``null``; the pruner's peers
(``tuna.jobs.pruning.peers``) select ``intermediate IS NOT NULL``, so every ended run of a
search was read, each with an empty curve, whenever a report was judged. The column now
stores None as SQL NULL (``JSON(none_as_null=True)``); this turns the rows written before
into SQL NULL. No DDL changes.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "UPDATE search_run SET intermediate = NULL WHERE json_type(intermediate) = 'null'"
        )
    else:  # MySQL and MariaDB: JSON_TYPE names the JSON null 'NULL'
        op.execute(
            "UPDATE search_run SET intermediate = NULL WHERE JSON_TYPE(intermediate) = 'NULL'"
        )


def downgrade() -> None:
    pass  # SQL NULL reads back as None, as JSON null did: nothing to undo
