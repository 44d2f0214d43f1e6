"""searches over the job queue: search, artifact, search_build, search_run; generic jobs

Issue #15. A search's builds and runs are jobs of the queue, with the same claims, leases,
fencing and retries as a convolution job, so ``job`` stops assuming it tunes a
``conv_config`` x ``solver``:

* ``job.config`` and ``job.solver`` become NULLable; a search's job names instead either
  ``job.search_build`` (step ``build``, compile phase) or ``job.search_run`` (step ``run``,
  evaluate phase), each unique. ``job_step`` gains ``build`` and ``run``.
* ``search``: one search of a session (parameter file text, base config, searcher,
  objective, budget, parallelism, backend spec, state).
* ``artifact``: a build's directory as a compressed tar, content-addressed by sha256.
* ``search_build``: one build per distinct build tuple of a search; ``search_run``: one
  proposal in proposal order (``seq``), its merged config and, once run, its stats.

The MITuna views of 0004 keep their inner joins (``conv_job`` joins ``solver``), so a
search's jobs, which have no solver, are not convolution jobs there.

SQLite cannot ALTER a column's NOT NULL or a CHECK constraint, and rebuilding ``job`` (what
Alembic's batch mode does) would cascade-delete ``job_kernel`` rows while foreign keys are
on. Dropping NOT NULL and widening a CHECK do not change what is stored, so on SQLite this
migration edits ``job``'s CREATE TABLE text in ``sqlite_master`` (the procedure SQLite's
documentation gives for such changes: ``PRAGMA writable_schema`` and a new
``schema_version``) and adds the columns with ALTER TABLE ADD COLUMN.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

TABLE_OPTIONS = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
LongText = (
    sa.Text().with_variant(mysql.MEDIUMTEXT(), "mariadb").with_variant(mysql.MEDIUMTEXT(), "mysql")
)
Timestamp = (
    sa.DateTime()
    .with_variant(mysql.DATETIME(fsp=6), "mariadb")
    .with_variant(mysql.DATETIME(fsp=6), "mysql")
)
Blob = (
    sa.LargeBinary()
    .with_variant(mysql.LONGBLOB(), "mariadb")
    .with_variant(mysql.LONGBLOB(), "mysql")
)

OLD_STEPS = "'perf', 'find', 'kernel'"
NEW_STEPS = "'perf', 'find', 'kernel', 'build', 'run'"


def _created() -> sa.Column[object]:
    return sa.Column(
        "created", sa.DateTime(), server_default=sa.text("CURRENT_TIMESTAMP"), nullable=False
    )


def _create_tables() -> None:
    op.create_table(
        "search",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("space_file", sa.String(length=255), nullable=False),
        sa.Column("space_text", LongText, nullable=False),
        sa.Column("base", sa.JSON(), nullable=False),
        sa.Column("searcher", sa.String(length=255), nullable=True),
        sa.Column("objective", sa.JSON(), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=True),
        sa.Column("parallelism", sa.Integer(), nullable=False),
        sa.Column("backend", sa.String(length=32), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=16), server_default="active", nullable=False),
        sa.Column("reason", LongText, nullable=True),
        _created(),
        sa.Column("finished", Timestamp, nullable=True),
        sa.ForeignKeyConstraint(
            ["session"], ["session.id"], name=op.f("fk_search_session_session")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_search")),
        sa.UniqueConstraint("session", "name", name=op.f("uq_search_session_name")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "artifact",
        sa.Column("id", BigId, nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("blob", Blob, nullable=False),
        _created(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_artifact")),
        sa.UniqueConstraint("digest", name=op.f("uq_artifact_digest")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "search_build",
        sa.Column("id", BigId, nullable=False),
        sa.Column("search", sa.Integer(), nullable=False),
        sa.Column("build_key", sa.String(length=64), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("artifact", BigId, nullable=True),
        sa.Column("valid", sa.Boolean(), nullable=True),
        sa.Column("reason", LongText, nullable=True),
        _created(),
        sa.Column("finished", Timestamp, nullable=True),
        sa.ForeignKeyConstraint(
            ["artifact"], ["artifact.id"], name=op.f("fk_search_build_artifact_artifact")
        ),
        sa.ForeignKeyConstraint(
            ["search"], ["search.id"], name=op.f("fk_search_build_search_search")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_search_build")),
        sa.UniqueConstraint("search", "build_key", name=op.f("uq_search_build_search_build_key")),
        **TABLE_OPTIONS,
    )
    op.create_table(
        "search_run",
        sa.Column("id", BigId, nullable=False),
        sa.Column("search", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("point", sa.JSON(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("build", BigId, nullable=True),
        sa.Column("stats", sa.JSON(), nullable=True),
        sa.Column("value", sa.Double(), nullable=True),
        sa.Column("valid", sa.Boolean(), nullable=True),
        sa.Column("reason", LongText, nullable=True),
        sa.Column("machine", sa.Integer(), nullable=True),
        _created(),
        sa.Column("finished", Timestamp, nullable=True),
        sa.ForeignKeyConstraint(
            ["build"], ["search_build.id"], name=op.f("fk_search_run_build_search_build")
        ),
        sa.ForeignKeyConstraint(
            ["machine"], ["machine.id"], name=op.f("fk_search_run_machine_machine")
        ),
        sa.ForeignKeyConstraint(
            ["search"], ["search.id"], name=op.f("fk_search_run_search_search")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_search_run")),
        sa.UniqueConstraint("search", "seq", name=op.f("uq_search_run_search_seq")),
        **TABLE_OPTIONS,
    )
    op.create_index(op.f("ix_search_run_build"), "search_run", ["build"])


def _sqlite_edit_job(edits: list[tuple[str, str]]) -> None:
    """Replace text in ``job``'s CREATE TABLE (changes that leave stored rows as they are)."""
    conn = op.get_bind()
    sql = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type='table' AND name='job'")
    text = sql.scalar_one()
    for old, new in edits:
        if old not in text:
            raise RuntimeError(f"job's schema lacks {old!r}; cannot migrate this SQLite database")
        text = text.replace(old, new, 1)
    version = conn.exec_driver_sql("PRAGMA schema_version").scalar_one()
    conn.exec_driver_sql("PRAGMA writable_schema=ON")
    conn.exec_driver_sql(
        "UPDATE sqlite_master SET sql=? WHERE type='table' AND name='job'", (text,)
    )
    conn.exec_driver_sql(f"PRAGMA schema_version={int(version) + 1}")
    conn.exec_driver_sql("PRAGMA writable_schema=OFF")


_SQLITE_NULLABLE = [
    ("config INTEGER NOT NULL", "config INTEGER"),
    ("solver INTEGER NOT NULL", "solver INTEGER"),
    (f"step IN ({OLD_STEPS})", f"step IN ({NEW_STEPS})"),
]
_SQLITE_BUILD = (
    "search_build INTEGER CONSTRAINT fk_job_search_build_search_build REFERENCES search_build (id)"
)
_SQLITE_RUN = (
    "search_run INTEGER CONSTRAINT fk_job_search_run_search_run REFERENCES search_run (id)"
)


def upgrade() -> None:
    _create_tables()
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_edit_job(_SQLITE_NULLABLE)
        op.execute(f"ALTER TABLE job ADD COLUMN {_SQLITE_BUILD}")
        op.execute(f"ALTER TABLE job ADD COLUMN {_SQLITE_RUN}")
    else:
        op.alter_column("job", "config", existing_type=sa.Integer(), nullable=True)
        op.alter_column("job", "solver", existing_type=sa.Integer(), nullable=True)
        op.execute("ALTER TABLE job DROP CONSTRAINT ck_job_job_step")
        op.execute(f"ALTER TABLE job ADD CONSTRAINT ck_job_job_step CHECK (step IN ({NEW_STEPS}))")
        op.add_column("job", sa.Column("search_build", BigId, nullable=True))
        op.add_column("job", sa.Column("search_run", BigId, nullable=True))
        op.create_foreign_key(
            op.f("fk_job_search_build_search_build"),
            "job",
            "search_build",
            ["search_build"],
            ["id"],
        )
        op.create_foreign_key(
            op.f("fk_job_search_run_search_run"), "job", "search_run", ["search_run"], ["id"]
        )
    op.create_index("ix_job_search_build", "job", ["search_build"], unique=True)
    op.create_index("ix_job_search_run", "job", ["search_run"], unique=True)


def downgrade() -> None:
    # A search's jobs mean nothing to the older schema (their kernels links cascade).
    op.execute("DELETE FROM job WHERE search_build IS NOT NULL OR search_run IS NOT NULL")
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_job_search_run", table_name="job")
        op.drop_index("ix_job_search_build", table_name="job")
        # DROP COLUMN refuses a column a foreign key names: drop the REFERENCES first.
        _sqlite_edit_job(
            [
                (_SQLITE_BUILD, "search_build INTEGER"),
                (_SQLITE_RUN, "search_run INTEGER"),
                *[(new, old) for old, new in _SQLITE_NULLABLE],
            ]
        )
        op.execute("ALTER TABLE job DROP COLUMN search_run")
        op.execute("ALTER TABLE job DROP COLUMN search_build")
    else:
        op.drop_constraint(op.f("fk_job_search_run_search_run"), "job", type_="foreignkey")
        op.drop_constraint(op.f("fk_job_search_build_search_build"), "job", type_="foreignkey")
        op.drop_index("ix_job_search_run", table_name="job")
        op.drop_index("ix_job_search_build", table_name="job")
        op.drop_column("job", "search_run")
        op.drop_column("job", "search_build")
        op.execute("ALTER TABLE job DROP CONSTRAINT ck_job_job_step")
        op.execute(f"ALTER TABLE job ADD CONSTRAINT ck_job_job_step CHECK (step IN ({OLD_STEPS}))")
        op.alter_column("job", "solver", existing_type=sa.Integer(), nullable=False)
        op.alter_column("job", "config", existing_type=sa.Integer(), nullable=False)
    op.drop_table("search_run")  # its index goes with it
    op.drop_table("search_build")
    op.drop_table("artifact")
    op.drop_table("search")
