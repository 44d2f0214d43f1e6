from __future__ import annotations

import json

from tests.fleet.sshd import sshd_fixture  # noqa: F401  (the sshd fixture)
from tuna.cli import main


def test_machine_add_list_set_remove(runner):
    r = runner.invoke(
        main,
        [
            "machine",
            "add",
            "gpu-01",
            "--user",
            "tuna",
            "-a",
            "gfx90a",
            "-n",
            "104",
            "--gpus",
            "0,1",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "machine 1: gpu-01:22 registered" in r.output
    r = runner.invoke(
        main, ["machine", "add", "10.0.0.7", "--port", "2222", "--docker", "compile_workers=16"]
    )
    assert r.exit_code == 0, r.output
    listed = runner.invoke(main, ["machine", "list"])
    assert "gpu-01" in listed.output and "gfx90a" in listed.output and "0,1" in listed.output
    assert "never" in listed.output  # last seen: go_fish has not reached it yet
    data = json.loads(runner.invoke(main, ["machine", "list", "--json"]).output)
    assert [(m["hostname"], m["port"], m["gpus"]) for m in data] == [
        ("gpu-01", 22, [0, 1]),
        ("10.0.0.7", 2222, []),
    ]
    assert data[1]["docker_settings"] == {"compile_workers": 16}
    assert data[1]["last_seen"] is None
    r = runner.invoke(main, ["machine", "set", "gpu-01", "--unavailable", "--gpus", "0,1,2,3"])
    assert r.exit_code == 0, r.output
    assert "no" in r.output and "0,1,2,3" in r.output
    r = runner.invoke(main, ["machine", "remove", "2"])
    assert r.exit_code == 0 and "(10.0.0.7:2222) removed" in r.output
    assert "10.0.0.7" not in runner.invoke(main, ["machine", "list"]).output


def test_machine_errors_say_what_to_do(runner):
    r = runner.invoke(main, ["machine", "add", "gpu-01", "--gpus", "zero"])
    assert r.exit_code != 0 and "GPU indices separated by commas" in r.output
    r = runner.invoke(main, ["machine", "add", "gpu-01", "--docker", "workers=3"])
    assert r.exit_code != 0 and "KEY one of docker, compile_workers" in r.output
    r = runner.invoke(main, ["machine", "set", "7", "--unavailable"])
    assert r.exit_code != 0 and "tuna machine list" in r.output
    r = runner.invoke(main, ["machine", "set", "7"])
    assert r.exit_code != 0 and "say what to change" in r.output


def test_go_fish_without_a_task_or_machines_says_what_to_do(runner):
    r = runner.invoke(main, ["go_fish", "--session", "1"])
    assert r.exit_code != 0 and "-e CMD or --status" in r.output
    r = runner.invoke(main, ["go_fish", "-e", "uptime"])
    assert r.exit_code != 0 and "tuna machine add" in r.output
    r = runner.invoke(main, ["go_fish", "--compile"])
    assert r.exit_code != 0 and "--session is needed" in r.output


def test_go_fish_on_machines_refuses_the_embedded_database(runner):
    runner.invoke(main, ["machine", "add", "gpu-01"])
    runner.invoke(
        main, ["session", "create", "--arch", "cpu", "--num-cu", "2", "--backend", "noop"]
    )
    r = runner.invoke(main, ["go_fish", "--session", "1", "--compile", "--image", "x"])
    assert r.exit_code != 0 and "embedded SQLite database is only for --local" in r.output


def test_machine_trust_adds_the_fetched_key(runner, sshd, tmp_path):
    known = tmp_path / "known_hosts"
    runner.invoke(main, ["machine", "add", "127.0.0.1", "--port", str(sshd.port)])
    r = runner.invoke(main, ["machine", "trust", "1", "--known-hosts", str(known)], input="n\n")
    assert r.exit_code == 1 and "presents ssh-ed25519 SHA256:" in r.output
    assert not known.exists()
    r = runner.invoke(main, ["machine", "trust", "1", "--known-hosts", str(known), "--yes"])
    assert r.exit_code == 0, r.output
    assert known.read_text() == sshd.known_hosts.read_text()


def test_a_malformed_worker_database_url_is_named(runner, monkeypatch):
    runner.invoke(main, ["machine", "add", "gpu-01"])
    monkeypatch.setenv("TUNA_WORKER_DB_URL", "not a url")
    r = runner.invoke(main, ["go_fish", "--session", "1", "--compile", "--image", "x"])
    assert r.exit_code == 1 and "TUNA_WORKER_DB_URL is not a database URL" in r.output, r.output


def test_machine_platform_json_is_kept_shown_and_replaced(runner, tmp_path):
    first = tmp_path / "node.json"
    first.write_text('{"cooling": "liquid", "rack": 7}')
    r = runner.invoke(main, ["machine", "add", "gpu-01", "--platform-json", str(first)])
    assert r.exit_code == 0, r.output
    shown = runner.invoke(main, ["machine", "show", "gpu-01"])
    assert shown.exit_code == 0, shown.output
    assert '"cooling": "liquid"' in shown.output
    assert "platform: none reported yet" in shown.output
    second = tmp_path / "again.json"
    second.write_text('{"cooling": "air"}')
    r = runner.invoke(main, ["machine", "set", "1", "--platform-json", str(second)])
    assert r.exit_code == 0, r.output
    data = json.loads(runner.invoke(main, ["machine", "show", "1", "--json"]).output)
    assert data["user_platform"] == {"cooling": "air"}
    assert data["platform"] is None and data["platform_info"] is None


def test_machine_show_shows_the_platform_its_worker_reported(runner):
    from tuna.db import open_database
    from tuna.platforms import report_platform

    assert runner.invoke(main, ["machine", "add", "gpu-01"]).exit_code == 0
    db = open_database()
    try:
        pid = report_platform(
            db, {"cpu": {"model": "EPYC 9654", "flags": ["avx2", "fma"]}}, machine=1
        )
    finally:
        db.dispose()
    shown = runner.invoke(main, ["machine", "show", "1"])
    assert shown.exit_code == 0, shown.output
    assert f"platform {pid}:" in shown.output and '"model": "EPYC 9654"' in shown.output
    assert '"flags": "avx2 fma"' in shown.output  # on one line for a person
    data = json.loads(runner.invoke(main, ["machine", "show", "1", "--json"]).output)
    assert data["platform_info"]["cpu"]["flags"] == ["avx2", "fma"]  # a list for a program


def test_malformed_machine_platform_json_names_the_file_and_position(runner, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"cooling": liquid}')
    r = runner.invoke(main, ["machine", "add", "gpu-01", "--platform-json", str(bad)])
    assert r.exit_code == 1
    assert f"Error: {bad}:1:13: malformed platform JSON" in r.output
    assert "Traceback" not in r.output
    assert "gpu-01" not in runner.invoke(main, ["machine", "list"]).output


def test_session_create_takes_platform_json_and_refuses_a_malformed_one(runner, tmp_path):
    create = ["session", "create", "--arch", "cpu", "--num-cu", "2", "--backend", "noop"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"cooling": "liquid"')
    r = runner.invoke(main, [*create, "--platform-json", str(bad)])
    assert r.exit_code == 1 and f"Error: {bad}:1:21: malformed platform JSON" in r.output
    good = tmp_path / "good.json"
    good.write_text('{"cooling": "liquid"}')
    r = runner.invoke(main, [*create, "--platform-json", str(good)])
    assert r.exit_code == 0, r.output
    listed = json.loads(runner.invoke(main, ["session", "list", "--json"]).output)
    assert [s["user_platform"] for s in listed] == [{"cooling": "liquid"}]
