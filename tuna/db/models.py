"""SQLAlchemy ORM classes of Tuna's data model (see DESIGN.md, "Data model").

Each class is mapped onto its table in :mod:`tuna.db.tables`, where the columns, types,
keys and indexes are defined and documented; the annotations here only tell the type
checker what an attribute holds, and a test checks that they name exactly the table's
columns (``tests/db/test_models.py``). The ORM is for the commands; a worker's hot path
builds Core statements on the tables and never imports this module.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.orm import DeclarativeBase, Mapped

from tuna.db import tables
from tuna.db.enums import JobState, JobStep
from tuna.db.tables import TABLE_OPTIONS, Timestamp

__all__ = ["TABLE_OPTIONS", "Timestamp"]


class Base(DeclarativeBase):
    metadata = tables.metadata


class TuningSession(Base):
    __table__ = tables.session

    id: Mapped[int]
    arch: Mapped[str]
    num_cu: Mapped[int]
    backend: Mapped[str]
    library_version: Mapped[str | None]
    library_commit: Mapped[str | None]
    toolchain: Mapped[str | None]
    docker_image: Mapped[str | None]
    docker_digest: Mapped[str | None]
    label: Mapped[str | None]
    ticket: Mapped[str | None]
    runtime: Mapped[str | None]
    environment: Mapped[dict[str, Any] | None]
    user_platform: Mapped[dict[str, Any] | None]
    fingerprint: Mapped[str]
    created: Mapped[dt.datetime]
    history_rules: Mapped[dict[str, Any] | None]
    retired: Mapped[dt.datetime | None]
    retired_reason: Mapped[str | None]
    default_strategy: Mapped[dict[str, Any] | None]


class Machine(Base):
    __table__ = tables.machine

    id: Mapped[int]
    hostname: Mapped[str]
    port: Mapped[int]
    user: Mapped[str | None]
    arch: Mapped[str | None]
    num_cu: Mapped[int | None]
    gpus: Mapped[list[int] | None]
    available: Mapped[bool]
    key_file: Mapped[str | None]
    docker_settings: Mapped[dict[str, Any] | None]
    ipmi_address: Mapped[str | None]
    last_seen: Mapped[dt.datetime | None]
    user_platform: Mapped[dict[str, Any] | None]
    platform: Mapped[int | None]


class Tensor(Base):
    __table__ = tables.tensor

    id: Mapped[int]
    num_dims: Mapped[int]
    dim0: Mapped[int]
    dim1: Mapped[int]
    dim2: Mapped[int]
    dim3: Mapped[int]
    dim4: Mapped[int]
    layout: Mapped[str]
    data_type: Mapped[str]


class ConvConfig(Base):
    __table__ = tables.conv_config

    id: Mapped[int]
    fdb_key: Mapped[str]
    spatial_dim: Mapped[int]
    direction: Mapped[str]
    mode: Mapped[str]
    pad_mode: Mapped[str]
    group_count: Mapped[int]
    pad_d: Mapped[int]
    pad_h: Mapped[int]
    pad_w: Mapped[int]
    conv_stride_d: Mapped[int]
    conv_stride_h: Mapped[int]
    conv_stride_w: Mapped[int]
    dilation_d: Mapped[int]
    dilation_h: Mapped[int]
    dilation_w: Mapped[int]
    trans_output_pad_d: Mapped[int]
    trans_output_pad_h: Mapped[int]
    trans_output_pad_w: Mapped[int]
    bias: Mapped[int]
    input_tensor: Mapped[int]
    weight_tensor: Mapped[int]
    out_layout: Mapped[str]
    out_type: Mapped[str]
    in_cast: Mapped[str | None]
    wei_cast: Mapped[str | None]
    out_cast: Mapped[str | None]
    driver: Mapped[str]
    created: Mapped[dt.datetime]


class ConfigTag(Base):
    __table__ = tables.config_tag

    id: Mapped[int]
    config: Mapped[int]
    tag: Mapped[str]
    recurrent: Mapped[bool]


class BnConfig(Base):
    __table__ = tables.bn_config

    id: Mapped[int]
    bn_key: Mapped[str]
    data_type: Mapped[str]
    layout: Mapped[str]
    batchsize: Mapped[int]
    in_channels: Mapped[int]
    in_d: Mapped[int]
    in_h: Mapped[int]
    in_w: Mapped[int]
    mode: Mapped[int]
    direction: Mapped[str]
    save: Mapped[bool]
    run: Mapped[bool]
    alpha: Mapped[float]
    beta: Mapped[float]
    driver: Mapped[str]
    created: Mapped[dt.datetime]


class BnConfigTag(Base):
    __table__ = tables.bn_config_tag

    id: Mapped[int]
    config: Mapped[int]
    tag: Mapped[str]
    recurrent: Mapped[bool]


class Solver(Base):
    __table__ = tables.solver

    id: Mapped[int]
    backend: Mapped[str]
    name: Mapped[str]
    tunable: Mapped[bool]
    numeric_id: Mapped[int | None]
    algorithm: Mapped[str | None]
    valid: Mapped[bool]


class Job(Base):
    __table__ = tables.job

    id: Mapped[int]
    session: Mapped[int]
    config: Mapped[int | None]
    solver: Mapped[int | None]
    step: Mapped[JobStep]
    state: Mapped[JobState]
    label: Mapped[str | None]
    priority: Mapped[int]
    attempt: Mapped[int]
    retries: Mapped[int]
    lease_owner: Mapped[str | None]
    lease_expires: Mapped[dt.datetime | None]
    machine: Mapped[int | None]
    gpu: Mapped[int | None]
    result: Mapped[str | None]
    reason: Mapped[str | None]
    compile_start: Mapped[dt.datetime | None]
    compile_end: Mapped[dt.datetime | None]
    eval_start: Mapped[dt.datetime | None]
    eval_end: Mapped[dt.datetime | None]
    created: Mapped[dt.datetime]
    search_build: Mapped[int | None]
    search_run: Mapped[int | None]
    leases_lost: Mapped[int]
    tries_failed: Mapped[int]


class KernelCache(Base):
    __table__ = tables.kernel_cache

    id: Mapped[int]
    identity: Mapped[str]
    kernel_name: Mapped[str]
    kernel_args: Mapped[str]
    kernel_hash: Mapped[str]
    uncompressed_size: Mapped[int]
    blob: Mapped[bytes]
    created: Mapped[dt.datetime]


class JobKernel(Base):
    __table__ = tables.job_kernel

    id: Mapped[int]
    job: Mapped[int]
    kernel: Mapped[int]
    chosen: Mapped[bool]


class PerfDb(Base):
    __table__ = tables.perf_db

    id: Mapped[int]
    session: Mapped[int]
    config: Mapped[int]
    solver: Mapped[int]
    params: Mapped[str]
    job: Mapped[int | None]
    kernel: Mapped[int | None]
    created: Mapped[dt.datetime]


class FindDb(Base):
    __table__ = tables.find_db

    id: Mapped[int]
    session: Mapped[int]
    config: Mapped[int]
    solver: Mapped[int]
    time_ms: Mapped[float]
    workspace: Mapped[int]
    algorithm: Mapped[str]
    params: Mapped[str | None]
    job: Mapped[int | None]
    kernel: Mapped[int | None]
    created: Mapped[dt.datetime]
    import_order: Mapped[int | None]


class KeyOnlyRecord(Base):
    __table__ = tables.key_only_record

    id: Mapped[int]
    session: Mapped[int]
    fdb_key: Mapped[str]
    entries: Mapped[str]
    reason: Mapped[str]
    created: Mapped[dt.datetime]


class GoldenVersion(Base):
    __table__ = tables.golden_version

    version: Mapped[int]
    parent: Mapped[int | None]
    arch: Mapped[str]
    num_cu: Mapped[int]
    note: Mapped[str | None]
    created: Mapped[dt.datetime]


class Golden(Base):
    __table__ = tables.golden

    id: Mapped[int]
    golden_v: Mapped[int]
    session: Mapped[int]
    config: Mapped[int]
    solver: Mapped[int]
    fdb_key: Mapped[str]
    params: Mapped[str | None]
    time_ms: Mapped[float]
    workspace: Mapped[int]
    algorithm: Mapped[str]
    job: Mapped[int | None]


class GoldenKernel(Base):
    __table__ = tables.golden_kernel

    id: Mapped[int]
    golden: Mapped[int]
    kernel: Mapped[int]


class SolverApplicability(Base):
    __table__ = tables.solver_applicability

    id: Mapped[int]
    session: Mapped[int]
    config: Mapped[int]
    solver: Mapped[int]
    applicable: Mapped[bool]
    reason: Mapped[str | None]
    created: Mapped[dt.datetime]


class Platform(Base):
    __table__ = tables.platform

    id: Mapped[int]
    digest: Mapped[str]
    info: Mapped[dict[str, Any]]
    created: Mapped[dt.datetime]


class Measurement(Base):
    __table__ = tables.measurement

    id: Mapped[int]
    session: Mapped[int]
    job: Mapped[int | None]
    config: Mapped[int]
    solver: Mapped[int]
    params: Mapped[str]
    platform: Mapped[int]
    machine: Mapped[int | None]
    strategy: Mapped[str | None]
    time_ms: Mapped[float | None]
    valid: Mapped[bool]
    reason: Mapped[str | None]
    taken: Mapped[dt.datetime]


class MeasurementEffort(Base):
    __table__ = tables.measurement_effort

    session: Mapped[int]
    config: Mapped[int]
    solver: Mapped[int]
    platform: Mapped[int]
    day: Mapped[dt.date]
    strategy: Mapped[str]
    measurements: Mapped[int]
    valid: Mapped[int]
    budget: Mapped[int | None]


class Search(Base):
    __table__ = tables.search

    id: Mapped[int]
    session: Mapped[int]
    name: Mapped[str]
    space_file: Mapped[str]
    space_text: Mapped[str]
    base: Mapped[dict[str, Any]]
    searcher: Mapped[str | None]
    objective: Mapped[dict[str, Any]]
    budget: Mapped[int | None]
    parallelism: Mapped[int]
    backend: Mapped[str]
    spec: Mapped[dict[str, Any]]
    state: Mapped[str]
    reason: Mapped[str | None]
    created: Mapped[dt.datetime]
    finished: Mapped[dt.datetime | None]
    pruner: Mapped[dict[str, Any] | None]
    time_budget_s: Mapped[float | None]


class Artifact(Base):
    __table__ = tables.artifact

    id: Mapped[int]
    digest: Mapped[str]
    size: Mapped[int]
    blob: Mapped[bytes]
    created: Mapped[dt.datetime]


class SearchBuild(Base):
    __table__ = tables.search_build

    id: Mapped[int]
    search: Mapped[int]
    build_key: Mapped[str]
    params: Mapped[dict[str, Any]]
    artifact: Mapped[int | None]
    valid: Mapped[bool | None]
    reason: Mapped[str | None]
    created: Mapped[dt.datetime]
    finished: Mapped[dt.datetime | None]


class SearchRun(Base):
    __table__ = tables.search_run

    id: Mapped[int]
    search: Mapped[int]
    seq: Mapped[int]
    point: Mapped[dict[str, Any]]
    config: Mapped[dict[str, Any]]
    build: Mapped[int | None]
    stats: Mapped[dict[str, Any] | None]
    value: Mapped[float | None]
    valid: Mapped[bool | None]
    reason: Mapped[str | None]
    machine: Mapped[int | None]
    created: Mapped[dt.datetime]
    finished: Mapped[dt.datetime | None]
    landed: Mapped[int | None]
    intermediate: Mapped[list[list[float]] | None]
    pruned: Mapped[bool]
    lease_expires: Mapped[dt.datetime | None]


class SearchValidation(Base):
    __table__ = tables.search_validation

    id: Mapped[int]
    search: Mapped[int]
    seq: Mapped[int]
    inputs: Mapped[str]
    config: Mapped[dict[str, Any]]
    predicted: Mapped[dict[str, Any] | None]
    stats: Mapped[dict[str, Any] | None]
    reason: Mapped[str | None]
    kept: Mapped[bool]
    created: Mapped[dt.datetime]


class SearchTally(Base):
    __table__ = tables.search_tally

    search: Mapped[int]
    runs: Mapped[int]
    done: Mapped[int]
    valid: Mapped[int]
    pruned: Mapped[int]
