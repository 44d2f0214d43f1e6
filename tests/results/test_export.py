"""export_db: ``tuna/results/export.py`` (and the checks of ``validate.py``), on both databases."""

from __future__ import annotations

import base64
import bz2
import hashlib
import json
import sqlite3
from dataclasses import replace

import pytest
from sqlalchemy import delete, insert, select, update

from tests.support.data import MIOPEN_DATA
from tests.support.seed import make_session
from tuna.backends import CompileOutcome, EvalOutcome, FindResult, KernelBinary, PerfResult
from tuna.db import Database
from tuna.db.models import FindDb, GoldenKernel, KernelCache, Solver
from tuna.errors import NotFoundError, TunaError
from tuna.jobs import JobFilter, Phase, claim_jobs, record_outcome, requeue_jobs
from tuna.jobs.load import load_jobs
from tuna.problems import parse_find_db_key, perf_db_columns
from tuna.results import export
from tuna.results.export import ExportSpec, export_db
from tuna.results.formats import (
    PERF_LOOKUP,
    md5_hex,
)
from tuna.results.golden import update_golden
from tuna.results.validate import ExportRefusedError

from .seed import (
    K1,
    K3,
    ONE_BY_ONE,
    THREE_BY_THREE,
    add_configs,
    add_find,
    add_perf,
    run_noop,
)

FIND_ROWS = [
    (K1, "NoopDirect", 0.5, 0, "direct"),
    (K1, "NoopGemm1x1", 0.25, 1024, "gemm"),
    (K1, "NoopTunable", 0.25, 0, "implicit_gemm"),
    (K3, "NoopDirect", 1.5, 0, "direct"),
    (K3, "NoopWinograd3x3", 0.75, 4096, "winograd"),
]
FIND_FILE = (
    f"{K1}=NoopGemm1x1:0.25,1024,gemm;NoopTunable:0.25,0,implicit_gemm;NoopDirect:0.5,0,direct\n"
    f"{K3}=NoopWinograd3x3:0.75,4096,winograd;NoopDirect:1.5,0,direct\n"
)
PK1 = "2x64x56x56x1x1x1x1x64x16x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP32xF"
PK3 = "2x64x56x56x1x3x3x1x64x16x1x1x0x1x1x0x1x1x0x0x1xNCHWxFP32xF"


@pytest.fixture
def session(db: Database) -> int:
    add_configs(db, [ONE_BY_ONE, THREE_BY_THREE])
    sid = make_session(
        db,
        library_version="3.3.0",
        library_commit="2d1fd997",
        docker_image="rocm/miopen:6.3",
        docker_digest="sha256:abc",
        toolchain="rocm-6.3.0",
        environment={"MIOPEN_DEBUG_IMPLICIT_GEMM_FIND_ALL_SOLUTIONS": "1"},
    )
    add_find(db, sid, FIND_ROWS)
    add_perf(db, sid, [(K1, "NoopTunable", "2x16"), (K3, "NoopTunable", "4x8")])
    return sid


def test_find_db_is_miopens_text_format_with_a_manifest(db, session, tmp_path):
    report = export_db(db, ExportSpec(kind="find", session=session, out_dir=tmp_path))
    path = tmp_path / "gfx90a68.HIP.fdb.txt"
    assert path.read_text() == FIND_FILE
    assert (report.rows, report.keys, [f.path for f in report.files]) == (5, 2, [path])
    manifest = json.loads((tmp_path / "gfx90a68.HIP.fdb.txt.manifest.json").read_text())
    (sess,) = manifest["sessions"]
    assert {k: sess[k] for k in ("id", "backend", "library_version", "library_commit")} == {
        "id": session,
        "backend": "noop",
        "library_version": "3.3.0",
        "library_commit": "2d1fd997",
    }
    assert (sess["docker_image"], sess["docker_digest"], sess["toolchain"]) == (
        "rocm/miopen:6.3",
        "sha256:abc",
        "rocm-6.3.0",
    )
    assert sess["environment"] == {"MIOPEN_DEBUG_IMPLICIT_GEMM_FIND_ALL_SOLUTIONS": "1"}
    assert len(sess["fingerprint"]) == 64
    assert manifest["files"] == [
        {
            "name": "gfx90a68.HIP.fdb.txt",
            "sha256": hashlib.sha256(FIND_FILE.encode()).hexdigest(),
            "bytes": len(FIND_FILE),
            "records": 2,
            "entries": 5,
        }
    ]
    assert manifest["counts"] == {"rows_checked": 5, "keys": 2, "entries": 5}
    assert (manifest["arch"], manifest["num_cu"], manifest["source"]) == (
        "gfx90a",
        104,
        {"session": session},
    )
    assert manifest["tuna_version"] and manifest["created"]


def test_find_db_keeps_the_four_fastest_ties_by_name(db, tmp_path):
    add_configs(db, [ONE_BY_ONE])
    sid = make_session(db, arch="gfx906", num_cu=60, backend="results-wide")
    times = {"WideF": 0.3, "WideE": 0.1, "WideD": 0.2, "WideC": 0.2, "WideB": 0.9, "WideA": 0.5}
    add_find(db, sid, [(K1, s, t, 0, "direct") for s, t in times.items()], "results-wide")
    export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path))
    assert (tmp_path / "gfx906_60.HIP.fdb.txt").read_text() == (
        f"{K1}=WideE:0.1,0,direct;WideC:0.2,0,direct;WideD:0.2,0,direct;WideF:0.3,0,direct\n"
    )


def test_perf_db_as_sqlite_and_text(db, session, tmp_path):
    report = export_db(
        db, ExportSpec(kind="perf", session=session, out_dir=tmp_path, filename="rel")
    )
    assert [f.path.name for f in report.files] == ["rel.db", "rel.db.txt"]
    assert (
        tmp_path / "rel.db.txt"
    ).read_text() == f"{PK1}=NoopTunable:2x16\n{PK3}=NoopTunable:4x8\n"
    with sqlite3.connect(tmp_path / "rel.db") as conn:
        columns = perf_db_columns(parse_find_db_key(K3))
        found = conn.execute(PERF_LOOKUP, list(columns.values())).fetchall()
    assert found == [("NoopTunable", "4x8")]
    assert (tmp_path / "rel.db.manifest.json").is_file()


def test_kernel_db_of_a_real_run(db, tmp_path):
    sid = run_noop(db, [ONE_BY_ONE, THREE_BY_THREE])
    with db.session() as s:
        assert None not in set(s.scalars(select(FindDb.kernel)))  # the backend named them
    report = export_db(db, ExportSpec(kind="kern", session=sid, out_dir=tmp_path))
    assert report.counts["kernels"] >= 1
    assert (
        report.counts["winners_with_chosen_kernels"],
        report.counts["winners_with_all_job_kernels"],
        report.counts["winners_without_kernels"],
    ) == (2, 0, 0)
    with sqlite3.connect(tmp_path / "gfx90a68.kdb") as conn:
        rows = conn.execute(
            "SELECT kernel_name, kernel_args, kernel_blob, kernel_hash, uncompressed_size "
            "FROM kern_db"
        ).fetchall()
    assert len(rows) == report.counts["kernels"]
    for name, args, blob, digest, size in rows:
        code = bz2.decompress(blob) if size else blob  # tiny noop kernels do not compress
        assert md5_hex(code) == digest and size in (0, len(code))
        assert name.startswith("noop_Noop") and name.endswith(".o")
        assert args.endswith(" -mcpu=gfx90a")
        assert code.startswith(b"noop kernel ")
    update_golden(db, 1, sid)
    export_db(db, ExportSpec(kind="kern", golden_v=1, arch="gfx90a", out_dir=tmp_path / "g"))
    assert (tmp_path / "g" / "gfx90a68.kdb").read_bytes() == (
        tmp_path / "gfx90a68.kdb"
    ).read_bytes()


# The kernel object of the real fin recording (ConvAsm1x1UV2, gfx906), as fin wrote it.
RECORDED = json.loads((MIOPEN_DATA / "fin_output_find_eval.json").read_text())[1]["input"][
    "miopen_find_compile_result"
][0]["kernel_objects"][0]
RECORDED_CODE = bz2.decompress(base64.b64decode(RECORDED["blob"]))
# The kern_db row MIOpen stores for it on gfx906 (reference §5: LoadProgram appends
# " -mcpu=<arch>" to the options, SaveBinary ".o" to the file name): every column exact.
RECORDED_ROW = (
    "conv1x1u_stride2.s.o",
    RECORDED["comp_options"] + " -mcpu=gfx906",
    base64.b64decode(RECORDED["blob"]),
    "9afa6cbaa2e2c982366ad27e15620ee5",
    145576,
)


def candidates() -> tuple[KernelBinary, ...]:
    """A tunable job's compiled candidates: the recorded kernel and two other perf configs."""
    recorded = KernelBinary(RECORDED["kernel_file"], RECORDED["comp_options"], RECORDED_CODE)
    others = tuple(
        KernelBinary(recorded.name, recorded.args.replace("k_mult=16", f"k_mult={k}"),
                     RECORDED_CODE + bytes([k]))
        for k in (4, 8)
    )  # fmt: skip
    return (recorded, *others)


def tuned(db: Database, compiled: tuple[KernelBinary, ...], chosen: tuple[KernelBinary, ...]):
    """A gfx906 session whose one perf job compiled ``compiled`` and whose evaluate phase
    named ``chosen`` as the solution's kernels, recorded as a worker records them."""
    add_configs(db, [ONE_BY_ONE])
    sid = make_session(db, arch="gfx906", num_cu=60)
    assert load_jobs(db, sid, step="perf", tag="net", solvers=["NoopTunable"]).inserted == 1
    [job] = claim_jobs(db, sid, Phase.COMPILE, owner="t")
    record_outcome(db, "t", job, CompileOutcome(kernels=compiled, payload="{}"))
    [job] = claim_jobs(db, sid, Phase.EVAL, owner="t")
    find = FindResult(0.25, 0, "implicit_gemm", "2x16")
    record_outcome(db, "t", job, EvalOutcome(perf=PerfResult("2x16"), find=find, kernels=chosen))
    return sid


def kern_db_rows(path):
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT kernel_name, kernel_args, kernel_blob, kernel_hash, uncompressed_size "
            "FROM kern_db ORDER BY kernel_args"
        ).fetchall()


def test_the_kdb_holds_the_winning_kernel_byte_for_byte_as_miopen_stores_it(db, tmp_path):
    recorded, *_others = compiled = candidates()
    sid = tuned(db, compiled, chosen=(recorded,))
    report = export_db(db, ExportSpec(kind="kern", session=sid, out_dir=tmp_path))
    assert kern_db_rows(tmp_path / "gfx906_60.kdb") == [RECORDED_ROW]
    assert RECORDED_ROW[1].startswith(" -Wa,-defsym,stride_h=1 ")  # fin's leading space kept
    counts = {"keys": 1, "kernels": 1, "winners_with_chosen_kernels": 1,
              "winners_with_all_job_kernels": 0, "winners_without_kernels": 0}  # fmt: skip
    assert report.counts == {"rows_checked": 1, **counts}
    manifest = json.loads((tmp_path / "gfx906_60.kdb.manifest.json").read_text())
    assert manifest["counts"] == report.counts


def test_a_solution_of_two_kernels_exports_exactly_those_two(db, tmp_path):
    recorded, k4, _k8 = compiled = candidates()
    sid = tuned(db, compiled, chosen=(recorded, k4))
    report = export_db(db, ExportSpec(kind="kern", session=sid, out_dir=tmp_path))
    rows = kern_db_rows(tmp_path / "gfx906_60.kdb")
    assert [r[1] for r in rows] == sorted(k.args + " -mcpu=gfx906" for k in (recorded, k4))
    assert RECORDED_ROW in rows
    counts = {"keys": 1, "kernels": 2, "winners_with_chosen_kernels": 1,
              "winners_with_all_job_kernels": 0, "winners_without_kernels": 0}  # fmt: skip
    assert report.counts == {"rows_checked": 1, **counts}


@pytest.mark.parametrize("chosen", ["unnamed", "not compiled"])
def test_without_a_named_kernel_the_kdb_takes_all_the_jobs_kernels_and_says_so(
    db, tmp_path, chosen, caplog
):
    compiled = candidates()
    stranger = KernelBinary("conv3x3.s", " -DX", b"\x7fELF 3x3")
    sid = tuned(db, compiled, chosen=() if chosen == "unnamed" else (compiled[0], stranger))
    report = export_db(db, ExportSpec(kind="kern", session=sid, out_dir=tmp_path))
    rows = kern_db_rows(tmp_path / "gfx906_60.kdb")
    assert RECORDED_ROW in rows and len(rows) == 3
    assert sorted(r[1] for r in rows) == sorted(k.args + " -mcpu=gfx906" for k in compiled)
    assert (
        report.counts["winners_with_chosen_kernels"],
        report.counts["winners_with_all_job_kernels"],
    ) == (0, 1)
    manifest = json.loads((tmp_path / "gfx906_60.kdb.manifest.json").read_text())
    assert manifest["counts"]["winners_with_all_job_kernels"] == 1
    assert "did not name the fastest solver's kernel" in caplog.text


def retune(db: Database, sid: int, chosen: tuple[KernelBinary, ...]) -> None:
    """Evaluate the session's job again (``tuna jobs requeue``), choosing ``chosen``."""
    assert requeue_jobs(db, JobFilter(session=sid)) == 1
    [job] = claim_jobs(db, sid, Phase.EVAL, owner="t")
    find = FindResult(0.2, 0, "implicit_gemm", "4x16")
    record_outcome(db, "t", job, EvalOutcome(perf=PerfResult("4x16"), find=find, kernels=chosen))


def test_a_golden_kdb_keeps_the_kernels_frozen_with_it_after_re_tuning(db, tmp_path):
    recorded, k4, k8 = compiled = candidates()
    sid = tuned(db, compiled, chosen=(recorded,))
    update_golden(db, 1, sid)
    retune(db, sid, chosen=(k4, k8))  # the same job now chooses a two-kernel solution
    export_db(db, ExportSpec(kind="kern", session=sid, out_dir=tmp_path / "s"))
    now = sorted(k.args + " -mcpu=gfx906" for k in (k4, k8))
    assert [r[1] for r in kern_db_rows(tmp_path / "s" / "gfx906_60.kdb")] == now
    golden = ExportSpec(kind="kern", golden_v=1, arch="gfx906", out_dir=tmp_path / "g")
    report = export_db(db, golden)
    assert kern_db_rows(tmp_path / "g" / "gfx906_60.kdb") == [RECORDED_ROW]
    assert report.counts["winners_with_frozen_kernels"] == 1
    # A child version carries the row, its job and its frozen kernels forward.
    add_configs(db, [THREE_BY_THREE])
    other = make_session(db, arch="gfx906", num_cu=60)
    add_find(db, other, [(K3, "NoopWinograd3x3", 0.75, 4096, "winograd")])  # no job, no kernel
    update_golden(db, 2, other, base=1)
    report = export_db(db, replace(golden, golden_v=2, out_dir=tmp_path))
    assert kern_db_rows(tmp_path / "gfx906_60.kdb") == [RECORDED_ROW]
    assert (
        report.counts["keys"],
        report.counts["winners_with_frozen_kernels"],
        report.counts["winners_without_kernels"],
    ) == (2, 1, 1)


def test_a_golden_row_without_frozen_kernels_takes_its_jobs_kernels(db, tmp_path, caplog):
    recorded, k4, _k8 = compiled = candidates()
    sid = tuned(db, compiled, chosen=(recorded, k4))
    update_golden(db, 1, sid)
    with db.session() as s:  # as a row frozen before golden_kernel existed
        s.execute(delete(GoldenKernel))
    spec = ExportSpec(kind="kern", golden_v=1, arch="gfx906", out_dir=tmp_path)
    report = export_db(db, spec)
    assert [r[1] for r in kern_db_rows(tmp_path / "gfx906_60.kdb")] == sorted(
        k.args + " -mcpu=gfx906" for k in (recorded, k4)
    )
    assert (
        report.counts["winners_with_chosen_kernels"],
        report.counts["winners_with_frozen_kernels"],
    ) == (1, 0)
    assert "1 of 1 key(s) have no kernels frozen with the version" in caplog.text


def test_every_kind_of_bad_row_is_listed_and_nothing_written(db, session, tmp_path):
    with db.session() as s:
        s.execute(insert(Solver).values(backend="noop", name="GemmBwd1x1_0_1"))
    add_find(db, session, [(K3, "GemmBwd1x1_0_1", 0.1, 0, "gemm")])
    add_find(db, session, [(K3, "NoopGemm1x1", 0.2, 0, "gemm")])  # 1x1 only: not applicable
    add_find(db, session, [(K1, "NoopWinograd3x3", -1.0, -1, "winograd")])
    out = tmp_path / "out"
    with pytest.raises(ExportRefusedError) as e:
        export_db(db, ExportSpec(kind="find", session=session, out_dir=out))
    assert [str(f) for f in e.value.failures] == [
        f"{K1} NoopWinograd3x3: not applicable for backend 'noop': filter is not 3x3 with stride 1",
        f"{K1} NoopWinograd3x3: time -1.0 ms is not a time",
        f"{K1} NoopWinograd3x3: workspace -1 is negative",
        f"{K3} GemmBwd1x1_0_1: solver unknown to backend 'noop' (session {session})",
        f"{K3} NoopGemm1x1: not applicable for backend 'noop': filter is not 1x1",
    ]
    assert str(e.value).startswith(
        f"find db of session {session}: 5 row(s) failed the export checks; nothing was written:"
    )
    assert not out.exists()


def test_an_algorithm_outside_printable_ascii_refuses_the_export_not_a_traceback(db, tmp_path):
    """A row stored with a non-ASCII algorithm (issue #24: an older import_db accepted one)
    crashed export_db in write_text_lines with a UnicodeEncodeError."""
    add_configs(db, [ONE_BY_ONE, THREE_BY_THREE])
    session = make_session(db)
    add_find(db, session, [(K1, "NoopDirect", 0.1, 0, "miopenConvolutionFwdAlgoDirecté")])
    add_find(db, session, [(K3, "NoopDirect", 0.1, 0, "miopenConvolution\x01FwdAlgoDirect")])
    out = tmp_path / "out"
    with pytest.raises(ExportRefusedError) as e:
        export_db(db, ExportSpec(kind="find", session=session, out_dir=out))
    assert [str(f) for f in e.value.failures] == [
        f"{K1} NoopDirect: algorithm 'miopenConvolutionFwdAlgoDirecté' holds 'é', a character "
        "outside printable ASCII",
        f"{K3} NoopDirect: algorithm 'miopenConvolution\\x01FwdAlgoDirect' holds '\\x01', a "
        "character outside printable ASCII",
    ]
    assert not out.exists()


def test_a_corrupt_kernel_refuses_the_kernel_db(db, tmp_path):
    sid = run_noop(db, [ONE_BY_ONE])
    with db.session() as s:
        s.execute(update(KernelCache).values(kernel_hash="0" * 32))
    out = tmp_path / "out"
    with pytest.raises(ExportRefusedError, match=r"kernel \d+ \(noop_Noop\w+\): md5 of the code"):
        export_db(db, ExportSpec(kind="kern", session=sid, out_dir=out))
    assert list(out.iterdir()) == []


def test_config_tag_and_a_cpu_arch(db, tmp_path):
    add_configs(db, [ONE_BY_ONE], tag="a")
    add_configs(db, [THREE_BY_THREE], tag="b")
    sid = make_session(db, arch="x86_64-avx2", num_cu=16)
    add_find(db, sid, FIND_ROWS)
    export_db(db, ExportSpec(kind="find", session=sid, config_tag="b", out_dir=tmp_path))
    assert (tmp_path / "x86_64-avx2_16.fdb.txt").read_text() == FIND_FILE.splitlines(True)[1]
    with pytest.raises(NotFoundError, match="has no find results for configs tagged 'c'"):
        export_db(db, ExportSpec(kind="find", session=sid, config_tag="c", out_dir=tmp_path))


def test_golden_version_exports_for_its_arch_only(db, session, tmp_path):
    update_golden(db, 1, session)
    export_db(db, ExportSpec(kind="find", golden_v=1, arch="gfx90a", num_cu=104, out_dir=tmp_path))
    assert (tmp_path / "gfx90a68.HIP.fdb.txt").read_text() == FIND_FILE
    manifest = json.loads((tmp_path / "gfx90a68.HIP.fdb.txt.manifest.json").read_text())
    assert manifest["source"] == {"golden_version": 1, "parent": None}
    assert [s["id"] for s in manifest["sessions"]] == [session]
    # A golden version holds find rows: the tuned params of the solvers in them.
    export_db(db, ExportSpec(kind="perf", golden_v=1, arch="gfx90a", out_dir=tmp_path))
    assert (tmp_path / "gfx90a68.db.txt").read_text() == f"{PK1}=NoopTunable:2x16\n"
    with pytest.raises(TunaError, match="holds gfx90a 104 CUs, not gfx942"):
        export_db(db, ExportSpec(kind="find", golden_v=1, arch="gfx942", out_dir=tmp_path))
    # The version holds one arch: -a is a check, not a requirement.
    alone = tmp_path / "no-arch"
    alone.mkdir()
    export_db(db, ExportSpec(kind="find", golden_v=1, out_dir=alone))
    assert (alone / "gfx90a68.HIP.fdb.txt").read_text() == FIND_FILE


def test_missing_sources_are_clear_errors(db, tmp_path):
    with pytest.raises(NotFoundError, match="session 7 does not exist"):
        export_db(db, ExportSpec(kind="find", session=7, out_dir=tmp_path))
    with pytest.raises(NotFoundError, match="golden version 7 does not exist"):
        export_db(db, ExportSpec(kind="find", golden_v=7, arch="gfx90a", out_dir=tmp_path))
    sid = make_session(db)
    with pytest.raises(NotFoundError, match=f"session {sid} has no find results"):
        export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path))
    with pytest.raises(TunaError, match="no directory"):
        export_db(db, ExportSpec(kind="find", session=sid, filename="a/b", out_dir=tmp_path))


def test_keys_checked_in_worker_processes_give_the_same_result(lite, tmp_path, monkeypatch):
    add_configs(lite, [ONE_BY_ONE, THREE_BY_THREE])
    sid = make_session(lite)
    add_find(lite, sid, FIND_ROWS)
    monkeypatch.setattr(export, "PARALLEL_MIN_CONFIGS", 1)
    monkeypatch.setattr(export, "_KEY_CHUNK", 1)
    export_db(lite, ExportSpec(kind="find", session=sid, out_dir=tmp_path))
    assert (tmp_path / "gfx90a68.HIP.fdb.txt").read_text() == FIND_FILE
    add_find(lite, sid, [(K1, "NoopWinograd3x3", 0.1, 0, "winograd")])
    with pytest.raises(ExportRefusedError) as e:
        export_db(lite, ExportSpec(kind="find", session=sid, out_dir=tmp_path / "x"))
    assert [str(f) for f in e.value.failures] == [
        f"{K1} NoopWinograd3x3: not applicable for backend 'noop': filter is not 3x3 with stride 1"
    ]


def test_solvers_the_library_build_reported_are_exported_even_if_tuna_does_not_know_them(
    db, tmp_path
):
    """miopen's solver table comes from fin (`tuna solvers update`): a solver a newer MIOpen
    has and Tuna's own catalogue lacks is still MIOpen's; a retired one is not."""
    add_configs(db, [ONE_BY_ONE])
    sid = make_session(db, arch="gfx906", num_cu=60, backend="miopen")
    with db.session() as s:
        s.execute(insert(Solver).values(backend="miopen", name="ConvFromANewerMIOpen"))
        s.execute(insert(Solver).values(backend="miopen", name="ConvRetired", valid=False))
    add_find(db, sid, [(K1, "ConvFromANewerMIOpen", 0.5, 0, "miopenConvolutionFwdAlgoDirect")],
             backend="miopen")  # fmt: skip
    report = export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path / "ok"))
    assert report.counts["keys"] == 1
    add_find(db, sid, [(K1, "ConvRetired", 0.4, 0, "miopenConvolutionFwdAlgoDirect")],
             backend="miopen")  # fmt: skip
    with pytest.raises(ExportRefusedError) as e:
        export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path / "no"))
    assert [str(f) for f in e.value.failures] == [
        f"{K1} ConvRetired: solver unknown to backend 'miopen' (session {sid})"
    ]
