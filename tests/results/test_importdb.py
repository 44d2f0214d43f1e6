"""import_db: ``tuna/results/importdb.py``, on both databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support.data import MIOPEN_DATA
from tests.support.seed import make_session
from tuna.db import Database
from tuna.db.models import ConfigTag, ConvConfig, Solver
from tuna.results.export import ExportSpec, export_db
from tuna.results.formats import read_find_db
from tuna.results.importdb import DbFileRefusedError, import_db_files, read_db_file

from .seed import (
    K1,
    K3,
    ONE_BY_ONE,
    THREE_BY_THREE,
    add_configs,
    add_find,
    add_perf,
    find_rows,
    perf_rows,
    run_noop,
)

SHARED = [
    MIOPEN_DATA / n
    for n in ("gfx90a68.HIP.fdb.sample.txt", "old_gfx90a68.HIP.fdb.txt", "usr_gfx90a68.HIP.fdb.txt")
]


def test_export_then_import_gives_the_same_rows(db: Database, tmp_path: Path) -> None:
    sid = run_noop(db, [ONE_BY_ONE, THREE_BY_THREE, ONE_BY_ONE.replace("-F 1", "-F 2")])
    export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path))
    export_db(db, ExportSpec(kind="perf", session=sid, out_dir=tmp_path))
    for files in (["gfx90a68.HIP.fdb.txt", "gfx90a68.db"], ["gfx90a68.db.txt"]):
        again = make_session(db)
        report = import_db_files(db, again, [read_db_file(tmp_path / f) for f in files])
        assert not report.new_solvers and not report.warnings
        if "gfx90a68.HIP.fdb.txt" in files:
            assert find_rows(db, again) == find_rows(db, sid)
            assert report.find_rows == len(find_rows(db, sid))
        assert perf_rows(db, again) == perf_rows(db, sid)
        assert report.configs_inserted == 0  # every key was already in the catalogue


@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.name)
def test_shared_find_dbs_import(db: Database, path: Path) -> None:
    sid = make_session(db, backend="noop")
    parsed = read_db_file(path)
    assert parsed.format == "find-text" and not parsed.bad
    report = import_db_files(db, sid, [parsed], tag="miopen")
    records, _ = read_find_db(path.read_text().splitlines())
    assert report.configs == len(records)
    assert report.find_rows == sum(len(r.entries) for r in records)
    assert len(find_rows(db, sid)) == report.find_rows
    assert report.new_solvers and report.warnings[0].startswith(
        f"{len(report.new_solvers)} solver(s) unknown to backend 'noop' were added"
    )
    with db.session() as s:
        new = s.execute(
            select(Solver.name, Solver.valid).where(Solver.name.in_(report.new_solvers))
        ).all()
        tagged = s.scalar(select(ConfigTag.id).where(ConfigTag.tag == "miopen").limit(1))
    assert {valid for _name, valid in new} == {False} and tagged is not None


def test_legacy_and_new_entries_of_one_key_import(db: Database) -> None:
    sid = make_session(db)
    old, usr = (
        read_db_file(MIOPEN_DATA / n)
        for n in ("old_gfx90a68.HIP.fdb.txt", "usr_gfx90a68.HIP.fdb.txt")
    )
    import_db_files(db, sid, [old, usr])
    key = "1-19-19-1x1-64-19-19-1024-0x0-1x1-1x1-0-NCHW-FP32-B"
    rows = {(sv, t) for k, sv, t, _w, _a in find_rows(db, sid) if k == key}
    # old has ConvBinWinogradRxSf2x3g1; usr (imported later) wins for GemmBwd1x1_stride1
    assert ("ConvBinWinogradRxSf2x3g1", "0.186719") in rows
    assert ("GemmBwd1x1_stride1", "2732.22") in rows


def test_perf_text_with_dash_and_x_keys(db: Database, tmp_path: Path) -> None:
    add_configs(db, [ONE_BY_ONE, THREE_BY_THREE])
    sid = make_session(db)
    f = tmp_path / "gfx90a68.cd.pdb.txt"
    f.write_text(
        f"{K1}=NoopTunable:1x8\n"
        "2x64x56x56x1x3x3x1x64x16x1x1x0x1x1x0x1x1x0x0x1xNCHWxFP32xF=NoopTunable:4x32\n"
    )
    parsed = read_db_file(f)
    assert parsed.format == "perf-text"
    import_db_files(db, sid, [parsed])
    assert perf_rows(db, sid) == [(K1, "NoopTunable", "1x8"), (K3, "NoopTunable", "4x32")]


def test_a_bad_record_imports_nothing_unless_skipped(db: Database, tmp_path: Path) -> None:
    sid = make_session(db)
    f = tmp_path / "x.fdb.txt"
    f.write_text(
        f"{K1}=NoopDirect:0.5,0,direct\n"
        "1-2-3=NoopDirect:0.5,0,direct\n"
        f"{K3}=NoopDirect:zero,0,direct\n"
    )
    parsed = read_db_file(f)
    with pytest.raises(DbFileRefusedError) as e:
        import_db_files(db, sid, [parsed])
    assert str(e.value).splitlines()[:3] == [
        "2 bad record(s); nothing was imported:",
        f"  {f}:2: find-db key '1-2-3': has 3 dash fields; expected 15, 17 or 19",
        f"  {f}:3: find-db entry NoopDirect:zero,0,direct: time 'zero' is not a number",
    ]
    with db.session() as s:
        assert s.scalar(select(ConvConfig.id).limit(1)) is None
    report = import_db_files(db, sid, [parsed], skip_bad=True)
    assert report.find_rows == 1 and len(report.skipped) == 2
    assert find_rows(db, sid) == [(K1, "NoopDirect", "0.5", 0, "direct")]


def test_import_replaces_the_sessions_rows(db: Database, tmp_path: Path) -> None:
    add_configs(db, [ONE_BY_ONE])
    sid = make_session(db)
    add_find(db, sid, [(K1, "NoopDirect", 9.0, 0, "direct"), (K1, "NoopTunable", 1.0, 0, "ig")])
    add_perf(db, sid, [(K1, "NoopTunable", "1x8")])
    f = tmp_path / "gfx906_60.HIP.fdb.txt"
    f.write_text(f"{K1}=NoopDirect:0.5,64,direct\n")
    report = import_db_files(db, sid, [read_db_file(f)])
    assert report.warnings == [
        "gfx906_60.HIP.fdb.txt looks like a db of gfx906_60; session 1 is gfx90a68".replace(
            "session 1", f"session {sid}"
        )
    ]
    assert find_rows(db, sid) == [
        (K1, "NoopDirect", "0.5", 64, "direct"),
        (K1, "NoopTunable", "1", 0, "ig"),
    ]
