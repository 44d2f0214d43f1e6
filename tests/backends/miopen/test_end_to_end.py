"""The whole miopen path on a real database: fin's solvers and applicability stored, jobs
loaded from them, compile -> eval by the worker loop through fin's command line, and the
perf / find / kernel db exported. fin is the FAKE fin replaying the real recording, so the
numbers are the recorded ones (ConvAsm1x1UV2: 2.8596839904785156 ms, params
32,1,16,2,1,1,2,4,4,1, kernel conv1x1u_stride2.s with md5 9afa6cbaa2e2c982366ad27e15620ee5).

``db`` runs it on SQLite and on MariaDB (the MySQL tier).
"""

from __future__ import annotations

import base64
import hashlib
import sqlite3

from sqlalchemy import func, select

from tests.backends.miopen.recorded import FAKE_FIN, real_output
from tuna.catalog.importer import import_configs, read_lines
from tuna.db.enums import JobState
from tuna.db.models import FindDb, Job, JobKernel, PerfDb
from tuna.jobs.load import load_jobs
from tuna.results.dbfiles import read_kern_db
from tuna.results.export import ExportSpec, export_db
from tuna.sessions import SessionSpec, create_session, update_solvers
from tuna.sessions.applicability import update_applicability
from tuna.worker import run_worker

LINES = """\
./bin/MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 2
./bin/MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 1
./bin/MIOpenDriver conv -n 64 -c 1024 -H 14 -W 14 -k 2048 -y 1 -x 1 -u 2 -v 2 -F 2
./bin/MIOpenDriver conv -n 4 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1
"""
RECORDED_KEY = "2048-7-7-1x1-1024-14-14-128-0x0-2x2-1x1-0-NCHW-FP32-B"
FWD_KEY = "1024-14-14-1x1-2048-7-7-128-0x0-2x2-1x1-0-NCHW-FP32-F"
HALF_KEY = "2048-7-7-1x1-1024-14-14-64-0x0-2x2-1x1-0-NCHW-FP32-B"
KERNEL_MD5 = "9afa6cbaa2e2c982366ad27e15620ee5"
PARAMS = "32,1,16,2,1,1,2,4,4,1"


def states(db, session_id):
    with db.session() as s:
        q = select(Job.state, func.count()).where(Job.session == session_id).group_by(Job.state)
        return dict(s.execute(q).all())


def work(db, session_id):
    for phase in ("compile", "eval"):
        report = run_worker(
            db, session_id, phase, burst=True, handle_signals=False, idle_sleep=0.01,
            claim_batch=2, record_interval=0,
        )  # fmt: skip
        assert (report.errored, report.retried, report.not_applicable) == (0, 0, 0), report
    return report


def test_compile_eval_export_through_fin(db, tmp_path):
    import_configs(db, read_lines(LINES), tag="net")
    env = {"FIN_PATH": FAKE_FIN, "FIN_SCRATCH_DIR": str(tmp_path / "scratch")}
    sid = create_session(
        db,
        SessionSpec(arch="gfx906", num_cu=60, backend="miopen", environment=env,
                    library_commit="rocm-6.2.4"),
    ).id  # fmt: skip
    assert update_solvers(db, sid).reported == 104
    applicability = update_applicability(db, sid, tag="net")
    assert (applicability.answered, applicability.applicable) == (4, 3)

    find = load_jobs(db, sid, step="find", tag="net")
    assert find.inserted == 3 and find.by_solver == {"ConvAsm1x1UV2": 3}  # the 3x3 is not
    work(db, sid)
    assert states(db, sid) == {JobState.EVALUATED: 3}
    with db.session() as s:
        rows = s.execute(select(FindDb.time_ms, FindDb.workspace, FindDb.algorithm, FindDb.params))
        found = sorted(rows.all())
        assert s.scalar(select(func.count()).select_from(JobKernel)) == 3
    assert found == sorted(
        [
            (2.8596839904785156 / 2, 0, "miopenConvolutionBwdDataAlgoDirect", PARAMS),
            (2.8596839904785156, 0, "miopenConvolutionBwdDataAlgoDirect", PARAMS),
            (2.8596839904785156, 0, "miopenConvolutionFwdAlgoDirect", PARAMS),
        ]
    )

    out = tmp_path / "out"
    fdb = export_db(db, ExportSpec(kind="find", session=sid, out_dir=out))
    assert fdb.basename == "gfx906_60"
    assert (out / "gfx906_60.HIP.fdb.txt").read_text().splitlines() == [
        f"{FWD_KEY}=ConvAsm1x1UV2:2.85968,0,miopenConvolutionFwdAlgoDirect",
        f"{RECORDED_KEY}=ConvAsm1x1UV2:2.85968,0,miopenConvolutionBwdDataAlgoDirect",
        f"{HALF_KEY}=ConvAsm1x1UV2:1.42984,0,miopenConvolutionBwdDataAlgoDirect",
    ]  # keys sorted

    with db.session() as s:  # each find row links the kernel its evaluate phase named
        assert s.scalar(select(func.count(func.distinct(FindDb.kernel)))) == 1
        assert s.scalar(select(func.count()).where(FindDb.kernel.is_(None))) == 0
    kern = export_db(db, ExportSpec(kind="kern", session=sid, out_dir=out))
    assert (kern.counts["winners_with_chosen_kernels"], kern.counts["kernels"]) == (3, 1)
    (row,) = list(read_kern_db(out / "gfx906_60.kdb"))  # one code object, used by all three
    # The row MIOpen stores for fin's kernel object (reference §5), every column exact: the
    # file name plus ".o", fin's options as recorded (leading space and all) plus " -mcpu=",
    # and MIOpen's own bzip2 blob.
    recorded = real_output()[1]["input"]["miopen_find_compile_result"][0]["kernel_objects"][0]
    assert (row.kernel_name, row.kernel_args, row.blob, row.kernel_hash, row.uncompressed_size) == (
        recorded["kernel_file"] + ".o",
        recorded["comp_options"] + " -mcpu=gfx906",
        base64.b64decode(recorded["blob"]),
        recorded["md5_sum"],
        recorded["uncompressed_size"],
    )
    assert row.kernel_name == "conv1x1u_stride2.s.o" and row.kernel_hash == KERNEL_MD5
    assert row.kernel_args.startswith(" -Wa,-defsym,stride_h=1 -Wa,-defsym,stride_w=1 ")
    assert hashlib.md5(row.code()).hexdigest() == KERNEL_MD5 and row.problem() is None

    perf = load_jobs(db, sid, step="perf", tag="net", solvers=["ConvAsm1x1UV2"])
    assert perf.inserted == 3
    work(db, sid)
    assert states(db, sid) == {JobState.EVALUATED: 6}
    with db.session() as s:
        assert set(s.scalars(select(PerfDb.params))) == {PARAMS}
    export_db(db, ExportSpec(kind="perf", session=sid, out_dir=out))
    text = (out / "gfx906_60.db.txt").read_text().splitlines()
    assert len(text) == 3 and all(line.endswith(f"=ConvAsm1x1UV2:{PARAMS}") for line in text)
    with sqlite3.connect(out / "gfx906_60.db") as conn:
        assert conn.execute("SELECT DISTINCT solver, params FROM perf_db").fetchall() == [
            ("ConvAsm1x1UV2", PARAMS)
        ]
    assert list((tmp_path / "scratch").iterdir()) == []  # every fin run succeeded and cleaned up
