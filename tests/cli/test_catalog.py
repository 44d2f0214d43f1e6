from __future__ import annotations

from tests.support import docs
from tuna.cli import main

LINE = "./bin/MIOpenDriver conv -n 128 -c 1024 -H 14 -W 14 -k 256 -y 1 -x 1 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1"  # noqa: E501
KEY = "1024-14-14-1x1-256-14-14-128-0x0-1x1-1x1-0-NCHW-FP32-F"


def test_import_configs_reports_what_it_did(runner, tmp_path):
    f = tmp_path / "net.txt"
    f.write_text(f"{LINE}\n\n{LINE.replace('-F 1', '-F 6')}\n")
    result = runner.invoke(main, ["import_configs", "-t", "net", "-f", str(f)])
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert out[0].startswith(f"{f} -> sqlite:///")
    assert [line.split() for line in out[1:]] == [
        ["lines", "read", "2"],
        ["distinct", "configs", "3"],
        ["inserted", "3"],
        ["already", "present", "0"],
        ["newly", "tagged", "'net'", "3"],
    ]
    again = runner.invoke(main, ["import_configs", "-t", "net", "-f", str(f)])
    assert "already present 3" in " ".join(again.output.split())


def test_a_bad_file_is_an_error_naming_line_and_flag(runner, tmp_path):
    f = tmp_path / "net.txt"
    f.write_text(f"{LINE}\n{LINE} -Q 4\n")
    result = runner.invoke(main, ["import_configs", "-t", "net", "-f", str(f)])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {f}: 1 bad line(s); nothing was imported:")
    assert "line 2:" in result.output and "-Q" in result.output
    query = runner.invoke(main, ["query_db", LINE])
    assert "absent" in query.output


def test_missing_file_is_a_clear_error(runner, tmp_path):
    result = runner.invoke(main, ["import_configs", "-t", "x", "-f", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "no such file" in result.output


def test_query_db_shows_key_tags_and_driver(runner):
    runner.invoke(main, ["import_configs", "-t", "resnet50", "-d", LINE])
    result = runner.invoke(main, ["query_db", KEY])
    assert result.exit_code == 0, result.output
    assert KEY in result.output and "resnet50" in result.output
    assert f"#1 driver {LINE}" in result.output
    assert "#1 perf-db key 2x1024x14x14x1x1x1x1x256x128x0x0x0x1x1x0x1x1x0x0x1xNCHWxFP32xF" in (
        result.output
    )


def test_db_commands(bare_runner, tmp_path):
    current = bare_runner.invoke(main, ["db", "current"])
    assert "revision (none)" in current.output and "needs `tuna db upgrade`" in current.output
    up = bare_runner.invoke(main, ["db", "upgrade"])
    assert up.exit_code == 0 and "upgraded (empty) -> " in up.output
    assert "up to date" in bare_runner.invoke(main, ["db", "current"]).output
    schema = tmp_path / "schema.sql"
    bare_runner.invoke(main, ["db", "schema", "-o", str(schema)])
    assert "CREATE TABLE job" in schema.read_text()
    assert bare_runner.invoke(main, ["db", "schema", "-o", str(schema), "--check"]).exit_code == 0
    schema.write_text("stale")
    stale = bare_runner.invoke(main, ["db", "schema", "-o", str(schema), "--check"])
    assert stale.exit_code == 1 and "is stale" in stale.output


def test_every_command_has_help_with_an_example(runner):
    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    for path, _cmd in walk(main, []):
        result = runner.invoke(main, [*path, "--help"])
        assert result.exit_code == 0, path
        assert "Example" in result.output, f"`tuna {' '.join(path)} --help` has no example"


def test_every_command_is_in_the_docs():
    written = "\n".join(p.read_text() for p in docs.pages())  # not the generated reference
    for name, _cmd in main.commands.items():
        assert name in written, f"`tuna {name}` is not documented in README.md or docs/"


def test_large_imports_draw_a_progress_bar_and_report_the_same(runner, tmp_path, monkeypatch):
    import tuna.cli.catalog as cli_catalog

    monkeypatch.setattr(cli_catalog, "PROGRESS_MIN_LINES", 1)
    f = tmp_path / "net.txt"
    f.write_text(f"{LINE}\n{LINE.replace('-F 1', '-F 2')}\n")
    result = runner.invoke(main, ["import_configs", "-t", "net", "-f", str(f)])
    assert result.exit_code == 0, result.output
    assert "inserted 2" in " ".join(result.output.split())


def test_query_db_reads_a_tab_separated_driver_line_as_import_configs_does(runner):
    """issue #24: query_db took a line without ' -' for a db key and refused it."""
    tabbed = "conv\t-n\t128\t-c\t1024\t-H\t14\t-W\t14\t-k\t256\t-y\t1\t-x\t1\t-F\t1"
    assert runner.invoke(main, ["import_configs", "-t", "tabs", "-d", tabbed]).exit_code == 0
    result = runner.invoke(main, ["query_db", tabbed])
    assert result.exit_code == 0, result.output
    assert KEY in result.output and "tabs" in result.output and "absent" not in result.output


def test_query_db_flags_a_key_only_record(runner, tmp_path):
    """A key MIOpen wrote that is no problem (issue #24: gfx906_60's legacy keys with 2D pads
    on 3D filters) is kept by import_db as a key-only record: query_db finds it and says so."""
    legacy = "256-14-14-4-1x1x1-1024-14-14-4-4-0x0-1x1x1-1x1x1-0-NCHW-FP32-B"
    f = tmp_path / "gfx906_60.OpenCL.fdb.txt"
    f.write_text(f"{legacy}=ConvOclBwdWrW1x1:0.1,0,miopenConvolutionBwdDataAlgoDirect\n")
    missing = runner.invoke(main, ["query_db", legacy])
    assert missing.exit_code == 0, missing.output
    assert "absent" in missing.output and "key only" in missing.output
    imported = runner.invoke(
        main, ["import_db", str(f), "--arch", "gfx906", "--num-cu", "60", "--backend", "miopen"]
    )
    assert imported.exit_code == 0, imported.output
    assert "key-only records 1" in " ".join(imported.output.split())
    result = runner.invoke(main, ["query_db", legacy])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "key only" in text and "absent" not in text
    assert "ConvOclBwdWrW1x1" in text and "miopenConvolutionBwdDataAlgoDirect" in text
    assert "#1 key only: Tuna cannot make a problem of this key" in text
    assert "'0x0' is not 3 values joined by 'x'" in text
    as_json = runner.invoke(main, ["query_db", legacy, "--json"])
    [report] = __import__("json").loads(as_json.output)
    assert report["key_only"] is True and report["config_id"] is None
    assert [r["solver"] for r in report["find"]] == ["ConvOclBwdWrW1x1"]
