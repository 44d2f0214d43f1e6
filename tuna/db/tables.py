# Over 600 lines: the whole schema in one place, each table beside its indexes.
"""Tuna's tables, as SQLAlchemy Core ``Table`` objects: the one definition of the schema.

The ORM classes in :mod:`tuna.db.models` are mapped onto these tables, and code on a hot
path (a worker's claims and records) builds its statements from them directly: a worker
never imports the ORM (``tests/worker/test_imports.py``). ``migrations/`` at the repo root
creates these tables, and a test fails when the two drift apart. Column types are chosen to
fit both MySQL 8 / MariaDB >= 10.6 (utf8mb4, InnoDB) and SQLite. A column whose type is
not written takes the type of the column its foreign key names.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    Double,
    Enum,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects import mysql

from tuna.db.enums import JobState, JobStep

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# BIGINT ids on MySQL; SQLite only auto-increments an INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer(), "sqlite")
# Microsecond timestamps on MySQL (leases are compared at that resolution).
Timestamp = DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
# Kernel binaries and other blobs: LONGBLOB on MySQL (BLOB stops at 64 KiB).
Blob = LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")
# Db keys are ASCII and compared byte for byte: a binary ASCII collation keeps their
# unique indexes small and their comparisons cheap on MySQL.
KeyString = String(255).with_variant(
    mysql.VARCHAR(255, charset="ascii", collation="ascii_bin"), "mysql", "mariadb"
)
# Names compared exactly (solver names): a binary collation on MySQL, where the table's
# utf8mb4_unicode_ci would make "ConvAsm1x1U" and "convasm1x1u" one name. SQLite compares bytes.
NameString = String(128).with_variant(
    mysql.VARCHAR(128, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
)
# Long free text (driver lines, reasons): TEXT holds 64 KiB, enough and indexable by prefix.
LongText = Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def _enum(cls: type[Any], name: str) -> Enum:
    """A string column holding an enum's values (not names), checked by a CHECK constraint."""
    return Enum(
        cls,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=20,
        values_callable=lambda e: [m.value for m in e],
        validate_strings=True,
    )


# InnoDB and utf8mb4 on MySQL / MariaDB; ignored by SQLite.
TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)


# A tuning session: what is tuned, where, with which library build.
session = Table(
    "session",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("arch", String(64), nullable=False),
    Column("num_cu", Integer, nullable=False),
    Column("backend", String(32), nullable=False),
    Column("library_version", String(64)),
    Column("library_commit", String(64)),
    Column("toolchain", String(255)),
    Column("docker_image", String(255)),
    Column("docker_digest", String(128)),
    Column("label", String(128)),
    Column("ticket", String(64)),
    Column("runtime", String(16)),  # HIP (None) or OpenCL
    Column("environment", JSON),
    # What the user adds to the platform of every measurement taken for this session
    # (``tuna session create --platform-json FILE``); see the platform table.
    Column("user_platform", JSON),
    Column("fingerprint", String(64), index=True, nullable=False),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    # Which history counts for this session (tuna.sessions.rules); None: the defaults.
    Column("history_rules", JSON),
    # A retired session's results stop counting anywhere; its rows stay.
    Column("retired", Timestamp),
    Column("retired_reason", String(255)),
    # How ``load_jobs --step perf`` searches a tunable solver's space when no --strategy is
    # given (``tuna session create --strategy``): the keyword arguments of
    # tuna.searches.strategy.load_strategy_searches; None: it queues perf jobs.
    Column("default_strategy", JSON),
    **TABLE_OPTIONS,
)


# A worker host go_fish can reach over SSH. No password is ever stored.
machine = Table(
    "machine",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("hostname", String(255), nullable=False),
    Column("port", Integer, default=22, server_default="22", nullable=False),
    Column("user", String(64)),
    Column("arch", String(64)),
    Column("num_cu", Integer),
    Column("gpus", JSON),
    Column("available", Boolean, default=True, server_default="1", nullable=False),
    Column("key_file", String(512)),
    Column("docker_settings", JSON),
    Column("ipmi_address", String(255)),
    Column("last_seen", Timestamp),
    # What the user adds to the platform of every measurement taken here
    # (``tuna machine add/update --platform-json FILE``), and the platform its latest
    # evaluation worker reported (collected facts and the user's additions).
    Column("user_platform", JSON),
    Column("platform", Integer),  # platform.id; never deleted
    UniqueConstraint("hostname", "port"),
    **TABLE_OPTIONS,
)


# A tensor shape: logical lengths in N, C, (D,) H, W order, a layout and a data type.
tensor = Table(
    "tensor",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("num_dims", SmallInteger, nullable=False),
    Column("dim0", Integer, nullable=False),
    Column("dim1", Integer, nullable=False),
    Column("dim2", Integer, nullable=False),
    Column("dim3", Integer, nullable=False),
    Column("dim4", Integer, default=0, server_default="0", nullable=False),
    Column("layout", String(16), nullable=False),
    Column("data_type", String(16), nullable=False),
    UniqueConstraint("num_dims", "dim0", "dim1", "dim2", "dim3", "dim4", "layout", "data_type"),
    **TABLE_OPTIONS,
)


# One convolution problem in one direction, unique by its MIOpen find-db key.
#
# x is ``input_tensor`` ([N, C, (D,) H, W]), w is ``weight_tensor`` ([K, C/G, ...]);
# the output's layout and type are kept here. ``driver`` is the line it was imported from,
# or one that gives its problem; empty for a problem only a db key describes (INT8 types
# that no base arg gives, "same" padding).
conv_config = Table(
    "conv_config",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("fdb_key", KeyString, unique=True, nullable=False),
    Column("spatial_dim", SmallInteger, nullable=False),
    Column("direction", String(1), nullable=False),
    Column("mode", String(8), default="conv", server_default="conv", nullable=False),
    Column("pad_mode", String(8), default="default", server_default="default", nullable=False),
    Column("group_count", Integer, default=1, server_default="1", nullable=False),
    Column("pad_d", Integer, default=0, server_default="0", nullable=False),
    Column("pad_h", Integer, nullable=False),
    Column("pad_w", Integer, nullable=False),
    Column("conv_stride_d", Integer, default=1, server_default="1", nullable=False),
    Column("conv_stride_h", Integer, nullable=False),
    Column("conv_stride_w", Integer, nullable=False),
    Column("dilation_d", Integer, default=1, server_default="1", nullable=False),
    Column("dilation_h", Integer, nullable=False),
    Column("dilation_w", Integer, nullable=False),
    Column("trans_output_pad_d", Integer, default=0, server_default="0", nullable=False),
    Column("trans_output_pad_h", Integer, default=0, server_default="0", nullable=False),
    Column("trans_output_pad_w", Integer, default=0, server_default="0", nullable=False),
    Column("bias", Integer, default=0, server_default="0", nullable=False),
    Column("input_tensor", ForeignKey("tensor.id"), nullable=False),
    Column("weight_tensor", ForeignKey("tensor.id"), nullable=False),
    Column("out_layout", String(16), nullable=False),
    Column("out_type", String(16), nullable=False),
    Column("in_cast", String(8)),
    Column("wei_cast", String(8)),
    Column("out_cast", String(8)),
    Column("driver", LongText, nullable=False),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    **TABLE_OPTIONS,
)


# A tag on a convolution config (e.g. the network it came from).
config_tag = Table(
    "config_tag",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("config", ForeignKey("conv_config.id", ondelete="CASCADE"), nullable=False),
    Column("tag", String(128), nullable=False),
    Column("recurrent", Boolean, default=False, server_default="0", nullable=False),
    UniqueConstraint("config", "tag"),
    Index(None, "tag"),
    **TABLE_OPTIONS,
)


# One batch-norm problem, unique by its canonical key (see ``tuna.problems.bnorm``).
bn_config = Table(
    "bn_config",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("bn_key", KeyString, unique=True, nullable=False),
    Column("data_type", String(32), nullable=False),
    Column("layout", String(16), nullable=False),
    Column("batchsize", Integer, nullable=False),
    Column("in_channels", Integer, nullable=False),
    Column("in_d", Integer, default=0, server_default="0", nullable=False),
    Column("in_h", Integer, nullable=False),
    Column("in_w", Integer, nullable=False),
    Column("mode", SmallInteger, nullable=False),
    Column("direction", String(16), nullable=False),
    Column("save", Boolean, default=False, server_default="0", nullable=False),
    Column("run", Boolean, default=False, server_default="0", nullable=False),
    Column("alpha", Double, default=1.0, server_default="1", nullable=False),
    Column("beta", Double, default=0.0, server_default="0", nullable=False),
    Column("driver", LongText, nullable=False),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    **TABLE_OPTIONS,
)


bn_config_tag = Table(
    "bn_config_tag",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("config", ForeignKey("bn_config.id", ondelete="CASCADE"), nullable=False),
    Column("tag", String(128), nullable=False),
    Column("recurrent", Boolean, default=False, server_default="0", nullable=False),
    UniqueConstraint("config", "tag"),
    Index(None, "tag"),
    **TABLE_OPTIONS,
)


# A solver of one backend; ``numeric_id`` is the library's own id where it has one.
solver = Table(
    "solver",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("backend", String(32), nullable=False),
    Column("name", NameString, nullable=False),
    Column("tunable", Boolean, default=False, server_default="0", nullable=False),
    Column("numeric_id", Integer),
    Column("algorithm", String(64)),
    Column("valid", Boolean, default=True, server_default="1", nullable=False),
    UniqueConstraint("backend", "name"),
    **TABLE_OPTIONS,
)


# One (session, config, solver, step) to compile and evaluate, or one step of a search.
#
# A convolution job names ``config`` and ``solver``. A search's job names instead either
# ``search_build`` (step ``build``: compile-phase work only, it ends ``evaluated`` once its
# artifact is stored) or ``search_run`` (step ``run``: evaluate-phase work, inserted
# ``compiled`` once its build is stored); its ``config`` and ``solver`` are NULL.
#
# Only ``tuna.jobs.states`` assigns ``state``; every write there is fenced by ``attempt``.
# The claim index (session, state, priority, id) keeps claims independent of table size.
job = Table(
    "job",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("session", ForeignKey("session.id"), nullable=False),
    Column("config", ForeignKey("conv_config.id")),
    Column("solver", ForeignKey("solver.id")),
    Column("step", _enum(JobStep, "job_step"), nullable=False),
    Column(
        "state",
        _enum(JobState, "job_state"),
        default=JobState.NEW,
        server_default=JobState.NEW.value,
        nullable=False,
    ),
    Column("label", String(128)),
    Column("priority", SmallInteger, default=0, server_default="0", nullable=False),
    Column("attempt", Integer, default=0, server_default="0", nullable=False),
    Column("retries", Integer, default=0, server_default="0", nullable=False),
    Column("lease_owner", String(128)),
    Column("lease_expires", Timestamp),
    Column("machine", ForeignKey("machine.id")),
    Column("gpu", Integer),
    Column("result", LongText),
    Column("reason", LongText),
    Column("compile_start", Timestamp),
    Column("compile_end", Timestamp),
    Column("eval_start", Timestamp),
    Column("eval_end", Timestamp),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    Column("search_build", ForeignKey("search_build.id")),
    Column("search_run", ForeignKey("search_run.id")),
    # Over the job's life, never cleared (``retries`` is the current phase's): migration 0021.
    Column("leases_lost", Integer, default=0, server_default="0", nullable=False),
    Column("tries_failed", Integer, default=0, server_default="0", nullable=False),
    UniqueConstraint("session", "config", "solver", "step"),
    Index("ix_job_claim", "session", "state", "priority", "id"),
    Index("ix_job_lease", "state", "lease_expires"),
    # A session's recent phase ends (its rate and ETA) without reading all its rows.
    Index("ix_job_session_compile_end", "session", "compile_end"),
    Index("ix_job_session_eval_end", "session", "eval_end"),
    # A session's failed jobs of one reason (the dashboard's drill-down): migration 0022.
    Index("ix_job_failure", "session", "state", "reason", mysql_length={"reason": 255}),
    # At most one job per search build / search run (NULLs do not collide).
    Index("ix_job_search_build", "search_build", unique=True),
    Index("ix_job_search_run", "search_run", unique=True),
    **TABLE_OPTIONS,
)


# A compiled kernel binary, stored once: ``identity`` hashes name, args and content.
#
# ``kernel_hash`` is the md5 of the uncompressed bytes (what MIOpen checks on load);
# ``blob`` is compressed unless ``uncompressed_size`` is 0.
kernel_cache = Table(
    "kernel_cache",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("identity", String(64), unique=True, nullable=False),
    Column("kernel_name", String(512), nullable=False),
    Column("kernel_args", LongText, nullable=False),
    Column("kernel_hash", String(64), index=True, nullable=False),
    Column("uncompressed_size", BigInteger, nullable=False),
    Column("blob", Blob, nullable=False),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    **TABLE_OPTIONS,
)


# Which kernels a job produced (compile phase) and which of them its solution runs.
#
# The compile phase links every kernel it built (replacing the old links, ``chosen``
# false); the evaluate phase sets ``chosen`` on the kernels of the solution it chose
# (all of them: a solution can run several) and clears it on the rest. The kernel db
# exports the chosen kernels of each winning job.
job_kernel = Table(
    "job_kernel",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("job", ForeignKey("job.id", ondelete="CASCADE"), nullable=False),
    Column("kernel", ForeignKey("kernel_cache.id"), index=True, nullable=False),
    Column("chosen", Boolean, default=False, server_default="0", nullable=False),
    UniqueConstraint("job", "kernel"),
    **TABLE_OPTIONS,
)


# Best parameters per (session, config, solver): the perf db.
perf_db = Table(
    "perf_db",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("session", ForeignKey("session.id"), nullable=False),
    Column("config", ForeignKey("conv_config.id"), nullable=False),
    Column("solver", ForeignKey("solver.id"), nullable=False),
    Column("params", Text, nullable=False),
    Column("job", ForeignKey("job.id", ondelete="SET NULL")),
    Column("kernel", ForeignKey("kernel_cache.id")),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    UniqueConstraint("session", "config", "solver"),
    **TABLE_OPTIONS,
)


# Time and workspace per (session, config, solver): the find db.
find_db = Table(
    "find_db",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("session", ForeignKey("session.id"), nullable=False),
    Column("config", ForeignKey("conv_config.id"), nullable=False),
    Column("solver", ForeignKey("solver.id"), nullable=False),
    Column("time_ms", Double, nullable=False),
    Column("workspace", BigInteger, nullable=False),
    Column("algorithm", String(64), nullable=False),
    Column("params", Text),
    Column("job", ForeignKey("job.id", ondelete="SET NULL")),
    Column("kernel", ForeignKey("kernel_cache.id")),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    # the row's place in the db record it was imported from (0 first); NULL: a job wrote it
    Column("import_order", Integer),
    UniqueConstraint("session", "config", "solver"),
    **TABLE_OPTIONS,
)


# A find-db record of a key Tuna cannot turn into a problem (MIOpen's legacy keys with 2D
# pads on 3D filters), imported as written: its key and its v2.0 entries, in their order.
key_only_record = Table(
    "key_only_record",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("session", ForeignKey("session.id", ondelete="CASCADE"), nullable=False),
    Column("fdb_key", KeyString, nullable=False),
    Column("entries", LongText, nullable=False),
    Column("reason", Text, nullable=False),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    UniqueConstraint("session", "fdb_key"),
    **TABLE_OPTIONS,
)


# An immutable, versioned snapshot of find results, with the version it grew from.
golden_version = Table(
    "golden_version",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("parent", ForeignKey("golden_version.version")),
    Column("arch", String(64), nullable=False),
    Column("num_cu", Integer, nullable=False),
    Column("note", Text),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    **TABLE_OPTIONS,
)


# One find result frozen into a golden version.
#
# ``job`` is the job that produced the find row (None for a row no job produced, e.g.
# one imported from a file); the kernels of its chosen solution at the time are frozen
# in ``golden_kernel``.
golden = Table(
    "golden",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("golden_v", ForeignKey("golden_version.version"), nullable=False),
    Column("session", ForeignKey("session.id"), nullable=False),
    Column("config", ForeignKey("conv_config.id"), nullable=False),
    Column("solver", ForeignKey("solver.id"), nullable=False),
    Column("fdb_key", KeyString, nullable=False),
    Column("params", Text),
    Column("time_ms", Double, nullable=False),
    Column("workspace", BigInteger, nullable=False),
    Column("algorithm", String(64), nullable=False),
    Column("job", ForeignKey("job.id", ondelete="SET NULL")),
    UniqueConstraint("golden_v", "config", "solver"),
    **TABLE_OPTIONS,
)


# A kernel of a golden row's chosen solution, frozen when the row was.
#
# A golden row's job can be evaluated again (``tuna jobs requeue``) or compiled again
# (``tuna jobs reset``), which moves its ``job_kernel`` links; these rows do not move, so
# a golden version's kernel db stays what it was. Kernels are content-addressed and never
# deleted, so the ids hold.
golden_kernel = Table(
    "golden_kernel",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("golden", ForeignKey("golden.id", ondelete="CASCADE"), nullable=False),
    Column("kernel", ForeignKey("kernel_cache.id"), index=True, nullable=False),
    UniqueConstraint("golden", "kernel"),
    **TABLE_OPTIONS,
)


# Whether a solver applies to a config, as a session's library build said.
#
# Written by ``tuna applicability update`` (for MIOpen: fin's ``applicability`` step) and
# read by ``load_jobs``; ``reason`` says why a solver does not apply. One row per
# (session, config, solver).
solver_applicability = Table(
    "solver_applicability",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("session", ForeignKey("session.id"), nullable=False),
    Column("config", ForeignKey("conv_config.id", ondelete="CASCADE"), nullable=False),
    Column("solver", ForeignKey("solver.id"), nullable=False),
    Column("applicable", Boolean, nullable=False),
    Column("reason", String(512)),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    UniqueConstraint("session", "config", "solver"),
    **TABLE_OPTIONS,
)


# What a measurement was taken on, stored once: ``digest`` is the sha256 of ``info``'s
# canonical JSON (sorted keys, no spaces), so the same machine or container reports the
# same row. ``info`` holds the facts a worker collects (``tuna.platforms``) and, under
# ``"user"``, what the machine's and the session's ``user_platform`` add. Never deleted.
platform = Table(
    "platform",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("digest", String(64), unique=True, nullable=False),
    Column("info", JSON, nullable=False),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    **TABLE_OPTIONS,
)


# One candidate timed: what (config, solver, params), where (platform, machine), for
# which session and job, by which strategy, with what result (``time_ms`` of a valid one;
# ``reason`` says what happened otherwise: wrong result, crashed, timed out ...).
#
# Built to hold 10^8 rows: compact columns and one secondary index, (session, config,
# solver, platform), which every read starts from: resume a job, a search round's rows,
# resume and transfer (``counting_measurements``), the best time of ``tuna history
# effort``. The effort itself is counted in ``measurement_effort`` (migrations 0014,
# 0017). ``job``, ``config`` (since 0017), ``solver``, ``platform`` and
# ``machine`` carry no foreign-key constraint: on InnoDB each would add an index of its
# own (about 85 bytes a row for the four, measured), and the rows they name are never
# deleted (jobs, configs, solvers, platforms) or, for a removed machine, the id stays as history.
# The worker writes them from the ids it holds.
measurement = Table(
    "measurement",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("session", ForeignKey("session.id"), nullable=False),
    Column("job", BigInteger),
    Column("config", Integer, nullable=False),
    Column("solver", Integer, nullable=False),
    Column("params", Text, nullable=False),
    Column("platform", Integer, nullable=False),
    Column("machine", Integer),
    Column("strategy", String(32)),
    Column("time_ms", Double),
    Column("valid", Boolean, nullable=False),
    Column("reason", String(255)),
    Column("taken", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    # Every read starts from the sessions that count (migration 0017).
    Index(
        "ix_measurement_session_config_solver_platform", "session", "config", "solver", "platform"
    ),
    **TABLE_OPTIONS,
)


# How many measurements a session spent on a (config, solver) on a platform, by strategy
# and day: the effort ``load_jobs --min-trials`` counts (``tuna.library.effort``) without
# reading the measurement rows (10^7 of them over 100,000 problems).
#
# Kept by ``tuna.jobs.measurements.write_measurements`` in the transaction that inserts the
# measurement rows (the fenced record or a progress save), so a count exists exactly when
# its rows were written: a lost job's measurements and counts are rolled back together.
# ``day`` is the date the rows were taken (``DATE(taken)``), so ``max_age`` cuts at day
# granularity here: rows taken on the cutoff's day count whole. ``tuna history prune``
# deletes measurement rows but not their counts (the effort was spent; the best rows
# stay). ``strategy`` is ``''`` for none (a key column cannot be NULL). The primary key is
# the only index: the count is a range read of it by session.
measurement_effort = Table(
    "measurement_effort",
    metadata,
    Column("session", ForeignKey("session.id"), primary_key=True),
    Column("config", Integer, primary_key=True, autoincrement=False),
    Column("solver", Integer, primary_key=True, autoincrement=False),
    Column("platform", Integer, primary_key=True, autoincrement=False),
    Column("day", Date, primary_key=True),
    Column("strategy", String(32), primary_key=True, server_default=""),
    Column("measurements", Integer, nullable=False),
    Column("valid", Integer, nullable=False),
    # The largest budget the strategy was given for these measurements (migration 0015;
    # NULL: not said), from ``Measurement.budget``.
    Column("budget", Integer),
    **TABLE_OPTIONS,
)


# A search over a benchmark's parameters, driven through the job queue (issue #15).
#
# ``space_text`` is the parameter file's text (a resume needs no file on disk), ``base``
# the configuration its points override, ``searcher`` a searcher expression (NULL: the
# file's ``META_search_callback`` or the exhaustive product). ``objective`` is
# ``{"stat", "goal": "min"|"max", "valid": stat name or null}``; ``spec`` the backend's
# settings (build/run templates, stats format, timeouts). ``state``: active, done,
# failed or stopped; ``reason`` says why it failed or stopped.
search = Table(
    "search",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("session", ForeignKey("session.id"), nullable=False),
    Column("name", String(128), nullable=False),
    Column("space_file", String(255), nullable=False),
    Column("space_text", LongText, nullable=False),
    Column("base", JSON, nullable=False),
    Column("searcher", String(255)),
    Column("objective", JSON, nullable=False),
    Column("budget", Integer),
    Column("parallelism", Integer, nullable=False),
    Column("backend", String(32), nullable=False),
    Column("spec", JSON, nullable=False),
    Column("state", String(16), default="active", server_default="active", nullable=False),
    Column("reason", LongText),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    Column("finished", Timestamp),
    # How hopeless runs are stopped early (tuna.searchers.prune's JSON; NULL: never), and
    # the wall-clock budget in seconds (NULL: none), counted from its first run.
    Column("pruner", JSON),
    Column("time_budget_s", Double),
    UniqueConstraint("session", "name"),
    **TABLE_OPTIONS,
)


# A build's output directory as a compressed tar, stored once by the sha256 of its bytes.
artifact = Table(
    "artifact",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("digest", String(64), unique=True, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("blob", Blob, nullable=False),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    **TABLE_OPTIONS,
)


# One build of a search: its build-time parameters (``build_key`` hashes them).
#
# ``artifact`` is set once the build is stored; ``valid`` is NULL until the build job
# ended, then whether it built (``reason`` says why not). Runs of a failed build are
# invalid with its reason.
search_build = Table(
    "search_build",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("search", ForeignKey("search.id"), nullable=False),
    Column("build_key", String(64), nullable=False),
    Column("params", JSON, nullable=False),
    Column("artifact", ForeignKey("artifact.id")),
    Column("valid", Boolean),
    Column("reason", LongText),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    Column("finished", Timestamp),
    UniqueConstraint("search", "build_key"),
    **TABLE_OPTIONS,
)


# One proposal of a search (``seq``: proposal order from 0) and, once run, its Run.
#
# ``point`` holds the searcher's values, ``config`` the full merged config; ``stats`` the
# parsed output and ``value`` the objective's stat. ``valid`` is NULL until the run ended;
# false with ``reason`` for a failed, timed-out or refused run, or one whose build failed.
# ``landed`` is the run's place in its search's landing order (1, 2, 3, ...), given when it
# ends (tuna.jobs.search_results, under the search's search_tally row lock): the order of
# the best-so-far curve, and a step's position in it.
search_run = Table(
    "search_run",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("search", ForeignKey("search.id"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("point", JSON, nullable=False),
    Column("config", JSON, nullable=False),
    Column("build", ForeignKey("search_build.id")),
    Column("stats", JSON),
    Column("value", Double),
    Column("valid", Boolean),
    Column("reason", LongText),
    Column("machine", ForeignKey("machine.id")),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    Column("finished", Timestamp),
    Column("landed", Integer),
    # The intermediate values it reported ([[step, value], ...], written as it runs when
    # the search has a pruner), and whether the pruner stopped it (then ``valid`` false).
    # An empty curve (None) is SQL NULL, not JSON null: tuna.jobs.pruning reads the curves
    # of the runs that reported any by ``intermediate IS NOT NULL``.
    Column("intermediate", JSON(none_as_null=True)),
    Column("pruned", Boolean, server_default="0", nullable=False),
    # A study's claim of a pending run (tuna.searches.studystore): when the claim lapses
    # unless its process's heartbeat extends it (the database clock); NULL for other runs.
    Column("lease_expires", Timestamp),
    UniqueConstraint("search", "seq"),
    # The read side (tuna.searches.query): runs by status, the best run (the earliest
    # landed of equal values), the best-so-far curve's first and latest runs.
    Index(None, "search", "valid", "seq"),
    Index(None, "search", "valid", "value", "landed"),
    Index(None, "search", "landed", "valid", "value"),
    # A claim's look for the ready runs of the builds a worker holds (tuna.jobs.claims):
    # the runs of a build not ended yet (``valid`` NULL), not every run it ever had.
    Index(None, "build", "valid"),
    **TABLE_OPTIONS,
)


# A search's front measured again on a second input set (its validation stage, PredTuner's
# test set: tuna.searches.validation): one row per (run validated, input set), the run's
# ``seq`` (-1: the baseline), its ``config``, what the search's model ``predicted`` of its
# stats when it chose it (NULL: chosen otherwise), the ``stats`` measured on ``inputs``
# (NULL: the measurement failed, ``reason`` says why) and whether it is ``kept`` there (it
# meets the constraints against the baseline measured on the same inputs). Validating
# again on the same inputs replaces the rows.
search_validation = Table(
    "search_validation",
    metadata,
    Column("id", BigId, primary_key=True),
    Column("search", ForeignKey("search.id"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("inputs", String(64), nullable=False),
    Column("config", JSON, nullable=False),
    Column("predicted", JSON),
    Column("stats", JSON),
    Column("reason", LongText),
    Column("kept", Boolean, nullable=False),
    Column("created", DateTime, server_default=text("CURRENT_TIMESTAMP"), nullable=False),
    UniqueConstraint("search", "inputs", "seq"),
    **TABLE_OPTIONS,
)


# A search's runs counted as they land: ``runs`` proposed, ``done`` ended (``valid`` not
# NULL) and ``valid`` ended valid, kept in the transaction that changes a run
# (:mod:`tuna.jobs.search_results`), so the read side need not count 10^6 index entries.
# A row of its own, not columns of ``search``: a run's insert takes a shared lock on its
# ``search`` row (the foreign key), which a counter there would have to upgrade.
search_tally = Table(
    "search_tally",
    metadata,
    Column("search", ForeignKey("search.id"), primary_key=True, autoincrement=False),
    Column("runs", BigInteger, nullable=False),
    Column("done", BigInteger, nullable=False),
    Column("valid", BigInteger, nullable=False),
    Column("pruned", BigInteger, nullable=False, server_default="0"),
    **TABLE_OPTIONS,
)
