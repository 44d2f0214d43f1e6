"""import_db on every real MIOpen file the repo carries, and on what users feed it that is not
whole (issue #12): ``tuna/results/importdb.py`` and its round trip through ``export_db``."""

from __future__ import annotations

import dataclasses
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, text

from tests.support.data import MIOPEN_DATA
from tests.support.seed import make_session
from tests.support.wait import wait_until
from tuna.backends.miopen.solvers import BY_NAME
from tuna.db import Database
from tuna.db.models import (
    ConfigTag,
    ConvConfig,
    FindDb,
    KeyOnlyRecord,
    PerfDb,
    Solver,
    Tensor,
    TuningSession,
)
from tuna.errors import TunaError
from tuna.problems.driver import to_driver_line
from tuna.problems.keys import parse_find_db_key
from tuna.results import importdb
from tuna.results.export import ExportSpec, export_db
from tuna.results.formats import FindEntry, read_find_db
from tuna.results.importdb import (
    DbFileRefusedError,
    import_db_files,
    import_db_new_session,
    lock_name,
    read_db_file,
)
from tuna.sessions import SessionSpec

from .seed import add_configs, find_rows, perf_rows, run_noop

# file -> (arch, CUs, runtime, keys MIOpen wrote that are no problem: kept by key alone)
SAMPLES = {
    "gfx90a68.HIP.fdb.sample.txt": ("gfx90a", 104, "HIP", 0),
    "gfx90878.HIP.fdb.sample.txt": ("gfx908", 120, "HIP", 0),
    "gfx1030_36.HIP.fdb.sample.txt": ("gfx1030", 36, "HIP", 0),
    "gfx1030_samepad.fdb.txt": ("gfx1030", 36, "HIP", 0),
    "gfx906_60.OpenCL.fdb.sample.txt": ("gfx906", 60, "OpenCL", 3),
    "old_gfx90a68.HIP.fdb.txt": ("gfx90a", 104, "HIP", 0),
    "usr_gfx90a68.HIP.fdb.txt": ("gfx90a", 104, "HIP", 0),
}


def counts(db: Database) -> dict[str, int]:
    """Rows per table that an import writes: what a refused import must leave as it was."""
    with db.session() as s:
        return {
            m.__table__.name: s.scalar(select(func.count()).select_from(m)) or 0
            for m in (TuningSession, ConvConfig, Tensor, ConfigTag, Solver, FindDb, PerfDb,
                      KeyOnlyRecord)
        }  # fmt: skip


def miopen_order(entries: list[FindEntry]) -> list[FindEntry]:
    """Fastest first, equal times by MIOpen's solver id (a solver Tuna has no id for: by name,
    after those it has)."""

    def rank(e: FindEntry) -> tuple[float, bool, int, str]:
        known = BY_NAME.get(e.solver)
        sid = known.numeric_id if known is not None and known.numeric_id is not None else 0
        return (e.time_ms, known is None, sid, e.solver)

    return sorted(entries, key=rank)


def _alive(thread: threading.Thread, result: list[Any]) -> bool:
    """True while ``thread`` runs; its result (an error) fails the test once it ended."""
    assert thread.is_alive(), result
    return True


@pytest.mark.parametrize("name", SAMPLES, ids=str)
def test_every_sample_round_trips_through_import_and_export(
    db: Database, tmp_path: Path, name: str
) -> None:
    """A plain import_db of each real file succeeds, and its export holds every key of the
    file, each with the file's entries in the file's order (issue #24: the keys that are no
    problem were refused, and equal times were put in Tuna's order)."""
    arch, cus, runtime, key_only = SAMPLES[name]
    path = MIOPEN_DATA / name
    parsed = read_db_file(path)
    assert parsed.bad == []
    assert len(parsed.key_only) == key_only
    assert all("(pads) '0x0' is not 3 values joined by 'x'" in r
               for r in parsed.key_only_reasons.values())  # fmt: skip
    sid = make_session(db, arch=arch, num_cu=cus, backend="miopen")
    report = import_db_files(db, sid, [parsed], tag="shipped")
    assert report.runtime == (runtime if runtime == "OpenCL" else None)
    assert report.key_only == key_only
    out = export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path))
    assert out.files[0].path.name == f"{out.basename}.{runtime}.fdb.txt"
    assert out.counts.get("key_only_records", 0) == key_only

    records, bad = read_find_db(path.read_text().splitlines())
    assert bad == []
    want = {r.key: r.entries for r in records}
    got = {r.key: r.entries for r in read_find_db(out.files[0].path.read_text().splitlines())[0]}
    assert list(got) == sorted(want)  # every key, byte for byte, sorted as MIOpen ships them
    assert got == want
    # v2.0 lines come back byte for byte but where MIOpen wrote a time Tuna writes shorter
    # (``0.0`` as ``0``); v1.0 entries are written as v2.0
    if "=miopen" not in path.read_text():
        lines = path.read_text().splitlines()
        same = set(lines) & set(out.files[0].path.read_text().splitlines())
        assert all(":0.0," in line for line in set(lines) - same)


def test_int8_and_same_padding_keys_become_configs_without_a_driver_line(db: Database) -> None:
    sid = make_session(db, arch="gfx1030", num_cu=36, backend="miopen")
    files = [read_db_file(MIOPEN_DATA / n) for n in (
        "gfx90878.HIP.fdb.sample.txt", "gfx1030_36.HIP.fdb.sample.txt")]  # fmt: skip
    import_db_files(db, sid, files)
    with db.session() as s:
        rows = dict(s.execute(select(ConvConfig.fdb_key, ConvConfig.driver)).all())
        same = set(s.scalars(select(ConvConfig.fdb_key).where(ConvConfig.pad_mode == "same")))
    int8 = {k for k in rows if "-INT8-" in k}
    assert len(int8) == 5 and all(rows[k] == "" for k in int8)
    assert "128-10-10-3x3-256-5-5-100-0x0-2x2-1x1-0-NCHW-BF16-F" in same
    assert same and all(rows[k] == "" for k in same)
    assert all(rows[k].startswith("./bin/MIOpenDriver ") for k in rows.keys() - int8 - same)


def test_solvers_miopen_ships_that_tunas_catalogue_lacks_are_recorded_and_export(
    db: Database, tmp_path: Path
) -> None:
    sid = make_session(db, arch="gfx1030", num_cu=36, backend="miopen")
    report = import_db_files(db, sid, [read_db_file(MIOPEN_DATA / "gfx1030_36.HIP.fdb.sample.txt")])
    assert report.new_solvers == ["ConvOclDirectFwdFused"]
    with db.session() as s:
        valid = dict(s.execute(select(Solver.name, Solver.valid).where(
            Solver.backend == "miopen", Solver.name.in_(report.new_solvers))).all())  # fmt: skip
    assert set(valid.values()) == {True}
    out = export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path))
    assert "ConvOclDirectFwdFused:" in out.files[0].path.read_text()
    # an OpenCL find db makes an OpenCL session
    ocl = make_session(db, arch="gfx906", num_cu=60, backend="miopen")
    f = read_db_file(MIOPEN_DATA / "gfx906_60.OpenCL.fdb.sample.txt")
    import_db_files(db, ocl, [f])
    out = export_db(db, ExportSpec(kind="find", session=ocl, out_dir=tmp_path))
    assert out.files[0].path.name == "gfx906_60.OpenCL.fdb.txt"
    # asked for by name, as MITuna's export_db -c did, from a HIP session too
    other = make_session(db, arch="gfx90a", num_cu=104, backend="miopen")
    import_db_files(db, other, [read_db_file(MIOPEN_DATA / "old_gfx90a68.HIP.fdb.txt")])
    out = export_db(db, ExportSpec(kind="find", session=other, out_dir=tmp_path, opencl=True))
    assert out.files[0].path.name == "gfx90a68.OpenCL.fdb.txt"
    with pytest.raises(TunaError, match="holds MIOpen HIP results; the files are OpenCL"):
        import_db_files(db, other, [f])


def test_a_failed_import_changes_nothing(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = make_session(db, backend="miopen")
    before = counts(db)
    real = importdb.upsert_columns

    def fail_on_perf(s, model, columns, keys):  # type: ignore[no-untyped-def]
        real(s, model, columns, keys)
        raise RuntimeError("injected: the server went away after the find rows")

    monkeypatch.setattr(importdb, "upsert_columns", fail_on_perf)
    with pytest.raises(RuntimeError, match="injected"):
        import_db_files(db, sid, [read_db_file(MIOPEN_DATA / "gfx90a68.HIP.fdb.sample.txt")])
    assert counts(db) == before
    # a new session made for a failed import goes again
    with pytest.raises(RuntimeError, match="injected"):
        import_db_new_session(
            db, SessionSpec(arch="gfx90a", num_cu=104, backend="miopen"),
            [read_db_file(MIOPEN_DATA / "old_gfx90a68.HIP.fdb.txt")],
        )  # fmt: skip
    assert counts(db) == before


KEY = "64-56-56-1x1-64-56-56-16-0x0-1x1-1x1-0-NCHW-FP32-F"


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (KEY.replace("-16-", "-2147483648-") + "=ConvAsm1x1U:1,0,miopenConvolutionFwdAlgoDirect",
         "field 8 (batch size) '2147483648' is not canonical integers of at most 2147483647"),
        (KEY.replace("-16-", "-" + "9" * 5000 + "-")
         + "=ConvAsm1x1U:1,0,miopenConvolutionFwdAlgoDirect",
         "... has 5048 characters; Tuna stores keys of up to 255"),
        (KEY + "=ConvAsm1x1U:1,18446744073709551616,miopenConvolutionFwdAlgoDirect",
         "workspace 18446744073709551616 is outside 0 to 9223372036854775807"),
        (KEY + "=ConvAsm1x1U:1," + "9" * 5000 + ",a",
         "workspace '999999999999...(5000 characters)' is not an integer of at most 20 digits"),
        (KEY + "=" + "S" * 300 + ":1,0,miopenConvolutionFwdAlgoDirect",
         "has 300 characters; Tuna stores names of up to 128"),
        (KEY + "=ConvAsm1x1U:1,0," + "a" * 65,
         "algorithm 'aaaaaaaaaaaa...(65 characters)' is not one of MIOpen's algorithm names"),
        # issue #24: 169 entries with algorithms that are not MIOpen's were imported and shipped
        (KEY + "=ConvAsm1x1U:1,0,miopenConvolutionFwdAlgoDir",
         "find-db entry of ConvAsm1x1U: algorithm 'miopenConvolutionFwdAlgoDir' is not one of "
         "MIOpen's algorithm names (miopenConvolutionFwdAlgoDirect, "),
        (KEY + "=ConvAsm1x1U:1,0,miopenConvolution FwdAlgoDirect",
         "algorithm 'miopenConvolution FwdAlgoDirect' is not one of MIOpen's algorithm names"),
        (KEY + "=ConvAsm1x1U:1,0,miopenConvolutionFwdAlgo\x07Direct",
         "algorithm 'miopenConvolutionFwdAlgo\\x07Direct' is not one of MIOpen's"),
        (KEY + "=ConvAsm1x1U:1,0,miopenConvolutionFwdAlgoDirecté",
         ":1: holds byte 0xc3 (column 98), which is not ASCII: MIOpen's db files are ASCII"),
        (KEY + "=ConvAsm1x1U :1,0,miopenConvolutionFwdAlgoDirect",
         "solver name 'ConvAsm1x1U ' holds white space"),
        (KEY + "=ConvAsm1x1U:-0.5,0,miopenConvolutionFwdAlgoDirect", "time -0.5 is negative"),
        (KEY + "=ConvAsm1x1U:1e999,0,miopenConvolutionFwdAlgoDirect", "is not a finite number"),
    ],
)  # fmt: skip
def test_values_that_do_not_fit_are_bad_records_and_change_nothing(
    db: Database, tmp_path: Path, record: str, message: str
) -> None:
    sid = make_session(db, backend="miopen")
    f = tmp_path / "gfx90a68.HIP.fdb.txt"
    f.write_text(record + "\n")
    before = counts(db)
    parsed = read_db_file(f)
    with pytest.raises(DbFileRefusedError) as e:
        import_db_files(db, sid, [parsed])
    assert message in str(e.value)
    assert counts(db) == before
    assert import_db_files(db, sid, [parsed], skip_bad=True).find_rows == 0
    assert counts(db)["find_db"] == 0


def test_a_file_that_is_not_utf8_is_refused_naming_the_line(db: Database, tmp_path: Path) -> None:
    """issue #24: import_db stored U+FFFD in the algorithm where import_configs and query_db
    refuse the same bytes."""
    sid = make_session(db, backend="miopen")
    f = tmp_path / "gfx90a68.HIP.fdb.txt"
    good = f"{KEY}=ConvAsm1x1U:1,0,miopenConvolutionFwdAlgoDirect\n".encode()
    f.write_bytes(good + good.replace(b"-16-", b"-32-").replace(b"Direct", b"Dir\xe9ct"))
    before = counts(db)
    with pytest.raises(DbFileRefusedError) as e:
        import_db_files(db, sid, [read_db_file(f)])
    assert e.value.bad == [
        f"{f}:2: holds byte 0xe9 (column 95), which is not ASCII: MIOpen's db files are ASCII"
    ]
    assert counts(db) == before


def test_solver_names_compare_exactly(db: Database, tmp_path: Path) -> None:
    sid = make_session(db, backend="miopen")
    f = tmp_path / "gfx90a68.HIP.fdb.txt"
    f.write_text(
        f"{KEY}=ConvAsm1x1U:1,0,miopenConvolutionFwdAlgoDirect;"
        "convasm1x1u:2,0,miopenConvolutionFwdAlgoDirect\n"
    )
    import_db_files(db, sid, [read_db_file(f)])
    assert [(sv, t) for _k, sv, t, _w, _a in find_rows(db, sid)] == [
        ("ConvAsm1x1U", "1"),
        ("convasm1x1u", "2"),
    ]


def test_an_ambiguous_perf_key_goes_to_the_catalogues_config(db: Database, tmp_path: Path) -> None:
    # a tuned stride-2 backward-weights problem: its perf-db key holds y (28), not x (56)
    tuned = "conv -n 16 -c 128 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 4"
    add_configs(db, [tuned])
    xkey = "2x64x28x28x1x3x3x1x128x16x1x1x0x2x2x0x1x1x0x0x1xNCHWxFP32xW"
    f = tmp_path / "gfx90a68.db.txt"
    f.write_text(f"{xkey}=ConvAsmBwdWrW3x3:1,2,3\n")
    sid = make_session(db, backend="miopen")
    report = import_db_files(db, sid, [read_db_file(f)])
    h56 = "64-28-28-3x3-128-56-56-16-1x1-2x2-1x1-0-NCHW-FP32-W"
    assert perf_rows(db, sid) == [(h56, "ConvAsmBwdWrW3x3", "1,2,3")]
    assert report.configs_inserted == 0 and not report.warnings
    # with two of the configs that share the key in the catalogue: the first, and say so
    add_configs(db, [tuned.replace("-H 56", "-H 55")])
    report = import_db_files(db, make_session(db, backend="miopen"), [read_db_file(f)])
    h55_56 = "64-28-28-3x3-128-55-56-16-1x1-2x2-1x1-0-NCHW-FP32-W"
    assert report.warnings == [
        f"perf-db key {xkey} could be 2 configs of the catalogue ({h55_56}, {h56}); "
        f"imported to {h55_56}"
    ]


@pytest.mark.mysql
def test_a_second_import_says_what_it_waits_for_and_then_succeeds(mysql_url: str) -> None:
    from tuna.db import migrate, open_database
    from tuna.db.engine import make_engine

    engine = make_engine(mysql_url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
    db = open_database(mysql_url)
    try:
        sid = make_session(db, backend="miopen")
        files = [read_db_file(MIOPEN_DATA / "gfx90a68.HIP.fdb.sample.txt")]
        said: list[str] = []
        result: list[object] = []
        with engine.connect() as first:  # stands for an import that holds the lock
            LOCK_NAME = lock_name(first.scalar(text("SELECT DATABASE()")))  # noqa: N806
            assert LOCK_NAME.startswith("tuna.import_db.")
            # an import into another database of the same server does not wait for it
            assert lock_name("another") != LOCK_NAME
            assert first.scalar(text("SELECT GET_LOCK(:n, 0)"), {"n": LOCK_NAME}) == 1
            holder = first.scalar(text("SELECT CONNECTION_ID()"))

            def second() -> None:
                try:
                    result.append(import_db_files(db, sid, files, waiting=said.append))
                except Exception as e:  # noqa: BLE001 - reported below
                    result.append(e)

            t = threading.Thread(target=second)
            t.start()
            wait_until(
                lambda: _alive(t, result) and said, "the second import to say it waits", timeout=30
            )
            assert said == [
                f"waiting for another import_db to finish (it holds the lock '{LOCK_NAME}', "
                f"MySQL connection {holder}); nothing is written until it has"
            ]
            assert counts(db)["find_db"] == 0
            first.execute(text("SELECT RELEASE_LOCK(:n)"), {"n": LOCK_NAME})
        t.join(60)
        assert not t.is_alive()
        assert not isinstance(result[0], Exception), result
        assert counts(db)["find_db"] > 0
        # two real imports at once: both go through
        sids = [make_session(db, backend="miopen") for _ in range(2)]
        errors: list[Exception] = []

        def run(s: int) -> None:
            try:
                import_db_files(db, s, files)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(s,)) for s in sids]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        assert not errors
        assert len(find_rows(db, sids[0])) == len(find_rows(db, sids[1])) > 0
    finally:
        db.dispose()
        engine.dispose()


TRICKY = """\
{P}-16-{S}=ConvAsm1x1U:1,0,{D};ConvBinWinogradRxS:2,8,{W}
# {P}-16-{S}=ConvAsm1x1U:1,0,{D}
#{P}-17-{S}=ConvAsm1x1U:1,0,{D}
  {P}-18-{S}=ConvAsm1x1U:1,0,{D}
{P}-19-{S} =ConvAsm1x1U:1,0,{D}
{P}-20-{S}=ConvAsm1x1U:1,0,{D};ConvAsm1x1U:2,0,{D}
{P}-21-{S}=ConvAsm1x1U:nan,0,{D}
{P}-22-{S}=ConvAsm1x1U:-0,0,{D}
{P}-23-{S}=ConvAsm1x1U:1,9223372036854775807,{D}
{P}-24-{S}=ConvAsm1x1U:1,9223372036854775808,{D}
{P}-25-{S}=ConvAsm1x1U:1,-1,{D}
{P}-26-{S}=ConvAsm1x1U:1,0,{D}:x
{P}-27-{S}=ConvAsm1x1U:1,0,{D}=
{P}-28-{S}=ConvAsm1x1U:1,0,{D};
{P}-29-{S}={D}:{D},1,0,a,b
{P}-30-{S}={D}:1,0,{D}
{P}-31-{S}=ConvAsm1x1U:1e999,0,{D}
{P}-32-{S}=ConvAsm1x1U:1,0,{D}\r
{P}-33-{S}=ConvAsm1x1U:1,0
{P}-034-{S}=ConvAsm1x1U:1,0,{D}
{P}-35-{S}=ConvAsm1x1U: 1,0,{D}
{P}-36-{S}=ConvAsm1x1U:1,0,{D} ;ConvAsm3x3U:1,0,x
{P}-37-{S}=ConvAsm1x1U:1,0,{D};ConvAsm3x3U:1,0,x
{P}-39-{S}={D}:ConvAsm1x1U,0.5,0,a,b
{P}-40-{S}={D}:ConvAsm1x1U,0.5,0,a,b;{W}:ConvAsm1x1U,0.25,8,a,b;{G}:ConvAsm3x3U,0.25,8,,
{P}-41-{S}={D}:ConvAsm1x1U,0.5,0,a,b;{W}:ConvAsm1x1U,0.5,8,a,b
{P}-42-{S}={D}:ConvAsm1x1U,0.5,0,a,b;{D}:ConvAsm3x3U,0.5,8,a,b
{P}-43-{S}={D}:ConvAsm1x1U,0.5,0,a;ConvAsm3x3U:1,0,x
{P}-44-{S}={D}:ConvAsm1x1U,0.5,0,a,b;ConvAsm1x1U:0.1,0,x
{P}-45-{S}={D}:ConvUnseen,0.5,0,a,b;ConvUnseen:0.1,0,x
{P}-46-{S}={G}:{G},0.5,0,a,b
{P}-47-{S}={G}:1,0,{G}
{P}-16-{S}=ConvAsm3x3U:1,0,{D}

{P}-38-{S}
=ConvAsm1x1U:1,0,{D}
""".format(
    P="64-56-56-1x1-64-56-56",
    S="0x0-1x1-1x1-0-NCHW-FP32-F",
    D="miopenConvolutionFwdAlgoDirect",
    W="miopenConvolutionFwdAlgoWinograd",
    G="miopenConvolutionFwdAlgoGEMM",
)


@pytest.mark.parametrize("name", [*SAMPLES, "tricky"], ids=str)
def test_the_one_pass_reader_reads_what_the_full_reader_reads(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common find-db record is read in one pass (``_FastFindLines``); every other line
    the full reader reads. Both give the same records, entries, problems and bad lines."""
    path = MIOPEN_DATA / name
    if name == "tricky":
        path = tmp_path / "gfx90a68.HIP.fdb.txt"
        path.write_bytes(TRICKY.encode())
    read = importdb._FastFindLines.read
    taken = []

    def counting(self: importdb._FastFindLines, line: str) -> object:
        got = read(self, line)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(importdb._FastFindLines, "read", counting)
    fast = read_db_file(path)
    monkeypatch.setattr(importdb._FastFindLines, "read", lambda _self, _line: None)
    full = read_db_file(path)
    assert (fast.records, fast.find, fast.problems, fast.bad, fast.key_only) == (
        full.records, full.find, full.problems, full.bad, full.key_only
    )  # fmt: skip
    found = [*fast.find.values(), *fast.key_only.values()]
    assert [type(e) for es in found for e in es] == [FindEntry] * fast.entries
    if len(taken) > 100:  # the samples of hundreds of records, v2.0 and v1.0 entries
        assert sum(taken) > 0.5 * len(taken)


def test_tuned_deconvolutions_with_output_pads_export_and_import_back(
    db: Database, tmp_path: Path
) -> None:
    """Deconvolutions (``-m trans``, output pads where a stride allows them) made from the
    real sample's keys, tuned, export; the export imports back onto the same configs (none
    invented) and exports the same bytes again."""
    lines = []
    for record in (MIOPEN_DATA / "gfx90a68.HIP.fdb.sample.txt").read_text().splitlines()[:60]:
        p = parse_find_db_key(record.split("=", 1)[0])
        pads = tuple(int(s > 1) for s in p.stride)
        lines.append(to_driver_line(dataclasses.replace(p, mode="trans", trans_output_pad=pads)))
    assert sum(" -Y 1 " in line or " -X 1 " in line for line in lines) >= 5
    sid = run_noop(db, lines)
    first = export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path / "1"))
    with db.session() as s:
        trans = dict(s.execute(select(ConvConfig.fdb_key, ConvConfig.id).where(
            ConvConfig.mode == "trans")).all())  # fmt: skip
    assert first.files[0].records == len(trans) == len(set(lines))
    again = make_session(db)
    report = import_db_files(db, again, [read_db_file(first.files[0].path)])
    assert (report.configs, report.configs_inserted) == (len(trans), 0)
    second = export_db(db, ExportSpec(kind="find", session=again, out_dir=tmp_path / "2"))
    assert second.files[0].path.read_bytes() == first.files[0].path.read_bytes()


def test_a_record_exported_unchanged_keeps_its_order_and_a_changed_one_takes_tunas(
    db: Database, tmp_path: Path
) -> None:
    """MIOpen's shipped files put equal times in solver-id order 1,149 times and in the
    reverse 651 times (issue #24); an export put every tie in id order. A record as it was
    imported is written back so, all its entries (five here); one a later file changed is
    written in Tuna's order, four fastest."""
    d, w = "miopenConvolutionFwdAlgoDirect", "miopenConvolutionFwdAlgoWinograd"
    record = (
        f"{KEY}=ConvBinWinogradRxS:0.5,0,{w};ConvAsm1x1U:0.5,0,{d};ConvAsm3x3U:0.75,0,{d};"
        f"ConvOclDirectFwd:1,0,{d};ConvOclDirectFwd1x1:2,0,{d}"
    )  # ids 15, 2, 1, 11, 13
    f = tmp_path / "gfx90a68.HIP.fdb.txt"
    f.write_text(record + "\n")
    sid = make_session(db, backend="miopen")
    import_db_files(db, sid, [read_db_file(f)])
    out = export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path / "1"))
    assert out.files[0].path.read_text() == record + "\n"
    # a later file replaces one entry: the record is no file's as written any more
    top = tmp_path / "usr" / "gfx90a68.HIP.fdb.txt"
    top.parent.mkdir()
    top.write_text(f"{KEY}=ConvOclDirectFwd:0.25,0,{d}\n")
    import_db_files(db, sid, [read_db_file(top)])
    out = export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path / "2"))
    assert out.files[0].path.read_text() == (
        f"{KEY}=ConvOclDirectFwd:0.25,0,{d};ConvAsm1x1U:0.5,0,{d};"
        f"ConvBinWinogradRxS:0.5,0,{w};ConvAsm3x3U:0.75,0,{d}\n"
    )
    # the whole record imported again: as written again
    import_db_files(db, sid, [read_db_file(f)])
    out = export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path / "3"))
    assert out.files[0].path.read_text() == record + "\n"


def test_a_key_miopen_wrote_that_is_no_problem_is_kept_by_key_and_anything_else_refused(
    db: Database, tmp_path: Path
) -> None:
    """gfx906_60.OpenCL.fdb.txt holds 11 legacy keys with 2D pads on 3D filters (issue #24):
    kept as key-only records (no config), exported byte for byte. A key MIOpen could not
    have written (a leading zero, a number past a C int, a word) is still a bad record."""
    legacy = "256-14-14-4-1x1x1-1024-14-14-4-4-0x0-1x1x1-1x1x1-0-NCHW-FP32-B"
    entries = "ConvOclBwdWrW1x1:0.1,0,miopenConvolutionBwdDataAlgoDirect"
    f = tmp_path / "gfx906_60.OpenCL.fdb.txt"
    f.write_text(f"{legacy}={entries}\n")
    sid = make_session(db, arch="gfx906", num_cu=60, backend="miopen")
    before = counts(db)
    report = import_db_files(db, sid, [read_db_file(f)])
    assert (report.key_only, report.configs, report.find_rows) == (1, 0, 0)
    after = counts(db)
    assert after["key_only_record"] == 1 and after["conv_config"] == before["conv_config"]
    out = export_db(db, ExportSpec(kind="find", session=sid, out_dir=tmp_path / "out"))
    assert out.files[0].path.read_text() == f"{legacy}={entries}\n"
    # a config tag holds configs, not key-only records
    with pytest.raises(TunaError, match="has no find results for configs tagged 'x'"):
        export_db(db, ExportSpec(kind="find", session=sid, config_tag="x", out_dir=tmp_path))
    for bad in (legacy.replace("-4-4-", "-04-4-"), legacy.replace("-4-4-", "-2147483648-4-"),
                "hello"):  # fmt: skip
        f.write_text(f"{bad}={entries}\n")
        with pytest.raises(DbFileRefusedError, match="find-db key"):
            import_db_files(db, sid, [read_db_file(f)])


def test_a_second_import_on_sqlite_waits_and_says_so(lite: Database) -> None:
    """issue #24: a second import_db on SQLite failed after 41 s with "database is locked",
    where MariaDB's says what it waits for. A writer holds the lock; the import says it
    waits, writes nothing meanwhile, and goes through once the lock is free."""
    sid = make_session(lite, backend="miopen")
    files = [read_db_file(MIOPEN_DATA / "old_gfx90a68.HIP.fdb.txt")]
    path = lite.engine.url.database
    assert path is not None
    said: list[str] = []
    result: list[object] = []
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")

    def second() -> None:
        try:
            result.append(import_db_files(lite, sid, files, waiting=said.append))
        except Exception as e:  # noqa: BLE001 - reported below
            result.append(e)

    t = threading.Thread(target=second)
    t.start()
    try:
        wait_until(
            lambda: _alive(t, result) and said, "the second import to say it waits", timeout=30
        )
        assert said == [
            "waiting for another import_db (or another writer) to finish: it holds the write "
            f"lock of the SQLite database {path}; nothing is written until it has"
        ]
        time.sleep(0.5)  # still waiting, not failed
        assert t.is_alive() and not result
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    t.join(60)
    assert not t.is_alive()
    assert not isinstance(result[0], Exception), result
    assert counts(lite)["find_db"] > 0
    # with a limit, an import that cannot get the lock gives up saying so
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(TunaError, match=r"gave up after 0.5 s waiting for the write lock"):
            import_db_files(lite, sid, files, lock_wait_s=0.5)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.mysql
def test_an_import_killed_with_sigkill_leaves_nothing(mysql_url: str, tmp_path: Path) -> None:
    """issue #24: ``kill -9`` of ``import_db --arch ...`` on MariaDB left an empty session and
    its solver rows: the session was committed before the import's transaction began."""
    from tuna.db import migrate, open_database
    from tuna.db.engine import make_engine

    engine = make_engine(mysql_url)
    with engine.begin() as conn:
        migrate.upgrade(conn)
    db = open_database(mysql_url)
    # a file large enough that the import's transaction lasts a while: the real sample's
    # records for 60 batch sizes
    lines = (MIOPEN_DATA / "gfx90a68.HIP.fdb.sample.txt").read_text().splitlines()
    big = tmp_path / "gfx90a68.HIP.fdb.txt"
    with big.open("w") as f:
        for n in range(1000, 1060):
            for line in lines:
                key, rest = line.split("=", 1)
                fields = key.split("-")
                fields[7 if "x" in fields[3] else 9] = str(n)  # the batch size
                f.write("-".join(fields) + "=" + rest + "\n")
    before = counts(db)
    env = {**os.environ, "TUNA_DB_URL": mysql_url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuna.cli", "import_db", str(big), "--arch", "gfx90a",
         "--num-cu", "104", "--backend", "miopen"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        with engine.connect() as conn:
            name = lock_name(conn.scalar(text("SELECT DATABASE()")))
            deadline = time.monotonic() + 120
            while conn.scalar(text("SELECT IS_USED_LOCK(:n)"), {"n": name}) is None:
                assert proc.poll() is None, proc.communicate()[0]
                assert time.monotonic() < deadline, "the import never took its lock"
                time.sleep(0.02)
            time.sleep(0.5)  # well inside its transaction
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            while conn.scalar(text("SELECT IS_USED_LOCK(:n)"), {"n": name}) is not None:
                assert time.monotonic() < deadline, "the killed import's lock stayed"
                time.sleep(0.05)
        assert proc.returncode == -signal.SIGKILL
        assert counts(db) == before
    finally:
        if proc.poll() is None:
            proc.kill()
        db.dispose()
        engine.dispose()
