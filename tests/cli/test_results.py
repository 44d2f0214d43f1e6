"""export_db, import_db, merge_db and update_golden on the command line (SQLite default db)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tuna.cli import main

K1 = "64-56-56-1x1-64-56-56-16-0x0-1x1-1x1-0-NCHW-FP32-F"
K3 = "64-56-56-3x3-64-56-56-16-1x1-1x1-1x1-0-NCHW-FP32-F"
FIND = (
    f"{K1}=NoopGemm1x1:0.25,1024,gemm;NoopTunable:0.25,0,implicit_gemm;NoopDirect:0.5,0,direct\n"
    f"{K3}=NoopWinograd3x3:0.75,4096,winograd;NoopDirect:1.5,0,direct\n"
)
SHARED = Path(__file__).resolve().parents[1] / "data" / "miopen"


def lines_of(text: str) -> list[str]:
    """The output's lines with runs of spaces (table padding) made one, and a terminal's
    styles (italics under NO_COLOR) taken out."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return [" ".join(line.split()) for line in plain.splitlines()]


@pytest.fixture
def seeded(runner, tmp_path) -> Path:
    """Session 1 (noop, gfx90a, 104 CUs) holding the rows of FIND, imported with import_db."""
    f = tmp_path / "seed.HIP.fdb.txt"
    f.write_text(FIND)
    result = runner.invoke(
        main,
        ["import_db", str(f), "--arch", "gfx90a", "--num-cu", "104", "--backend", "noop"],
    )
    assert result.exit_code == 0, result.output
    return f


@pytest.mark.parametrize("command", ["export_db", "import_db", "merge_db", "update_golden"])
def test_every_command_has_an_example(runner, command):
    result = runner.invoke(main, [command, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.output and f"  {command} " in result.output


def test_import_db_reports_what_it_read(runner, seeded):
    result = runner.invoke(main, ["import_db", str(seeded), "--session", "1", "-t", "seed"])
    assert result.exit_code == 0, result.output
    assert lines_of(result.output) == [
        "into session 1:",
        "file format records entries bad",
        f"{seeded} find-text 2 5 0",
        "configs 2 (0 new), find rows 5, perf rows 0",
    ]


def test_export_db_writes_the_file_and_says_where(runner, seeded, tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(main, ["export_db", "--session", "1", "--find_db", "-o", str(out)])
    assert result.exit_code == 0, result.output
    path = out / "gfx90a68.HIP.fdb.txt"
    assert path.read_text() == FIND
    assert lines_of(result.output) == [
        "find db of session 1 (gfx90a, 104 CUs): 5 rows checked, 2 keys",
        "file records entries bytes sha256",
        f"{path} 2 5 {len(FIND)} {hashlib.sha256(FIND.encode()).hexdigest()}",
        f"manifest {path}.manifest.json",
    ]


def test_export_db_needs_one_kind_and_refuses_bad_rows(runner, tmp_path):
    f = tmp_path / "bad.HIP.fdb.txt"
    f.write_text(f"{K3}=NoopGemm1x1:-1,0,gemm\n")
    new_session = ["--arch", "gfx90a", "--num-cu", "104", "--backend", "noop"]
    result = runner.invoke(main, ["import_db", str(f), *new_session])
    assert result.exit_code == 1
    assert result.output.splitlines()[:2] == [
        "Error: 1 bad record(s); nothing was imported:",
        f"  {f}:1: find-db entry NoopGemm1x1:-1,0,gemm: time -1 is negative",
    ]
    f.write_text(f"{K3}=NoopGemm1x1:1,0,gemm\n")  # a time, but a solver that does not apply
    result = runner.invoke(main, ["import_db", str(f), *new_session])
    assert result.exit_code == 0, result.output
    assert "created session 1" in result.output  # the refused import left no session
    result = runner.invoke(main, ["export_db", "--session", "1"])
    assert result.exit_code == 1
    assert "give one or more of -f/--find_db, -p/--perf_db, -k/--kern_db" in result.output
    result = runner.invoke(main, ["export_db", "--session", "1", "-f", "-o", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "Error: find db of session 1: 1 row(s) failed the export checks; nothing was written:",
        f"  {K3} NoopGemm1x1: not applicable for backend 'noop': filter is not 1x1",
        "Re-tune or drop the rows above (or export from another session or golden version).",
    ]
    assert not (tmp_path / "o").exists()


def test_update_golden_lists_slower_keys(runner, seeded, tmp_path, monkeypatch):
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # as on a terminal: box-drawn tables
    monkeypatch.setenv("NO_COLOR", "1")  # colours dropped; the caption's italics stay (lines_of)
    result = runner.invoke(main, ["update_golden", "--golden_v", "1", "--session", "1"])
    assert result.exit_code == 0, result.output
    assert result.output == (
        "golden version 1 (no parent): gfx90a 104 CUs, 5 rows (5 from session 1), 2 keys\n"
    )
    again = runner.invoke(main, ["update_golden", "--golden_v", "1", "--session", "1"])
    assert again.exit_code == 1 and "golden version 1 exists" in again.output
    slower = tmp_path / "slower.HIP.fdb.txt"
    slower.write_text(f"{K1}=NoopGemm1x1:0.5,1024,gemm;NoopTunable:0.4,0,implicit_gemm\n")
    runner.invoke(main, ["import_db", str(slower), "--arch", "gfx90a", "--num-cu", "104",
                         "--backend", "noop"])  # fmt: skip
    result = runner.invoke(
        main, ["update_golden", "--golden_v", "2", "--session", "2", "--base_golden_v", "1"]
    )
    assert result.exit_code == 0, result.output
    lines = lines_of(result.output)
    assert lines[:2] == [
        "golden version 2 (parent 1): gfx90a 104 CUs, 5 rows (3 carried from 1, 2 from "
        "session 2), 2 keys",
        "1 key(s) slower than golden version 1 by more than 10%",
    ]
    assert lines[3] == "┃ key ┃ parent solver ┃ parent ms ┃ solver ┃ ms ┃ slower ┃"
    assert lines[5] == f"│ {K1} │ NoopGemm1x1 │ 0.25 │ NoopTunable │ 0.4 │ 60.0% │"


def test_merge_db_layers_a_user_db(runner, tmp_path):
    out = tmp_path / "gfx90a68.HIP.fdb.txt"
    result = runner.invoke(
        main,
        [
            "merge_db",
            "-m",
            str(SHARED / "old_gfx90a68.HIP.fdb.txt"),
            "-t",
            str(SHARED / "usr_gfx90a68.HIP.fdb.txt"),
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert lines_of(result.output) == [
        f"{out}: 5 records, 16 entries (find-text)",
        "base 4 records, top 4: 3 in both, 1 added",
    ]


def test_export_db_writes_several_kinds_in_one_call(runner, seeded, tmp_path):
    perf = tmp_path / "seed.pdb.txt"
    perf.write_text(f"{K1}=NoopTunable:4,4\n")
    assert runner.invoke(main, ["import_db", str(perf), "-s", "1"]).exit_code == 0
    out = tmp_path / "out"
    result = runner.invoke(main, ["export_db", "-s", "1", "-f", "-p", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "gfx90a68.HIP.fdb.txt",
        "gfx90a68.HIP.fdb.txt.manifest.json",
        "gfx90a68.db",
        "gfx90a68.db.manifest.json",
        "gfx90a68.db.txt",
    ]
    assert (out / "gfx90a68.HIP.fdb.txt").read_text() == FIND
    assert (out / "gfx90a68.db.txt").read_text().endswith("=NoopTunable:4,4\n")
    lines = lines_of(result.output)
    assert lines[0] == "find db of session 1 (gfx90a, 104 CUs): 5 rows checked, 2 keys"
    assert f"manifest {out}/gfx90a68.db.manifest.json" in lines


def test_export_db_of_several_kinds_writes_nothing_when_one_is_refused(runner, seeded, tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(main, ["export_db", "-s", "1", "-f", "-p", "-o", str(out)])
    assert result.exit_code == 1
    assert result.output == "Error: nothing to export: session 1 has no perf results\n"
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".export_db")] == []


def test_export_db_of_a_golden_version_needs_no_arch(runner, seeded, tmp_path):
    assert runner.invoke(main, ["update_golden", "--golden_v", "1", "-s", "1"]).exit_code == 0
    out = tmp_path / "g"
    result = runner.invoke(main, ["export_db", "--golden_v", "1", "-f", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "gfx90a68.HIP.fdb.txt").read_text() == FIND
    wrong = runner.invoke(main, ["export_db", "--golden_v", "1", "-f", "-a", "gfx906"])
    assert wrong.exit_code == 1
    assert wrong.output == "Error: golden version 1 holds gfx90a 104 CUs, not gfx906\n"


def test_session_create_sets_the_runtime_an_export_names(runner, tmp_path):
    created = runner.invoke(
        main,
        ["session", "create", "--arch", "gfx906", "--num-cu", "60", "--backend", "noop",
         "--runtime", "opencl"],
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    assert "runtime OpenCL" in created.output
    f = tmp_path / "seed.fdb.txt"  # a name that says no runtime: the session's is kept
    f.write_text(FIND)
    imported = runner.invoke(main, ["import_db", str(f), "--session", "1"])
    assert imported.exit_code == 0, imported.output
    out = tmp_path / "out"
    exported = runner.invoke(main, ["export_db", "--session", "1", "--find_db", "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert (out / "gfx906_60.OpenCL.fdb.txt").read_text() == FIND
    # a HIP session refuses OpenCL files, as a session import_db made HIP does
    hip = runner.invoke(
        main,
        ["session", "create", "--arch", "gfx906", "--num-cu", "60", "--backend", "noop",
         "--runtime", "HIP"],
    )  # fmt: skip
    assert hip.exit_code == 0, hip.output
    ocl = tmp_path / "gfx906_60.OpenCL.fdb.txt"
    ocl.write_text(FIND)
    refused = runner.invoke(main, ["import_db", str(ocl), "--session", "2"])
    assert refused.exit_code != 0
    assert "holds MIOpen HIP results; the files are OpenCL" in refused.output
    bad = runner.invoke(
        main,
        ["session", "create", "--arch", "gfx906", "--num-cu", "60", "--backend", "noop",
         "--runtime", "CUDA"],
    )  # fmt: skip
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert "Invalid value for '--runtime': 'CUDA' is not one of" in bad.output


def test_merge_db_refuses_an_output_directory_that_does_not_exist(runner, tmp_path):
    """issue #24: ``merge_db -o /nonexistent/dir/m.fdb.txt`` created the directory."""
    out = tmp_path / "nonexistent" / "dir" / "m.fdb.txt"
    result = runner.invoke(
        main,
        ["merge_db", "-m", str(SHARED / "old_gfx90a68.HIP.fdb.txt"),
         "-t", str(SHARED / "usr_gfx90a68.HIP.fdb.txt"), "-o", str(out)],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert lines_of(result.output) == [
        f"Error: -o {out}: directory {out.parent} does not exist; create it first"
    ]
    assert not out.parent.parent.exists()


@pytest.mark.parametrize("version", ["-1", "0"])
def test_update_golden_refuses_a_version_below_1(runner, seeded, version):
    """issue #24: ``update_golden --golden_v -1`` made version -1."""
    result = runner.invoke(main, ["update_golden", "--golden_v", version, "--session", "1"])
    assert result.exit_code == 2, result.output
    assert f"'--golden_v' / '--golden-v': {version} is not in the range 1<=x<=" in result.output


def test_export_db_opencl_of_a_cpu_session_is_refused(runner, tmp_path):
    """issue #24: ``export_db -c`` of a CPU session wrote a file silently; a find db's runtime
    field names MIOpen's GPU runtime, which a CPU arch has not (miopen_formats.md §4.1)."""
    f = tmp_path / "seed.fdb.txt"
    f.write_text(FIND)
    created = runner.invoke(
        main, ["import_db", str(f), "--arch", "x86_64-avx2", "--num-cu", "16", "--backend", "noop"]
    )
    assert created.exit_code == 0, created.output
    out = tmp_path / "out"
    result = runner.invoke(main, ["export_db", "--session", "1", "-f", "-c", "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert lines_of(result.output) == [
        "Error: -c/--opencl: session 1 tuned x86_64-avx2, not a GPU: its find db is "
        "x86_64-avx2_16.fdb.txt, with no runtime in the name (HIP and OpenCL are MIOpen's GPU "
        "runtimes); leave out -c"
    ]
    assert not out.exists()


@pytest.mark.parametrize("where", ["/proc/x", "/proc/version/x"])
def test_export_db_to_a_directory_it_cannot_write_is_one_line(runner, seeded, where):
    """issue #24: ``export_db -o /proc/x`` ended in a traceback."""
    result = runner.invoke(main, ["export_db", "--session", "1", "-f", "-o", where])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and len(result.output.splitlines()) == 1
    assert result.output.startswith(f"Error: -o {where}: cannot write the files there (")
