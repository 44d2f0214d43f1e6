"""MIOpen's db file formats: ``tuna/results/formats.py`` (no database)."""

from __future__ import annotations

import base64
import bz2
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.data import MIOPEN_DATA
from tuna.backends.miopen.solvers import SOLVERS as MIOPEN_SOLVERS
from tuna.errors import DbKeyError
from tuna.results.dbfiles import (
    KernDbWriter,
    file_format,
    read_kern_db,
    read_perf_sqlite,
    write_perf_sqlite,
    write_text_lines,
)
from tuna.results.formats import (
    PERF_DB_DDL,
    PERF_LOOKUP,
    DbFileError,
    FindEntry,
    KdbRow,
    by_time,
    db_basename,
    detect_format,
    export_file_names,
    find_db_line,
    kdb_name_args,
    md5_hex,
    pack_kdb_blob,
    parse_find_entry,
    perf_db_line,
    read_find_db,
    read_perf_db_text,
    unpack_kdb_blob,
)
from tuna.results.formats import (
    text_field_problem as field_problem,
)

# Reference §4.2 and §3.2: real lines of shipped dbs.
REAL_FIND = (
    "1000-13-13-1x1-512-13-13-16-0x0-1x1-1x1-0-NCHW-FP16-B="
    "ConvAsmImplicitGemmGTCDynamicBwdXdlopsNHWC:0.051639,13714688,"
    "miopenConvolutionBwdDataAlgoImplicitGEMM;GemmBwd1x1_stride1:0.059578,0,"
    "miopenConvolutionBwdDataAlgoGEMM;ConvBinWinogradRxSf3x2:0.139621,0,"
    "miopenConvolutionBwdDataAlgoWinograd;ConvBinWinogradRxSf2x3g1:0.322663,0,"
    "miopenConvolutionBwdDataAlgoWinograd"
)
REAL_PERF = (
    "2x1000x13x13x1x1x1x1x512x16x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP16xW=ConvBinWinogradRxSf3x2:257;"
    "ConvBinWinogradRxSf2x3:258;ConvAsmImplicitGemmGTCDynamicWrwXdlopsNHWC:wrw,nhwc,fp16,0,0,"
    "128,64,32,32,32,8,1,1,1,2,0,0,2,0,0,1,4,1,4,1,8,1,32,1,4,1,2,1,8,1,32,118[2]"
)


@pytest.mark.parametrize(
    ("arch", "num_cu", "basename"),
    [
        ("gfx803", 36, "gfx803_36"),
        ("gfx900", 64, "gfx900_64"),
        ("gfx906", 60, "gfx906_60"),
        ("gfx908", 120, "gfx90878"),
        ("gfx90a", 104, "gfx90a68"),
        ("gfx90a", 110, "gfx90a6e"),
        ("gfx942", 304, "gfx942130"),
        ("gfx942", 228, "gfx942e4"),
        ("gfx1030", 36, "gfx1030_36"),
        ("gfx90a:sramecc+:xnack-", 104, "gfx90a68"),
        ("x86_64-avx2", 16, "x86_64-avx2_16"),
        ("x86_64-avx2", 128, "x86_64-avx2_128"),
        ("aarch64 neon/v8.2", 8, "aarch64_neon_v8_2_8"),
    ],
)
def test_basenames_follow_miopen(arch: str, num_cu: int, basename: str) -> None:
    assert db_basename(arch, num_cu) == basename


def test_file_names_per_kind() -> None:
    assert export_file_names("gfx90a68", "find", gpu=True) == ["gfx90a68.HIP.fdb.txt"]
    assert export_file_names("gfx90a68", "perf", gpu=True) == ["gfx90a68.db", "gfx90a68.db.txt"]
    assert export_file_names("gfx90a68", "kern", gpu=True) == ["gfx90a68.kdb"]
    assert export_file_names("x86_64-avx2_16", "find", gpu=False) == ["x86_64-avx2_16.fdb.txt"]


def test_real_find_line_reads_and_writes_back() -> None:
    (record,), bad = read_find_db([REAL_FIND])
    assert not bad
    assert record.entries[0] == FindEntry(
        "ConvAsmImplicitGemmGTCDynamicBwdXdlopsNHWC",
        0.051639,
        13714688,
        "miopenConvolutionBwdDataAlgoImplicitGEMM",
    )
    miopen_ids = {s.name: s.numeric_id for s in MIOPEN_SOLVERS if s.numeric_id is not None}
    assert find_db_line(record.key, by_time(record.entries, miopen_ids)) == REAL_FIND


def test_real_perf_line_reads_and_writes_back() -> None:
    (record,), bad = read_perf_db_text([REAL_PERF + "\n"])
    assert not bad and len(record.entries) == 3
    assert perf_db_line(record.key, record.entries) == REAL_PERF


def test_legacy_entries_become_v2() -> None:
    line = (
        "1-19-19-1x1-64-19-19-1024-0x0-1x1-1x1-0-NCHW-FP32-B="
        "miopenConvolutionBwdDataAlgoWinograd:ConvBinWinogradRxSf2x3g1,0.186719,0,"
        "miopenConvolutionBwdDataAlgoWinograd,not used;"
        "miopenConvolutionBwdDataAlgoGEMM:GemmBwd1x1_stride1,0.239519,4096,"
        "miopenConvolutionBwdDataAlgoGEMM,<unused>"
    )
    (record,), _ = read_find_db([line])
    assert find_db_line(record.key, record.entries) == (
        "1-19-19-1x1-64-19-19-1024-0x0-1x1-1x1-0-NCHW-FP32-B="
        "ConvBinWinogradRxSf2x3g1:0.186719,0,miopenConvolutionBwdDataAlgoWinograd;"
        "GemmBwd1x1_stride1:0.239519,4096,miopenConvolutionBwdDataAlgoGEMM"
    )


@pytest.mark.parametrize("path", sorted(MIOPEN_DATA.glob("*.txt")), ids=lambda p: p.name)
def test_shared_find_dbs_read_without_a_bad_record(path: Path) -> None:
    lines = path.read_text().splitlines()
    records, bad = read_find_db(lines)
    assert not bad and len(records) == len([x for x in lines if x.strip()])
    assert file_format(path) == "find-text"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("K=S:1,2", "expected time,workspace,algorithm"),
        ("K=S:x,2,a", "time 'x' is not a number"),
        ("K=S:nan,2,a", "not a finite number"),
        ("K=S:1,2.5,a", "workspace '2.5' is not an integer"),
        ("K=S:1,2,", "no algorithm"),
        ("K", "has no '='"),
    ],
)
def test_bad_find_records_are_reported_with_their_line(line: str, reason: str) -> None:
    records, bad = read_find_db(["", line])
    assert not records
    assert bad[0].line_no == 2 and reason in bad[0].reason


def test_times_are_written_with_six_significant_digits() -> None:
    e = [FindEntry("B", 1234567.0, 0, "a"), FindEntry("A", 0.0001234567, 1, "a")]
    assert find_db_line("K", e) == "K=B:1.23457e+06,0,a;A:0.000123457,1,a"
    tied = [FindEntry("B", 1.0, 0, "a"), FindEntry("C", 1.0, 0, "a"), FindEntry("A", 1.0, 0, "a")]
    assert [x.solver for x in by_time(tied, {})] == ["A", "B", "C"]
    # the library's solver ids first, then the names it lacks
    assert [x.solver for x in by_time(tied, {"C": 1, "B": 2})] == ["C", "B", "A"]


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[A-Za-z][A-Za-z0-9_<>\-]{0,30}", fullmatch=True),
            st.floats(min_value=0, max_value=1e7, allow_nan=False),
            st.integers(min_value=0, max_value=2**40),
            st.sampled_from(["miopenConvolutionFwdAlgoGEMM", "direct"]),
        ),
        min_size=1,
        max_size=6,
        unique_by=lambda t: t[0],
    )
)
def test_find_lines_read_back(entries: list[tuple[str, float, int, str]]) -> None:
    written = [FindEntry(*e) for e in entries]
    (record,), bad = read_find_db([find_db_line("KEY", written)])
    assert not bad
    assert [(e.solver, f"{e.time_ms:g}", e.workspace, e.algorithm) for e in record.entries] == [
        (e.solver, f"{e.time_ms:g}", e.workspace, e.algorithm) for e in written
    ]


def test_text_fields_must_not_hold_separators() -> None:
    assert field_problem("ConvAsm1x1U", commas=False) is None
    assert field_problem("4,8,4,16", commas=True) is None
    assert field_problem("a,b", commas=False) == "holds ',', a separator of the text db format"
    assert field_problem("a;b", commas=True) == "holds ';', a separator of the text db format"
    assert field_problem("", commas=True) == "is empty"


def test_parse_entry_rejects_a_legacy_entry_without_its_fields() -> None:
    with pytest.raises(DbKeyError, match="solver,time,workspace,algo,config"):
        parse_find_entry("miopenConvolutionFwdAlgoGEMM", "GemmFwdRest,1,0")


def test_perf_sqlite_has_miopens_ddl_and_answers_its_lookup(tmp_path: Path) -> None:
    path = tmp_path / "gfx90a68.db"
    cols = {
        "layout": "NCHW", "data_type": "FP16", "direction": "B", "spatial_dim": 2,
        "in_channels": 1000, "in_h": 13, "in_w": 13, "in_d": 1, "fil_h": 1, "fil_w": 1,
        "fil_d": 1, "out_channels": 512, "batchsize": 16, "pad_h": 0, "pad_w": 0, "pad_d": 0,
        "conv_stride_h": 1, "conv_stride_w": 1, "conv_stride_d": 0, "dilation_h": 1,
        "dilation_w": 1, "dilation_d": 0, "bias": 0, "group_count": 1,
    }  # fmt: skip
    entries = [("ConvAsm1x1U", "4,8,4,16,1,4,1,8"), ("ConvBinWinogradRxSf3x2", "58")]
    assert write_perf_sqlite(path, [(cols, entries)]) == 2
    with sqlite3.connect(path) as conn:
        ddl = [r[0] for r in conn.execute("SELECT sql FROM sqlite_master ORDER BY rowid")]
        found = conn.execute(PERF_LOOKUP, list(cols.values())).fetchall()
    assert ddl == list(PERF_DB_DDL)
    assert sorted(found) == entries
    assert [(c, s, p) for c, s, p in read_perf_sqlite(path)] == [(cols, *e) for e in entries]
    assert file_format(path) == "perf-sqlite"
    assert not list(tmp_path.glob(".*.tmp"))


def test_kdb_blobs_are_bzip2_with_the_md5_of_the_code(tmp_path: Path) -> None:
    code = b"\x7fELF" + b"kernel " * 200
    blob, size = pack_kdb_blob(code)
    assert size == len(code) and bz2.decompress(blob) == code
    assert pack_kdb_blob(b"x") == (b"x", 0)  # would not fit: stored raw
    assert unpack_kdb_blob(b"x", 0) == b"x"
    writer = KernDbWriter(tmp_path / "gfx90a.kdb")
    writer.add(KdbRow.of("conv.cl.o", "-DX=1 -mcpu=gfx90a", code))
    writer.commit()
    (row,) = read_kern_db(tmp_path / "gfx90a.kdb")
    assert row.kernel_hash == md5_hex(code) and row.problem() is None
    assert bz2.decompress(row.blob) == code
    assert file_format(tmp_path / "gfx90a.kdb") == "kern-sqlite"
    bad = KdbRow(row.kernel_name, row.kernel_args, row.blob, "0" * 32, row.uncompressed_size)
    assert bad.problem() == f"md5 of the code object is {md5_hex(code)}, not kernel_hash {'0' * 32}"


# The kernel object of the real fin recording (ConvAsm1x1UV2 on gfx906), as fin wrote it.
RECORDED_KERNEL = json.loads((MIOPEN_DATA / "fin_output_find_eval.json").read_text())[1]["input"][
    "miopen_find_compile_result"
][0]["kernel_objects"][0]


def test_the_recorded_kernel_gets_miopens_kdb_name_and_args() -> None:
    """What ``Handle::LoadProgram`` / ``SaveBinary`` (and fin's evaluate) look the recorded
    kernel up by: ``<kernel_file>.o`` and the options exactly as fin wrote them, leading space
    kept, plus `` -mcpu=gfx906`` (the arch without its target features)."""
    name, options = RECORDED_KERNEL["kernel_file"], RECORDED_KERNEL["comp_options"]
    assert name == "conv1x1u_stride2.s"
    assert options.startswith(" -Wa,-defsym,stride_h=1 -Wa,-defsym,stride_w=1 ")
    assert options.endswith(" -Wa,-defsym,waves_c_in_group=1")
    for arch in ("gfx906", "gfx906:sram-ecc+:xnack-"):
        assert kdb_name_args(name, options, arch) == (
            "conv1x1u_stride2.s.o",
            options + " -mcpu=gfx906",
        )


@pytest.mark.parametrize(
    ("name", "args", "arch", "expected"),
    [
        ("MIOpenConvDirUni.cl", " -DMLO_HW_WAVE_SZ=64", "gfx90a",
         ("MIOpenConvDirUni.cl.o", " -DMLO_HW_WAVE_SZ=64 -mcpu=gfx90a")),
        ("conv.cpp", "", "gfx942:sramecc+:xnack-", ("conv.cpp.o", " -mcpu=gfx942")),
        ("conv.s", "  -Wa,x  ", "gfx90a", ("conv.s.o", "  -Wa,x   -mcpu=gfx90a")),
        # LoadProgram appends no -mcpu to MLIR programs
        ("mlir_gen_igemm_conv2d_v4r4_fwd.mlir", " --operation conv2d", "gfx908",
         ("mlir_gen_igemm_conv2d_v4r4_fwd.mlir.o", " --operation conv2d")),
        # already in MIOpen's form (fin's own test: the name ends in .o)
        ("conv.s.o", " -DX -mcpu=gfx90a", "gfx90a", ("conv.s.o", " -DX -mcpu=gfx90a")),
        # a CPU backend's shared object, as cpuconv stores it
        ("cpuconv_CpuIm2colGemm_0123abcd.so", "-O3 -march=native -fPIC -shared", "x86_64-avx2",
         ("cpuconv_CpuIm2colGemm_0123abcd.so", "-O3 -march=native -fPIC -shared")),
    ],
)  # fmt: skip
def test_kdb_name_and_args(name: str, args: str, arch: str, expected: tuple[str, str]) -> None:
    assert kdb_name_args(name, args, arch) == expected


def test_kdb_blobs_compress_as_miopen_does() -> None:
    """The recorded blob is MIOpen's bzip2 of the code object: packing the code gives it back
    byte for byte."""
    blob = base64.b64decode(RECORDED_KERNEL["blob"])
    code = bz2.decompress(blob)
    assert len(code) == RECORDED_KERNEL["uncompressed_size"]
    assert md5_hex(code) == RECORDED_KERNEL["md5_sum"]
    assert pack_kdb_blob(code) == (blob, RECORDED_KERNEL["uncompressed_size"])


def test_a_discarded_kdb_leaves_no_file(tmp_path: Path) -> None:
    writer = KernDbWriter(tmp_path / "gfx90a.kdb")
    writer.add(KdbRow.of("a.o", "", b"code"))
    writer.discard()
    assert list(tmp_path.iterdir()) == []


def test_text_files_are_written_whole_or_not_at_all(tmp_path: Path) -> None:
    def lines():
        yield "a=b:1"
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_text_lines(tmp_path / "x.db.txt", lines())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "head", "kind"),
    [
        ("gfx90a68.HIP.fdb.txt", b"", "find-text"),
        ("gfx90a68.HIP.3_3_0.ufdb.txt", b"", "find-text"),
        ("gfx90a68.db.txt", b"", "perf-text"),
        ("gfx90a68.HIP.3_3_0.udb.txt", b"", "perf-text"),
        ("gfx906_60.cd.pdb.txt", b"", "perf-text"),
        ("sample.txt", REAL_FIND.encode(), "find-text"),
        ("sample.txt", REAL_PERF.encode(), "perf-text"),
    ],
)
def test_formats_are_told_by_name_or_content(name: str, head: bytes, kind: str) -> None:
    assert detect_format(name, head) == kind


def test_a_sqlite_file_of_other_tables_is_refused() -> None:
    with pytest.raises(DbFileError, match="neither MIOpen's kern_db"):
        detect_format("x.db", b"SQLite format 3\x00", ["t"])


def test_the_grammar_module_does_no_io() -> None:
    """formats.py is values in, values out; files are dbfiles.py's."""
    import ast

    import tuna.results.formats as grammar

    tree = ast.parse(Path(grammar.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & {"os", "sqlite3", "tempfile", "pathlib", "shutil", "io"}
    assert "open(" not in Path(grammar.__file__).read_text()
