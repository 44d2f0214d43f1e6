"""The examples through the queue: `tuna search create`, then go_fish with local workers.

examples/c_build_run compiles with the system cc; examples/server_tuning starts MariaDB
under sysbench (skipped where those are missing, failed there under bin/test, which installs
them). Each build is one compile-phase job, so the number of builds is the number of
distinct build tuples whatever the order the runs were proposed in.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.searches.helpers import builds, jobs_by_step_state, runs
from tuna.cli import main
from tuna.config import load_settings
from tuna.db import open_database
from tuna.searchers import load_base_config, load_parameter_file, replay
from tuna.searches.runrows import run_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def runner(tmp_path, monkeypatch) -> CliRunner:
    monkeypatch.setenv("TUNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> str:
    r = runner.invoke(main, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
def test_c_build_run_through_the_queue_builds_once_per_build_tuple(runner: CliRunner) -> None:
    ex = EXAMPLES / "c_build_run"
    invoke(runner, "session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "bench")
    out = invoke(
        runner, "search", "create", str(ex / "params.py"), "-s", "1", "--name", "c",
        "--base", str(ex / "base.json"), "--source", str(ex), "--stats", "json",
        "--build", "{cc} {opt} -DTILE={tile} -o bench bench.c", "--run", "./bench {n} {reps}",
        "--objective", "gflops", "--maximize", "--owns", "nothing",
    )  # fmt: skip
    assert "20 runs, 6 builds (naive order: 20)" in out
    out = invoke(runner, "go_fish", "-s", "1", "--search", "--local", "-w", "2")
    assert "search 1 done" in out
    db = open_database(load_settings().db_url)
    try:
        recorded = runs(db, 1)
        tuples = {(r.config["tile"], r.config["opt"]) for r in recorded}
        assert len(recorded) == 20 and all(r.valid for r in recorded), [r.reason for r in recorded]
        assert len(builds(db, 1)) == len(tuples) == 6
        assert jobs_by_step_state(db, 1) == {("build", "evaluated"): 6, ("run", "evaluated"): 20}
        assert all(r.value == r.stats["gflops"] > 0 for r in recorded)
    finally:
        db.dispose()
    out = invoke(runner, "search", "run", "-s", "1", "--search", "c")
    assert "search 1 'c': done; 20/20 runs finished (0 invalid), 6 builds; best gflops=" in out


TOOLS = ("mariadbd", "mariadb-install-db", "mariadb-admin", "mariadb", "sysbench")


def test_server_tuning_through_the_queue(runner: CliRunner) -> None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        if os.environ.get("TUNA_REQUIRE_EXAMPLE_TOOLS") == "1":
            pytest.fail(f"needs {', '.join(missing)}; TUNA_REQUIRE_EXAMPLE_TOOLS=1")
        pytest.skip(f"needs {', '.join(missing)} (Debian: mariadb-server, sysbench)")
    ex = EXAMPLES / "server_tuning"
    invoke(runner, "session", "create", "--arch", "cpu", "--num-cu", "1", "--backend", "bench")
    invoke(
        runner, "search", "create", str(ex / "params.py"), "seconds=1", "table_size=200",
        "-s", "1", "--name", "server", "--base", str(ex / "base.json"), "--source", str(ex),
        "--budget", "3", "--stats", "regex",
        "--stats-pattern", r"transactions:\s+\d+\s+\((?P<tps>[\d.]+) per sec",
        "--stats-pattern", r"95th percentile:\s+(?P<p95_ms>[\d.]+)",
        "--build", "./server.sh build {innodb_buffer_pool_mb} {innodb_flush_log_at_trx_commit} "
        "{table_size}",
        "--run", "./server.sh run {threads} {rate} {seconds}",
        "--run-timeout", "60", "--objective", "tps", "--maximize",
    )  # fmt: skip
    out = invoke(runner, "go_fish", "-s", "1", "--search", "--local", "-w", "2")
    assert "search 1 done" in out
    db = open_database(load_settings().db_url)
    try:
        recorded = runs(db, 1)
        assert len(recorded) == 3
        assert all(r.valid and r.stats["tps"] > 0 for r in recorded), [r.reason for r in recorded]
        # the Composer's points follow from the Runs it was sent, in proposal order
        space = load_parameter_file(ex / "params.py")
        base = load_base_config(ex / "base.json", ["seconds=1", "table_size=200"])
        sent = [run_of(r) for r in recorded]
        for k, r in enumerate(recorded):
            proposed = replay(space, sent[:k], base=base).next
            assert proposed is not None and proposed.point == r.point
        assert (recorded[0].config["rate"], recorded[0].config["threads"]) == (500, 1)
        assert len(builds(db, 1)) == len(
            {r.config["innodb_flush_log_at_trx_commit"] for r in recorded}
        )
    finally:
        db.dispose()
