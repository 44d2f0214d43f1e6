"""Bad input gets one ``Error: ...`` line and exit 1: never a traceback, never a silent surprise."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tuna.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
CONV = "./bin/MIOpenDriver conv -n 16 -c 64 -H 56 -W 56 -k 64 -y 1 -x 1 -F 1"


def test_query_db_on_a_file_that_is_not_utf8_names_the_line(runner, tmp_path):
    f = tmp_path / "net.txt"
    f.write_bytes(CONV.encode() + b"\n" + CONV.encode() + b" # caf\xe9\n")
    result = runner.invoke(main, ["query_db", "-f", str(f)])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: -f {f}: line 2 is not UTF-8 text (byte 0xe9); "
        "save it as UTF-8 or ASCII (MIOpenDriver lines are ASCII)\n"
    )


def test_import_configs_on_a_file_that_is_not_utf8_names_the_line(runner, tmp_path):
    f = tmp_path / "net.txt"
    f.write_bytes(b"\xff\xfe" + CONV.encode("utf-16-le"))
    result = runner.invoke(main, ["import_configs", "-t", "x", "-f", str(f)])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: -f {f}: ")
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["query_db"], ["import_configs", "-t", "x"]])
def test_a_directory_given_as_a_file_is_called_a_directory(runner, tmp_path, command):
    result = runner.invoke(main, [*command, "-f", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: -f {tmp_path}: is a directory; give a file of MIOpenDriver lines\n"
    )


@pytest.mark.parametrize("command", [["query_db"], ["import_configs", "-t", "x"]])
def test_a_binary_file_is_not_read_as_driver_lines(runner, tmp_path, command):
    f = tmp_path / "net.bin"
    f.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)))
    result = runner.invoke(main, [*command, "-f", str(f)])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: -f {f}: not a text file (it holds NUL bytes); give a file of MIOpenDriver lines\n"
    )


def test_query_db_skips_the_pool_lines_of_a_network_file_with_a_count(runner, tmp_path):
    net = tmp_path / "alexnet.txt"
    shutil.copy(DATA / "driver" / "alexnet.txt", net)
    result = runner.invoke(main, ["query_db", "-f", str(net)])
    assert result.exit_code == 0, result.output
    assert "Catalogue" in result.output
    assert result.output.count(" absent ") == 14  # the 14 conv lines, none imported
    assert result.output.endswith(
        "pool lines skipped: 3 (only convolution and batch-norm problems are in the catalogue)\n"
    )


def test_import_db_refuses_a_binary_file_up_front(runner, tmp_path):
    f = tmp_path / "gfx90a68.HIP.fdb.txt"
    f.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    result = runner.invoke(main, ["import_db", str(f), "--session", "1"])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: {f}: not a text or SQLite find/perf db (it holds binary data); import_db reads "
        "*.fdb.txt, *.db.txt, *.pdb.txt text files and *.db, *.udb SQLite perf dbs\n"
    )


def test_import_db_on_a_directory_says_so(runner, tmp_path):
    result = runner.invoke(main, ["import_db", str(tmp_path), "--session", "1"])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: {tmp_path}: is a directory; give MIOpen find or perf db files\n"
    )


@pytest.mark.parametrize("verb", ["reset", "requeue"])
def test_jobs_reset_and_requeue_of_a_missing_session_are_errors(runner, verb):
    result = runner.invoke(main, ["jobs", verb, "--session", "99"])
    assert result.exit_code == 1
    assert result.output == (
        "Error: session 99 does not exist; `tuna session list` shows the sessions\n"
    )


def test_sqlite_in_a_missing_directory_is_an_error(runner, monkeypatch, tmp_path):
    where = tmp_path / "nonexistent" / "dir"
    monkeypatch.setenv("TUNA_DB_URL", f"sqlite:///{where}/tuna.db")
    result = runner.invoke(main, ["session", "list"])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: TUNA_DB_URL: the directory {where} does not exist; create it, or leave "
        "TUNA_DB_URL unset for the embedded database in your data directory\n"
    )
    assert not where.exists()


def test_the_default_data_directory_is_created(bare_runner, tmp_path):
    assert not (tmp_path / "data").exists()
    result = bare_runner.invoke(main, ["session", "list"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "data" / "tuna.db").is_file()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"TUNA_DB_URL": "mysql://tuna:pw@head:abc/tuna"},
            "Error: TUNA_DB_URL: port 'abc' is not a number; expected e.g. "
            "mysql+pymysql://user:password@host:3306/tuna or sqlite:////path/tuna.db\n",
        ),
        (
            {
                "TUNA_DB_HOSTNAME": "head:abc",
                "TUNA_DB_NAME": "tuna",
                "TUNA_DB_USER_NAME": "tuna",
                "TUNA_DB_USER_PASSWORD": "pw",
            },
            "Error: TUNA_DB_HOSTNAME: port 'abc' is not a number; write host or host:port, "
            "e.g. head:3306\n",
        ),
    ],
)
def test_a_port_that_is_not_a_number_is_named(runner, monkeypatch, env, message):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    result = runner.invoke(main, ["session", "list"])
    assert result.exit_code == 1
    assert result.output == message


def test_a_database_url_naming_a_file_that_is_not_a_database_is_one_line(
    runner, monkeypatch, tmp_path
):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n" * 100)
    monkeypatch.setenv("TUNA_DB_URL", f"sqlite:///{notes}")
    result = runner.invoke(main, ["session", "list"])
    assert result.exit_code == 1, result.output
    assert result.output == (
        f"Error: cannot use database sqlite:///{notes}: file is not a database; "
        "TUNA_DB_URL must name a Tuna SQLite database, or a file that does not exist yet\n"
    )


def test_a_data_directory_that_is_a_file_is_one_line(bare_runner, monkeypatch, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    monkeypatch.setenv("TUNA_DATA_DIR", str(notes))
    result = bare_runner.invoke(main, ["session", "list"])
    assert result.exit_code == 1, result.output
    assert result.output == (
        f"Error: TUNA_DATA_DIR={notes} is a file, not a folder; name a folder (it is made if "
        "missing) or unset TUNA_DATA_DIR for your user's data folder\n"
    )
