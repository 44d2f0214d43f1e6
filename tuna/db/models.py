"""SQLAlchemy models of Tuna's data model (see DESIGN.md, "Data model").

Kept apart from the storage API and the migrations: ``migrations/`` at the repo root
creates these tables, and a test fails when the two drift apart. Column types are
chosen to fit both MySQL 8 / MariaDB >= 10.6 (utf8mb4, InnoDB) and SQLite.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
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
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, declared_attr, mapped_column

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
TABLE_OPTIONS = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_unicode_ci",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)

    @declared_attr.directive
    def __table_args__(cls) -> Any:  # noqa: N805
        return TABLE_OPTIONS


class TuningSession(Base):
    """A tuning session: what is tuned, where, with which library build."""

    __tablename__ = "session"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    arch: Mapped[str] = mapped_column(String(64))
    num_cu: Mapped[int] = mapped_column(Integer)
    backend: Mapped[str] = mapped_column(String(32))
    library_version: Mapped[str | None] = mapped_column(String(64))
    library_commit: Mapped[str | None] = mapped_column(String(64))
    toolchain: Mapped[str | None] = mapped_column(String(255))
    docker_image: Mapped[str | None] = mapped_column(String(255))
    docker_digest: Mapped[str | None] = mapped_column(String(128))
    label: Mapped[str | None] = mapped_column(String(128))
    ticket: Mapped[str | None] = mapped_column(String(64))
    runtime: Mapped[str | None] = mapped_column(String(16))  # HIP (None) or OpenCL
    environment: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # What the user adds to the platform of every measurement taken for this session
    # (``tuna session create --platform-json FILE``); see ``Platform``.
    user_platform: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    fingerprint: Mapped[str] = mapped_column(String(64), index=True)
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))
    # Which history counts for this session (tuna.sessions.rules); None: the defaults.
    history_rules: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # A retired session's results stop counting anywhere; its rows stay.
    retired: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    retired_reason: Mapped[str | None] = mapped_column(String(255))


class Machine(Base):
    """A worker host go_fish can reach over SSH. No password is ever stored."""

    __tablename__ = "machine"
    __table_args__ = (UniqueConstraint("hostname", "port"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    hostname: Mapped[str] = mapped_column(String(255))
    port: Mapped[int] = mapped_column(Integer, default=22, server_default="22")
    user: Mapped[str | None] = mapped_column(String(64))
    arch: Mapped[str | None] = mapped_column(String(64))
    num_cu: Mapped[int | None] = mapped_column(Integer)
    gpus: Mapped[list[int] | None] = mapped_column(JSON)
    available: Mapped[bool] = mapped_column(Boolean, default=True, server_default="1")
    key_file: Mapped[str | None] = mapped_column(String(512))
    docker_settings: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    ipmi_address: Mapped[str | None] = mapped_column(String(255))
    last_seen: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    # What the user adds to the platform of every measurement taken here
    # (``tuna machine add/update --platform-json FILE``), and the platform its latest
    # evaluation worker reported (collected facts and the user's additions).
    user_platform: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    platform: Mapped[int | None] = mapped_column(Integer)  # platform.id; never deleted


class Tensor(Base):
    """A tensor shape: logical lengths in N, C, (D,) H, W order, a layout and a data type."""

    __tablename__ = "tensor"
    __table_args__ = (
        UniqueConstraint("num_dims", "dim0", "dim1", "dim2", "dim3", "dim4", "layout", "data_type"),
        TABLE_OPTIONS,
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    num_dims: Mapped[int] = mapped_column(SmallInteger)
    dim0: Mapped[int] = mapped_column(Integer)
    dim1: Mapped[int] = mapped_column(Integer)
    dim2: Mapped[int] = mapped_column(Integer)
    dim3: Mapped[int] = mapped_column(Integer)
    dim4: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    layout: Mapped[str] = mapped_column(String(16))
    data_type: Mapped[str] = mapped_column(String(16))


class ConvConfig(Base):
    """One convolution problem in one direction, unique by its MIOpen find-db key.

    x is ``input_tensor`` ([N, C, (D,) H, W]), w is ``weight_tensor`` ([K, C/G, ...]);
    the output's layout and type are kept here. ``driver`` is the line it was imported from,
    or one that gives its problem; empty for a problem only a db key describes (INT8 types
    that no base arg gives, "same" padding).
    """

    __tablename__ = "conv_config"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fdb_key: Mapped[str] = mapped_column(KeyString, unique=True)
    spatial_dim: Mapped[int] = mapped_column(SmallInteger)
    direction: Mapped[str] = mapped_column(String(1))
    mode: Mapped[str] = mapped_column(String(8), default="conv", server_default="conv")
    pad_mode: Mapped[str] = mapped_column(String(8), default="default", server_default="default")
    group_count: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    pad_d: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    pad_h: Mapped[int] = mapped_column(Integer)
    pad_w: Mapped[int] = mapped_column(Integer)
    conv_stride_d: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    conv_stride_h: Mapped[int] = mapped_column(Integer)
    conv_stride_w: Mapped[int] = mapped_column(Integer)
    dilation_d: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    dilation_h: Mapped[int] = mapped_column(Integer)
    dilation_w: Mapped[int] = mapped_column(Integer)
    trans_output_pad_d: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    trans_output_pad_h: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    trans_output_pad_w: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    bias: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    input_tensor: Mapped[int] = mapped_column(ForeignKey("tensor.id"))
    weight_tensor: Mapped[int] = mapped_column(ForeignKey("tensor.id"))
    out_layout: Mapped[str] = mapped_column(String(16))
    out_type: Mapped[str] = mapped_column(String(16))
    in_cast: Mapped[str | None] = mapped_column(String(8))
    wei_cast: Mapped[str | None] = mapped_column(String(8))
    out_cast: Mapped[str | None] = mapped_column(String(8))
    driver: Mapped[str] = mapped_column(LongText)
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))


class ConfigTag(Base):
    """A tag on a convolution config (e.g. the network it came from)."""

    __tablename__ = "config_tag"
    __table_args__ = (UniqueConstraint("config", "tag"), Index(None, "tag"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    config: Mapped[int] = mapped_column(ForeignKey("conv_config.id", ondelete="CASCADE"))
    tag: Mapped[str] = mapped_column(String(128))
    recurrent: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")


class BnConfig(Base):
    """One batch-norm problem, unique by its canonical key (see ``tuna.problems.bnorm``)."""

    __tablename__ = "bn_config"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bn_key: Mapped[str] = mapped_column(KeyString, unique=True)
    data_type: Mapped[str] = mapped_column(String(32))
    layout: Mapped[str] = mapped_column(String(16))
    batchsize: Mapped[int] = mapped_column(Integer)
    in_channels: Mapped[int] = mapped_column(Integer)
    in_d: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    in_h: Mapped[int] = mapped_column(Integer)
    in_w: Mapped[int] = mapped_column(Integer)
    mode: Mapped[int] = mapped_column(SmallInteger)
    direction: Mapped[str] = mapped_column(String(16))
    save: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    run: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    alpha: Mapped[float] = mapped_column(Double, default=1.0, server_default="1")
    beta: Mapped[float] = mapped_column(Double, default=0.0, server_default="0")
    driver: Mapped[str] = mapped_column(LongText)
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))


class BnConfigTag(Base):
    __tablename__ = "bn_config_tag"
    __table_args__ = (UniqueConstraint("config", "tag"), Index(None, "tag"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    config: Mapped[int] = mapped_column(ForeignKey("bn_config.id", ondelete="CASCADE"))
    tag: Mapped[str] = mapped_column(String(128))
    recurrent: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")


class Solver(Base):
    """A solver of one backend; ``numeric_id`` is the library's own id where it has one."""

    __tablename__ = "solver"
    __table_args__ = (UniqueConstraint("backend", "name"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    backend: Mapped[str] = mapped_column(String(32))
    name: Mapped[str] = mapped_column(NameString)
    tunable: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    numeric_id: Mapped[int | None] = mapped_column(Integer)
    algorithm: Mapped[str | None] = mapped_column(String(64))
    valid: Mapped[bool] = mapped_column(Boolean, default=True, server_default="1")


class Job(Base):
    """One (session, config, solver, step) to compile and evaluate, or one step of a search.

    A convolution job names ``config`` and ``solver``. A search's job names instead either
    ``search_build`` (step ``build``: compile-phase work only, it ends ``evaluated`` once its
    artifact is stored) or ``search_run`` (step ``run``: evaluate-phase work, inserted
    ``compiled`` once its build is stored); its ``config`` and ``solver`` are NULL.

    Only ``tuna.jobs.states`` assigns ``state``; every write there is fenced by ``attempt``.
    The claim index (session, state, priority, id) keeps claims independent of table size.
    """

    __tablename__ = "job"
    __table_args__ = (
        UniqueConstraint("session", "config", "solver", "step"),
        Index("ix_job_claim", "session", "state", "priority", "id"),
        Index("ix_job_lease", "state", "lease_expires"),
        # A session's recent phase ends (its rate and ETA) without reading all its rows.
        Index("ix_job_session_compile_end", "session", "compile_end"),
        Index("ix_job_session_eval_end", "session", "eval_end"),
        # At most one job per search build / search run (NULLs do not collide).
        Index("ix_job_search_build", "search_build", unique=True),
        Index("ix_job_search_run", "search_run", unique=True),
        TABLE_OPTIONS,
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    session: Mapped[int] = mapped_column(ForeignKey("session.id"))
    config: Mapped[int | None] = mapped_column(ForeignKey("conv_config.id"))
    solver: Mapped[int | None] = mapped_column(ForeignKey("solver.id"))
    step: Mapped[JobStep] = mapped_column(_enum(JobStep, "job_step"))
    state: Mapped[JobState] = mapped_column(
        _enum(JobState, "job_state"), default=JobState.NEW, server_default=JobState.NEW.value
    )
    label: Mapped[str | None] = mapped_column(String(128))
    priority: Mapped[int] = mapped_column(SmallInteger, default=0, server_default="0")
    attempt: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    retries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    lease_expires: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    machine: Mapped[int | None] = mapped_column(ForeignKey("machine.id"))
    gpu: Mapped[int | None] = mapped_column(Integer)
    result: Mapped[str | None] = mapped_column(LongText)
    reason: Mapped[str | None] = mapped_column(LongText)
    compile_start: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    compile_end: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    eval_start: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    eval_end: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))
    search_build: Mapped[int | None] = mapped_column(ForeignKey("search_build.id"))
    search_run: Mapped[int | None] = mapped_column(ForeignKey("search_run.id"))


class KernelCache(Base):
    """A compiled kernel binary, stored once: ``identity`` hashes name, args and content.

    ``kernel_hash`` is the md5 of the uncompressed bytes (what MIOpen checks on load);
    ``blob`` is compressed unless ``uncompressed_size`` is 0.
    """

    __tablename__ = "kernel_cache"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    identity: Mapped[str] = mapped_column(String(64), unique=True)
    kernel_name: Mapped[str] = mapped_column(String(512))
    kernel_args: Mapped[str] = mapped_column(LongText)
    kernel_hash: Mapped[str] = mapped_column(String(64), index=True)
    uncompressed_size: Mapped[int] = mapped_column(BigInteger)
    blob: Mapped[bytes] = mapped_column(Blob)
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))


class JobKernel(Base):
    """Which kernels a job produced (compile phase) and which of them its solution runs.

    The compile phase links every kernel it built (replacing the old links, ``chosen``
    false); the evaluate phase sets ``chosen`` on the kernels of the solution it chose
    (all of them: a solution can run several) and clears it on the rest. The kernel db
    exports the chosen kernels of each winning job.
    """

    __tablename__ = "job_kernel"
    __table_args__ = (UniqueConstraint("job", "kernel"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    job: Mapped[int] = mapped_column(ForeignKey("job.id", ondelete="CASCADE"))
    kernel: Mapped[int] = mapped_column(ForeignKey("kernel_cache.id"), index=True)
    chosen: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")


class PerfDb(Base):
    """Best parameters per (session, config, solver): the perf db."""

    __tablename__ = "perf_db"
    __table_args__ = (UniqueConstraint("session", "config", "solver"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    session: Mapped[int] = mapped_column(ForeignKey("session.id"))
    config: Mapped[int] = mapped_column(ForeignKey("conv_config.id"))
    solver: Mapped[int] = mapped_column(ForeignKey("solver.id"))
    params: Mapped[str] = mapped_column(Text)
    job: Mapped[int | None] = mapped_column(ForeignKey("job.id", ondelete="SET NULL"))
    kernel: Mapped[int | None] = mapped_column(ForeignKey("kernel_cache.id"))
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))


class FindDb(Base):
    """Time and workspace per (session, config, solver): the find db."""

    __tablename__ = "find_db"
    __table_args__ = (UniqueConstraint("session", "config", "solver"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    session: Mapped[int] = mapped_column(ForeignKey("session.id"))
    config: Mapped[int] = mapped_column(ForeignKey("conv_config.id"))
    solver: Mapped[int] = mapped_column(ForeignKey("solver.id"))
    time_ms: Mapped[float] = mapped_column(Double)
    workspace: Mapped[int] = mapped_column(BigInteger)
    algorithm: Mapped[str] = mapped_column(String(64))
    params: Mapped[str | None] = mapped_column(Text)
    job: Mapped[int | None] = mapped_column(ForeignKey("job.id", ondelete="SET NULL"))
    kernel: Mapped[int | None] = mapped_column(ForeignKey("kernel_cache.id"))
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))


class GoldenVersion(Base):
    """An immutable, versioned snapshot of find results, with the version it grew from."""

    __tablename__ = "golden_version"

    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    parent: Mapped[int | None] = mapped_column(ForeignKey("golden_version.version"))
    arch: Mapped[str] = mapped_column(String(64))
    num_cu: Mapped[int] = mapped_column(Integer)
    note: Mapped[str | None] = mapped_column(Text)
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))


class Golden(Base):
    """One find result frozen into a golden version.

    ``job`` is the job that produced the find row (None for a row no job produced, e.g.
    one imported from a file); the kernels of its chosen solution at the time are frozen
    in ``golden_kernel``.
    """

    __tablename__ = "golden"
    __table_args__ = (UniqueConstraint("golden_v", "config", "solver"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    golden_v: Mapped[int] = mapped_column(ForeignKey("golden_version.version"))
    session: Mapped[int] = mapped_column(ForeignKey("session.id"))
    config: Mapped[int] = mapped_column(ForeignKey("conv_config.id"))
    solver: Mapped[int] = mapped_column(ForeignKey("solver.id"))
    fdb_key: Mapped[str] = mapped_column(KeyString)
    params: Mapped[str | None] = mapped_column(Text)
    time_ms: Mapped[float] = mapped_column(Double)
    workspace: Mapped[int] = mapped_column(BigInteger)
    algorithm: Mapped[str] = mapped_column(String(64))
    job: Mapped[int | None] = mapped_column(ForeignKey("job.id", ondelete="SET NULL"))


class GoldenKernel(Base):
    """A kernel of a golden row's chosen solution, frozen when the row was.

    A golden row's job can be evaluated again (``tuna jobs requeue``) or compiled again
    (``tuna jobs reset``), which moves its ``job_kernel`` links; these rows do not move, so
    a golden version's kernel db stays what it was. Kernels are content-addressed and never
    deleted, so the ids hold.
    """

    __tablename__ = "golden_kernel"
    __table_args__ = (UniqueConstraint("golden", "kernel"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    golden: Mapped[int] = mapped_column(ForeignKey("golden.id", ondelete="CASCADE"))
    kernel: Mapped[int] = mapped_column(ForeignKey("kernel_cache.id"), index=True)


class SolverApplicability(Base):
    """Whether a solver applies to a config, as a session's library build said.

    Written by ``tuna applicability update`` (for MIOpen: fin's ``applicability`` step) and
    read by ``load_jobs``; ``reason`` says why a solver does not apply. One row per
    (session, config, solver).
    """

    __tablename__ = "solver_applicability"
    __table_args__ = (UniqueConstraint("session", "config", "solver"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    session: Mapped[int] = mapped_column(ForeignKey("session.id"))
    config: Mapped[int] = mapped_column(ForeignKey("conv_config.id", ondelete="CASCADE"))
    solver: Mapped[int] = mapped_column(ForeignKey("solver.id"))
    applicable: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(String(512))
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))


class Platform(Base):
    """What a measurement was taken on, stored once: ``digest`` is the sha256 of ``info``'s
    canonical JSON (sorted keys, no spaces), so the same machine or container reports the
    same row. ``info`` holds the facts a worker collects (``tuna.platforms``) and, under
    ``"user"``, what the machine's and the session's ``user_platform`` add. Never deleted.
    """

    __tablename__ = "platform"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    info: Mapped[dict[str, Any]] = mapped_column(JSON)
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))


class Measurement(Base):
    """One candidate timed: what (config, solver, params), where (platform, machine), for
    which session and job, by which strategy, with what result (``time_ms`` of a valid one;
    ``reason`` says what happened otherwise: wrong result, crashed, timed out ...).

    Built to hold 10^8 rows: compact columns and only the indexes the queries need,
    (session, config, solver, platform, taken) to resume a job, export a session and count
    its effort (migration 0010), (config, solver, platform) for the effort spent on a
    problem. ``job``, ``solver``, ``platform`` and
    ``machine`` carry no foreign-key constraint: on InnoDB each would add an index of its
    own (about 85 bytes a row for the four, measured), and the rows they name are never
    deleted (jobs, solvers, platforms) or, for a removed machine, the id stays as history.
    The worker writes them from the ids it holds.
    """

    __tablename__ = "measurement"
    __table_args__ = (
        # Covers the effort count under the history rules (tuna.library.effort).
        Index(
            "ix_measurement_session_config_solver_platform_taken",
            "session",
            "config",
            "solver",
            "platform",
            "taken",
        ),
        Index("ix_measurement_config_solver_platform", "config", "solver", "platform"),
        TABLE_OPTIONS,
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    session: Mapped[int] = mapped_column(ForeignKey("session.id"))
    job: Mapped[int | None] = mapped_column(BigInteger)
    config: Mapped[int] = mapped_column(ForeignKey("conv_config.id"))
    solver: Mapped[int] = mapped_column(Integer)
    params: Mapped[str] = mapped_column(Text)
    platform: Mapped[int] = mapped_column(Integer)
    machine: Mapped[int | None] = mapped_column(Integer)
    strategy: Mapped[str | None] = mapped_column(String(32))
    time_ms: Mapped[float | None] = mapped_column(Double)
    valid: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(String(255))
    taken: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))


class Search(Base):
    """A search over a benchmark's parameters, driven through the job queue (issue #15).

    ``space_text`` is the parameter file's text (a resume needs no file on disk), ``base``
    the configuration its points override, ``searcher`` a searcher expression (NULL: the
    file's ``META_search_callback`` or the exhaustive product). ``objective`` is
    ``{"stat", "goal": "min"|"max", "valid": stat name or null}``; ``spec`` the backend's
    settings (build/run templates, stats format, timeouts). ``state``: active, done,
    failed or stopped; ``reason`` says why it failed or stopped.
    """

    __tablename__ = "search"
    __table_args__ = (UniqueConstraint("session", "name"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session: Mapped[int] = mapped_column(ForeignKey("session.id"))
    name: Mapped[str] = mapped_column(String(128))
    space_file: Mapped[str] = mapped_column(String(255))
    space_text: Mapped[str] = mapped_column(LongText)
    base: Mapped[dict[str, Any]] = mapped_column(JSON)
    searcher: Mapped[str | None] = mapped_column(String(255))
    objective: Mapped[dict[str, Any]] = mapped_column(JSON)
    budget: Mapped[int | None] = mapped_column(Integer)
    parallelism: Mapped[int] = mapped_column(Integer)
    backend: Mapped[str] = mapped_column(String(32))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), default="active", server_default="active")
    reason: Mapped[str | None] = mapped_column(LongText)
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))
    finished: Mapped[dt.datetime | None] = mapped_column(Timestamp)


class Artifact(Base):
    """A build's output directory as a compressed tar, stored once by the sha256 of its bytes."""

    __tablename__ = "artifact"

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    size: Mapped[int] = mapped_column(BigInteger)
    blob: Mapped[bytes] = mapped_column(Blob)
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))


class SearchBuild(Base):
    """One build of a search: its build-time parameters (``build_key`` hashes them).

    ``artifact`` is set once the build is stored; ``valid`` is NULL until the build job
    ended, then whether it built (``reason`` says why not). Runs of a failed build are
    invalid with its reason.
    """

    __tablename__ = "search_build"
    __table_args__ = (UniqueConstraint("search", "build_key"), TABLE_OPTIONS)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    search: Mapped[int] = mapped_column(ForeignKey("search.id"))
    build_key: Mapped[str] = mapped_column(String(64))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    artifact: Mapped[int | None] = mapped_column(ForeignKey("artifact.id"))
    valid: Mapped[bool | None] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(LongText)
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))
    finished: Mapped[dt.datetime | None] = mapped_column(Timestamp)


class SearchRun(Base):
    """One proposal of a search (``seq``: proposal order from 0) and, once run, its Run.

    ``point`` holds the searcher's values, ``config`` the full merged config; ``stats`` the
    parsed output and ``value`` the objective's stat. ``valid`` is NULL until the run ended;
    false with ``reason`` for a failed, timed-out or refused run, or one whose build failed.
    """

    __tablename__ = "search_run"
    __table_args__ = (
        UniqueConstraint("search", "seq"),
        # The read side (tuna.searches.query): runs by status, the best run, progress.
        Index(None, "search", "valid", "seq"),
        Index(None, "search", "valid", "value", "finished", "seq"),
        Index(None, "search", "finished", "seq", "valid", "value"),
        TABLE_OPTIONS,
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    search: Mapped[int] = mapped_column(ForeignKey("search.id"))
    seq: Mapped[int] = mapped_column(Integer)
    point: Mapped[dict[str, Any]] = mapped_column(JSON)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    build: Mapped[int | None] = mapped_column(ForeignKey("search_build.id"), index=True)
    stats: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    value: Mapped[float | None] = mapped_column(Double)
    valid: Mapped[bool | None] = mapped_column(Boolean)
    reason: Mapped[str | None] = mapped_column(LongText)
    machine: Mapped[int | None] = mapped_column(ForeignKey("machine.id"))
    created: Mapped[dt.datetime] = mapped_column(DateTime, server_default=text("CURRENT_TIMESTAMP"))
    finished: Mapped[dt.datetime | None] = mapped_column(Timestamp)
