"""The MITuna compatibility views (migration 0004) and the queries docs/how-to/mituna.md shows.

Each query of that page's "Your queries" section is run both ways (MITuna's, on the
views, and Tuna's, on the tables) against seeded data, on SQLite and on MariaDB; both must
return what the seed says.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from sqlalchemy import inspect, text, update

from tests.support import docs
from tuna.db import Database
from tuna.db.enums import JobState, JobStep
from tuna.db.models import (
    ConfigTag,
    ConvConfig,
    FindDb,
    Golden,
    GoldenVersion,
    Job,
    Solver,
    SolverApplicability,
    Tensor,
    TuningSession,
)

VIEW_COLUMNS = {
    "conv_job": [
        "id", "insert_ts", "update_ts", "valid", "config", "session", "reason", "state",
        "retries", "result", "gpu_id", "machine_id", "eval_mid", "cache_loc", "compile_start",
        "compile_end", "eval_start", "eval_end", "solver", "fin_step",
    ],
    "conv_find_db": [
        "id", "insert_ts", "update_ts", "valid", "config", "solver", "session", "fdb_key",
        "params", "kernel_time", "workspace_sz", "alg_lib", "opencl", "kernel_group",
    ],
    "conv_golden": [
        "id", "insert_ts", "update_ts", "valid", "golden_miopen_v", "arch", "num_cu", "session",
        "solver", "config", "fdb_key", "params", "kernel_time", "workspace_sz", "alg_lib",
        "opencl", "kernel_group",
    ],
    "conv_config_tags": ["id", "valid", "config", "tag", "recurrent"],
    "bn_config_tags": ["id", "valid", "config", "tag", "recurrent"],
    "conv_solver_applicability": [
        "id", "insert_ts", "update_ts", "valid", "config", "solver", "session", "applicable",
    ],
    "conv_kernel_cache": [
        "id", "insert_ts", "update_ts", "valid", "kernel_group", "kernel_name", "kernel_args",
        "kernel_blob", "kernel_hash", "uncompressed_size",
    ],
    "mituna_session": [
        "id", "insert_ts", "update_ts", "valid", "arch", "num_cu", "rocm_v", "miopen_v",
        "reason", "ticket", "docker", "backend", "library_commit",
    ],
    "mituna_solver": [
        "id", "valid", "solver", "tunable", "config_type", "is_dynamic", "numeric_id", "backend",
        "algorithm",
    ],
    "mituna_conv_config": [
        "id", "insert_ts", "update_ts", "valid", "batchsize", "spatial_dim", "pad_d", "pad_h",
        "pad_w", "conv_stride_d", "conv_stride_h", "conv_stride_w", "dilation_d", "dilation_h",
        "dilation_w", "group_count", "mode", "pad_mode", "trans_output_pad_d",
        "trans_output_pad_h", "trans_output_pad_w", "direction", "input_tensor",
        "weight_tensor", "out_layout", "md5", "driver",
    ],
}  # fmt: skip

SOLVERS = ["ConvAsm1x1U", "ConvDirectNaiveConvFwd", "ConvHipImplicitGemmV4R1Fwd"]
# (session, config index, solver index, state, label, failure reason)
JOBS = [
    (3, 0, 0, "evaluated", "nightly", None),
    (3, 0, 1, "evaluated", "nightly", None),
    (3, 0, 2, "errored", "nightly", "cc failed (exit 1)"),
    (3, 1, 0, "errored", "nightly", "time limit 300 s"),
    (3, 1, 1, "errored", "retune", "cc failed (exit 1)"),
    (3, 1, 2, "new", "retune", None),
    (3, 2, 0, "compiled", None, None),
    (3, 2, 1, "not_applicable", "nightly", "filter is not 1x1"),
    (2, 0, 0, "errored", "nightly", "elsewhere"),
    (2, 1, 0, "evaluated", "nightly", None),
]
# (session, config index, solver index, time ms, workspace, algorithm)
FINDS = [
    (3, 0, 0, 0.5, 0, "miopenConvolutionFwdAlgoDirect"),
    (3, 0, 1, 1.25, 1024, "miopenConvolutionFwdAlgoDirect"),
    (3, 1, 2, 0.75, 4096, "miopenConvolutionFwdAlgoImplicitGEMM"),
    (2, 0, 0, 0.125, 0, "miopenConvolutionFwdAlgoDirect"),
]
CONFIGS = [  # (batch, fdb key, tags)
    (128, "1024-14-14-1x1-256-14-14-128-0x0-1x1-1x1-0-NCHW-FP32-F", ["resnet50"]),
    (32, "256-14-14-3x3-256-14-14-32-1x1-1x1-1x1-0-NCHW-FP32-F", ["resnet50", "smoke"]),
    (16, "64-56-56-1x1-64-56-56-16-0x0-1x1-1x1-0-NCHW-FP32-F", ["smoke"]),
]


def seed(db: Database) -> None:
    with db.session() as s:
        for n in (1, 2, 3):
            s.add(
                TuningSession(
                    arch="gfx90a",
                    num_cu=104,
                    backend="miopen",
                    library_version=f"3.{n}.0",
                    label=f"session {n}",
                    fingerprint=f"fp{n}",
                )
            )
        solvers = [
            Solver(backend="miopen", name=n, numeric_id=i + 10) for i, n in enumerate(SOLVERS)
        ]
        s.add_all(solvers)
        configs = []
        for batch, key, tags in CONFIGS:
            x = Tensor(
                num_dims=4, dim0=batch, dim1=1, dim2=14, dim3=14, layout="NCHW", data_type="FP32"
            )
            w = Tensor(
                num_dims=4, dim0=batch + 1, dim1=1, dim2=1, dim3=1, layout="NCHW", data_type="FP32"
            )
            s.add_all([x, w])
            s.flush()
            c = ConvConfig(
                fdb_key=key, spatial_dim=2, direction="F", pad_h=0, pad_w=0, conv_stride_h=1,
                conv_stride_w=1, dilation_h=1, dilation_w=1, input_tensor=x.id,
                weight_tensor=w.id, out_layout="NCHW", out_type="FP32",
                driver=f"./bin/MIOpenDriver conv -n {batch}",
            )  # fmt: skip
            s.add(c)
            s.flush()
            s.add_all(ConfigTag(config=c.id, tag=t) for t in tags)
            configs.append(c)
        s.flush()
        jobs = {}
        for session, ci, si, state, label, reason in JOBS:
            j = Job(
                session=session, config=configs[ci].id, solver=solvers[si].id,
                step=JobStep.FIND, state=JobState(state), label=label, reason=reason,
            )  # fmt: skip
            s.add(j)
            s.flush()
            jobs[session, ci, si] = j.id
        for session, ci, si, ms, ws, alg in FINDS:
            s.add(
                FindDb(
                    session=session,
                    config=configs[ci].id,
                    solver=solvers[si].id,
                    time_ms=ms,
                    workspace=ws,
                    algorithm=alg,
                    params="",
                    job=jobs.get((session, ci, si)),
                )  # fmt: skip
            )
        s.add(
            SolverApplicability(
                session=3, config=configs[0].id, solver=solvers[0].id, applicable=True
            )
        )
        s.add(GoldenVersion(version=1, arch="gfx90a", num_cu=104))
        s.flush()
        s.add(
            Golden(
                golden_v=1,
                session=3,
                config=configs[0].id,
                solver=solvers[0].id,
                fdb_key=CONFIGS[0][1],
                params="",
                time_ms=0.5,
                workspace=0,
                algorithm="miopenConvolutionFwdAlgoDirect",
            )  # fmt: skip
        )


def _session3(rows: list[tuple]) -> list[tuple]:
    return [r for r in rows if r[0] == 3]


def _counted(items: list) -> list[tuple]:
    return sorted((*k, n) if isinstance(k, tuple) else (k, n) for k, n in Counter(items).items())


EXPECTED = {
    "jobs by state for a session": _counted([j[3] for j in _session3(JOBS)]),
    "jobs of one label (MITuna's -l, its conv_job.reason) by state": _counted(
        [j[3] for j in _session3(JOBS) if j[4] == "nightly"]
    ),
    "failures by reason": _counted([j[5] for j in _session3(JOBS) if j[3] == "errored"]),
    "jobs per solver and state": _counted([(SOLVERS[j[2]], j[3]) for j in _session3(JOBS)]),
    "find results per config, fastest first": sorted(
        (CONFIGS[f[1]][1], SOLVERS[f[2]], f[3], f[4], f[5]) for f in _session3(FINDS)
    ),
    "the configs of a tag": [
        (i + 1, c[0], f"./bin/MIOpenDriver conv -n {c[0]}")
        for i, c in enumerate(CONFIGS)
        if "resnet50" in c[2]
    ],
    "sessions": [(n, "gfx90a", 104, f"3.{n}.0", f"session {n}") for n in (1, 2, 3)],
}


def documented_queries() -> dict[str, tuple[str, str]]:
    """``title -> (MITuna query, Tuna query)`` from docs/how-to/mituna.md's queries section."""
    section = docs.section("how-to/mituna.md", "## Your queries: compatibility views")
    block = re.search(r"```sql\n(.*?)```", section, re.S)
    assert block, "docs/how-to/mituna.md: no sql block under 'Your queries'"
    out = {}
    for para in block.group(1).strip().split("\n\n"):
        m = re.fullmatch(r"-- (.+)\n-- MITuna:\n(.+?;)\n-- Tuna:\n(.+?;)", para.strip(), re.S)
        assert m, f"mituna.md: cannot read this query pair:\n{para}"
        out[m.group(1)] = (m.group(2), m.group(3))
    return out


def test_every_documented_query_is_checked():
    assert set(documented_queries()) == set(EXPECTED)


def test_views_have_mitunas_columns(db):
    with db.engine.connect() as conn:
        assert set(inspect(conn).get_view_names()) == set(VIEW_COLUMNS)
        for view, columns in VIEW_COLUMNS.items():
            got = list(conn.execute(text(f"SELECT * FROM {view} WHERE 1 = 0")).keys())
            assert got == columns, view


def _rows(db: Database, sql: str) -> list[tuple]:
    with db.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql.rstrip(";")))]


@pytest.mark.parametrize("title", sorted(EXPECTED))
def test_documented_query_both_ways(db, title):
    seed(db)
    mituna, tuna = documented_queries()[title]
    expected = EXPECTED[title]
    assert expected, "the seed must give this query something to find"
    assert _rows(db, mituna) == expected, mituna
    assert _rows(db, tuna) == expected, tuna


def test_conv_job_columns_mean_what_they_meant_in_mituna(db):
    seed(db)
    rows = _rows(
        db,
        "SELECT reason, result, solver, fin_step, valid, gpu_id, machine_id FROM conv_job "
        "WHERE session = 3 AND state = 'errored' ORDER BY id",
    )
    find = "miopen_find_compile,miopen_find_eval"
    assert rows == [
        ("nightly", "cc failed (exit 1)", SOLVERS[2], find, 1, -1, -1),
        ("nightly", "time limit 300 s", SOLVERS[0], find, 1, -1, -1),
        ("retune", "cc failed (exit 1)", SOLVERS[1], find, 1, -1, -1),
    ]


def test_the_other_views_read_their_tables(db):
    seed(db)
    assert _rows(
        db, "SELECT golden_miopen_v, arch, num_cu, fdb_key, kernel_time FROM conv_golden"
    ) == [(1, "gfx90a", 104, CONFIGS[0][1], 0.5)]
    assert _rows(db, "SELECT session, solver, applicable FROM conv_solver_applicability") == [
        (3, 1, 1)
    ]
    assert _rows(db, "SELECT solver, numeric_id FROM mituna_solver ORDER BY id") == [
        (n, i + 10) for i, n in enumerate(SOLVERS)
    ]
    assert _rows(db, "SELECT md5, batchsize, pad_mode FROM mituna_conv_config ORDER BY id") == [
        (key, batch, "default") for batch, key, _ in CONFIGS
    ]
    assert _rows(db, "SELECT COUNT(*) FROM conv_config_tags WHERE tag = 'smoke'") == [(2,)]
    assert _rows(db, "SELECT ticket, reason FROM mituna_session WHERE id = 2") == [
        ("N/A", "session 2")
    ]


def test_opencl_is_1_for_the_rows_of_an_opencl_session(db):
    """issue #24: ``conv_find_db.opencl`` was 0 for every row, so MITuna's ``opencl = 0``
    counted an OpenCL session's rows (import_db of a *.OpenCL.fdb.txt) as HIP ones."""
    seed(db)
    with db.session() as s:
        s.execute(update(TuningSession).where(TuningSession.id == 3).values(runtime="OpenCL"))
    by_session = _rows(
        db, "SELECT session, opencl, COUNT(*) FROM conv_find_db GROUP BY session, opencl"
    )
    assert {(sid, opencl) for sid, opencl, _n in by_session} == {(2, 0), (3, 1)}
    assert _rows(db, "SELECT session, opencl FROM conv_golden") == [(3, 1)]
    hip = _rows(db, "SELECT COUNT(*) FROM conv_find_db WHERE opencl = 0")[0][0]
    assert hip == sum(n for sid, _o, n in by_session if sid != 3) > 0
