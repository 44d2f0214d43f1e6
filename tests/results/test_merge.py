"""merge_db: ``tuna/results/merge.py`` (files only, no database)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.support.data import MIOPEN_DATA
from tuna.errors import TunaError
from tuna.results.dbfiles import (
    KernDbWriter,
    read_kern_db,
    write_perf_sqlite,
)
from tuna.results.formats import (
    PERF_LOOKUP,
    DbFileError,
    KdbRow,
)
from tuna.results.merge import MergeReport, merge_db

KA = "1-19-19-1x1-64-19-19-1024-0x0-1x1-1x1-0-NCHW-FP32-B"
KB = "1-19-19-1x1-64-19-19-1024-0x0-1x1-1x1-0-NCHW-FP32-W"
KC = "1-160-698-5x5-64-79-348-1-1x1-2x2-1x1-0-NCHW-FP32-F"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_find_records_of_the_top_file_replace_the_whole_key(tmp_path: Path) -> None:
    base = write(
        tmp_path / "gfx90a68.HIP.fdb.txt",
        f"{KB}=S1:1,0,a;S2:2,0,b\n{KA}=S1:0.5,0,a;S3:0.7,0,c\n",
    )
    top = write(tmp_path / "gfx90a68.HIP.3_3_0.ufdb.txt", f"{KA}=S2:0.9,8,b\n{KC}=S4:3,0,d\n")
    (tmp_path / "out").mkdir()  # merge_db creates no directory (issue #24)
    report = merge_db(base, top, tmp_path / "out" / "gfx90a68.HIP.fdb.txt")
    assert (tmp_path / "out" / "gfx90a68.HIP.fdb.txt").read_text() == (
        f"{KC}=S4:3,0,d\n{KA}=S2:0.9,8,b\n{KB}=S1:1,0,a;S2:2,0,b\n"
    )
    assert report == MergeReport(
        "find-text", tmp_path / "out" / "gfx90a68.HIP.fdb.txt", 2, 2, 1, 1, 3, 4
    )


def test_shared_user_db_over_the_legacy_system_db(tmp_path: Path) -> None:
    out = tmp_path / "gfx90a68.HIP.fdb.txt"
    report = merge_db(
        MIOPEN_DATA / "old_gfx90a68.HIP.fdb.txt", MIOPEN_DATA / "usr_gfx90a68.HIP.fdb.txt", out
    )
    lines = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert report.records == len(lines)
    # usr's record for this key wins whole: its 4 entries, fastest first, written as v2.0
    assert lines[KA] == (
        "ConvAsm1x1U:0.09728,0,miopenConvolutionBwdDataAlgoDirect;"
        "ConvBinWinogradRxSf3x2:0.18192,0,miopenConvolutionBwdDataAlgoWinograd;"
        "ConvMlirIgemmBwdXdlops:0.250079,0,miopenConvolutionBwdDataAlgoImplicitGEMM;"
        "GemmBwd1x1_stride1:2732.22,0,miopenConvolutionBwdDataAlgoGEMM"
    )


def test_perf_text_merges_by_solver_and_the_top_wins(tmp_path: Path) -> None:
    base = write(tmp_path / "gfx90a68.db.txt", "2xA=S1:1,2;S2:3\n2xB=S1:9\n")
    top = write(tmp_path / "gfx90a68.HIP.3_3_0.udb.txt", "2xA=S2:4;S3:5\n2xC=S1:7\n")
    report = merge_db(base, top, tmp_path / "o.db.txt")
    assert (tmp_path / "o.db.txt").read_text() == "2xA=S1:1,2;S2:4;S3:5\n2xB=S1:9\n2xC=S1:7\n"
    assert (report.replaced, report.added, report.records, report.entries) == (1, 1, 3, 5)


def test_perf_sqlite_merges_by_solver(tmp_path: Path) -> None:
    cols = {
        "layout": "NCHW", "data_type": "FP32", "direction": "F", "spatial_dim": 2,
        "in_channels": 3, "in_h": 224, "in_w": 224, "in_d": 1, "fil_h": 7, "fil_w": 7,
        "fil_d": 1, "out_channels": 64, "batchsize": 2, "pad_h": 3, "pad_w": 3, "pad_d": 0,
        "conv_stride_h": 2, "conv_stride_w": 2, "conv_stride_d": 0, "dilation_h": 1,
        "dilation_w": 1, "dilation_d": 0, "bias": 0, "group_count": 1,
    }  # fmt: skip
    other = {**cols, "batchsize": 4}
    write_perf_sqlite(tmp_path / "gfx90a68.db", [(cols, [("A", "1"), ("B", "2")])])
    write_perf_sqlite(tmp_path / "user.udb", [(cols, [("B", "3")]), (other, [("A", "4")])])
    report = merge_db(tmp_path / "gfx90a68.db", tmp_path / "user.udb", tmp_path / "out.db")
    assert (report.format, report.replaced, report.added, report.entries) == (
        "perf-sqlite",
        1,
        1,
        3,
    )
    with sqlite3.connect(tmp_path / "out.db") as conn:
        assert sorted(conn.execute(PERF_LOOKUP, list(cols.values()))) == [("A", "1"), ("B", "3")]
        assert list(conn.execute(PERF_LOOKUP, list(other.values()))) == [("A", "4")]


def test_kernel_dbs_merge_by_name_and_args(tmp_path: Path) -> None:
    def kdb(path: Path, rows: list[KdbRow]) -> Path:
        w = KernDbWriter(path)
        for r in rows:
            w.add(r)
        w.commit()
        return path

    base = kdb(tmp_path / "gfx90a.kdb", [KdbRow.of("a.o", "-mcpu=gfx90a", b"old" * 50),
                                         KdbRow.of("b.o", "-mcpu=gfx90a", b"b")])  # fmt: skip
    top = kdb(tmp_path / "gfx90a68.ukdb", [KdbRow.of("a.o", "-mcpu=gfx90a", b"new" * 50)])
    report = merge_db(base, top, tmp_path / "out.kdb")
    rows = {r.kernel_name: r.code() for r in read_kern_db(tmp_path / "out.kdb")}
    assert rows == {"a.o": b"new" * 50, "b.o": b"b"}
    assert (report.replaced, report.added, report.records) == (1, 0, 2)
    with sqlite3.connect(top) as conn:
        conn.execute("UPDATE kern_db SET kernel_hash = 'x'")
    with pytest.raises(DbFileError, match="1 corrupt kernel"):
        merge_db(base, top, tmp_path / "out2.kdb")
    assert not (tmp_path / "out2.kdb").exists()


def test_only_files_of_one_kind_merge_and_inputs_are_kept(tmp_path: Path) -> None:
    find = write(tmp_path / "a.fdb.txt", f"{KA}=S1:1,0,a\n")
    perf = write(tmp_path / "a.db.txt", "2xA=S1:1\n")
    with pytest.raises(TunaError, match=r"\(find-text\) with .* \(perf-text\): not the same kind"):
        merge_db(find, perf, tmp_path / "o.txt")
    with pytest.raises(TunaError, match="would overwrite an input"):
        merge_db(find, find, find)
    bad = write(tmp_path / "b.fdb.txt", "nonsense\n")
    with pytest.raises(DbFileError, match=r"b.fdb.txt: 1 bad record\(s\); nothing was merged"):
        merge_db(find, bad, tmp_path / "o.fdb.txt")
    assert not (tmp_path / "o.fdb.txt").exists()


def test_equal_times_are_ordered_by_miopens_solver_id_not_by_name(tmp_path: Path) -> None:
    # ConvBinWinograd3x3U is MIOpen's solver 14, ConvAsm1x1U its solver 2, ConvAsm3x3U 1: by
    # name the order would be ConvAsm1x1U, ConvAsm3x3U, ConvBinWinograd3x3U. A name Tuna has
    # no id for comes after those it has, then by name.
    base = write(tmp_path / "gfx90a68.HIP.fdb.txt", f"{KB}=S1:1,0,a\n")
    top = write(
        tmp_path / "gfx90a68.HIP.3_3_0.ufdb.txt",
        f"{KA}=Zz:0.5,0,a;ConvBinWinograd3x3U:0.5,0,a;Aa:0.5,0,a;ConvAsm1x1U:0.5,0,a;"
        "ConvAsm3x3U:0.5,0,a;ConvAsm1x1UV2:0.1,0,a\n",
    )
    out = tmp_path / "out.fdb.txt"
    merge_db(base, top, out)
    solvers = [e.split(":")[0] for e in out.read_text().splitlines()[0].split("=")[1].split(";")]
    assert solvers == [
        "ConvAsm1x1UV2", "ConvAsm3x3U", "ConvAsm1x1U", "ConvBinWinograd3x3U", "Aa", "Zz"
    ]  # fmt: skip
