from __future__ import annotations

from pathlib import Path

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


def test_every_command_is_in_the_readme():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for name, _cmd in main.commands.items():
        assert name in readme, f"`tuna {name}` is not documented in README.md"


def test_large_imports_draw_a_progress_bar_and_report_the_same(runner, tmp_path, monkeypatch):
    import tuna.cli.catalog as cli_catalog

    monkeypatch.setattr(cli_catalog, "PROGRESS_MIN_LINES", 1)
    f = tmp_path / "net.txt"
    f.write_text(f"{LINE}\n{LINE.replace('-F 1', '-F 2')}\n")
    result = runner.invoke(main, ["import_configs", "-t", "net", "-f", str(f)])
    assert result.exit_code == 0, result.output
    assert "inserted 2" in " ".join(result.output.split())
