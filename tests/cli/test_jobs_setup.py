from __future__ import annotations

from tuna.cli import main

LINE = "MIOpenDriver conv -n 4 -c 64 -H 14 -W 14 -k 64 -y 1 -x 1 -F 1"


def test_session_create_list_and_load_jobs(runner):
    created = runner.invoke(
        main,
        [
            "session",
            "create",
            "--arch",
            "cpu",
            "--num-cu",
            "2",
            "--backend",
            "noop",
            "-l",
            "first try",
            "--env",
            "A=1",
        ],
    )
    assert created.exit_code == 0, created.output
    assert created.output.startswith("session 1: cpu 2 CUs, backend noop, fingerprint ")
    listed = runner.invoke(main, ["session", "list"])
    assert "first try" in listed.output and "noop" in listed.output
    runner.invoke(main, ["import_configs", "-t", "net", "-d", LINE])
    loaded = runner.invoke(main, ["load_jobs", "-t", "net", "--session", "1", "--step", "perf"])
    assert loaded.exit_code == 0, loaded.output
    words = " ".join(loaded.output.split())
    assert "jobs queued 3" in words
    assert "not applicable: filter is not 3x3 with stride 1 1" in words
    assert "queued per solver: NoopDirect 1, NoopGemm1x1 1, NoopTunable 1" in words


def test_session_and_load_errors(runner):
    bad_env = runner.invoke(
        main,
        [
            "session",
            "create",
            "--arch",
            "x",
            "--num-cu",
            "1",
            "--backend",
            "noop",
            "--env",
            "novalue",
        ],
    )
    assert bad_env.exit_code == 1 and "KEY=VALUE" in bad_env.output
    unknown = runner.invoke(
        main, ["session", "create", "--arch", "x", "--num-cu", "1", "--backend", "rocm9"]
    )
    assert unknown.exit_code == 1 and "Error:" in unknown.output and "noop" in unknown.output
    missing = runner.invoke(main, ["load_jobs", "-t", "net", "--session", "7"])
    assert missing.exit_code == 1
    assert "Error: session 7 does not exist" in missing.output
