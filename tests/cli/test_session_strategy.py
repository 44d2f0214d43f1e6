"""A session's default strategy (issue #16): ``tuna session create --strategy`` and the
``load_jobs`` that searches with it, is overridden per load, or queues perf jobs, on
SQLite and MariaDB."""

from __future__ import annotations

import json

import pytest

from tuna.cli import main
from tuna.cli.strategy import StrategyFlags

LINE = "MIOpenDriver conv -n 1 -c 16 -H 8 -W 8 -k 16 -y 1 -x 1 -F 1"
CPU = ["session", "create", "--arch", "cpu", "--num-cu", "2", "--backend", "cpuconv"]


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mysql)])
def cli(request, runner, monkeypatch):
    """The CLI on a database at the head revision, holding one config: the embedded SQLite
    one, or a MariaDB one from the pool (TUNA_DB_URL)."""
    if request.param == "mariadb":
        url = request.getfixturevalue("mysql_db").url
        monkeypatch.setenv("TUNA_DB_URL", url.render_as_string(hide_password=False))
    r = runner.invoke(main, ["import_configs", "-t", "net", "-d", LINE])
    assert r.exit_code == 0, r.output
    return runner


def _ok(cli, *args: str) -> str:
    r = cli.invoke(main, list(args))
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split())


def _sessions(cli) -> list[dict]:
    return json.loads(_ok(cli, "session", "list", "--json"))


def _searches(cli, session: str) -> list[str]:
    r = cli.invoke(main, ["search", "list", "-s", session, "--csv"])
    assert r.exit_code == 0, r.output
    return [ln for ln in r.output.splitlines() if "Cpu" in ln]


def test_a_session_s_strategy_is_load_jobs_default_and_a_load_overrides_it(cli):
    out = _ok(cli, *CPU, "--strategy", "random", "--budget", "10%", "--seed", "3")
    assert "default strategy: random budget 10% seed 3" in out
    (row,) = _sessions(cli)
    assert row["default_strategy"] == {
        "strategy": "random", "budget": 0.1, "patience": None, "seed": 3, "round_size": 8,
        "transfer": False,
    }  # fmt: skip
    assert "random budget 10% seed 3" in _ok(cli, "session", "list")
    assert "default strategy random budget 10% seed 3" in _ok(cli, "session", "show", "-s", "1")
    shown = json.loads(_ok(cli, "session", "show", "-s", "1", "--json"))
    assert shown["default_strategy"] == row["default_strategy"]

    out = _ok(cli, "load_jobs", "-t", "net", "-s", "1")
    assert "session 1's default strategy: random budget 10% seed 3" in out
    assert "searches created 3" in out
    assert len(_searches(cli, "1")) == 3 and all("random" in s for s in _searches(cli, "1"))

    out = _ok(cli, "load_jobs", "-t", "net", "-s", "1", "--strategy", "grid")
    assert "searches created 3" in out and "default strategy" not in out
    assert sum("grid" in s for s in _searches(cli, "1")) == 3

    out = _ok(cli, "load_jobs", "-t", "net", "-s", "1", "--strategy", "none")
    assert "session 1, step perf:" in out and "jobs queued 4" in out  # every solver, as before
    assert len(_searches(cli, "1")) == 6  # no search more


def test_a_session_without_a_strategy_loads_perf_jobs_as_before(cli):
    _ok(cli, *CPU)
    assert _sessions(cli)[0]["default_strategy"] == {}
    assert "default strategy -" in _ok(cli, "session", "show", "-s", "1")
    assert "jobs queued 4" in _ok(cli, "load_jobs", "-t", "net", "-s", "1")
    assert _searches(cli, "1") == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "annealing"], "Error: unknown strategy 'annealing'"),
        (["--strategy", "none"], "Error: unknown strategy 'none'"),
        (["--strategy", "random", "--budget", "0"], "Error: budget 0: give a count"),
        (["--strategy", "random", "--transfer"], "Error: --transfer is for the model and sliced"),
        (["--strategy", "random", "--round-size", "0"], "Error: --round-size 0: give at least"),
        (["--budget", "16"], "Error: --budget, --seed and --round-size go with --strategy NAME"),
        (["--patience", "4"],
         "Error: --transfer, --remeasure and --patience go with --strategy NAME"),
        (["--strategy", "random", "--backend", "miopen"],
         "Error: --strategy: strategies search the spaces of cpuconv, cuda, noop, not of --backend "
         "miopen"),
    ],
)  # fmt: skip
def test_bad_session_strategy_flags_say_so_in_one_line_and_store_nothing(cli, args, message):
    r = cli.invoke(main, [*CPU, *args])
    assert r.exit_code == 1, r.output
    assert r.output.startswith(message), r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
    assert _sessions(cli) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "none", "--budget", "8"], "Error: --strategy none queues perf jobs"),
        (["--force"], "Error: session 1 searches by strategy (random, its default)"),
        (["--transfer"], "Error: --transfer is for the model and sliced strategies; 'random'"),
        (["--budget", "1000"], "Error: a budget of 1000 measurements is above the space's"),
    ],
)  # fmt: skip
def test_bad_load_flags_on_a_strategy_session_store_nothing(cli, args, message):
    _ok(cli, *CPU, "--strategy", "random")
    r = cli.invoke(main, ["load_jobs", "-t", "net", "-s", "1", "--solvers", "CpuGemm1x1", *args])
    assert r.exit_code == 1, r.output
    assert r.output.startswith(message), r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
    assert _searches(cli, "1") == []


def test_flags_given_override_the_session_s_one_by_one():
    default = {"strategy": "model", "budget": 0.1, "patience": 8, "seed": 2, "round_size": 4,
               "transfer": True}  # fmt: skip
    options = StrategyFlags(None, "32", None, 5, None, False).resolve(default)
    assert options is not None and options.to_json() == {**default, "budget": 32, "seed": 5}
    options = StrategyFlags("random").resolve(default)
    assert options is not None and options.to_json() == {
        "strategy": "random", "budget": None, "patience": None, "seed": 0, "round_size": 8,
        "transfer": False,
    }  # fmt: skip
    assert StrategyFlags("none").resolve(default) is None


def test_search_create_without_strategy_takes_the_session_s_default(cli):
    _ok(cli, *CPU, "--strategy", "random", "--budget", "10%", "--seed", "3")
    out = _ok(cli, "search", "create", "-s", "1", "--name", "d", "--config", "1",
              "--solver", "CpuGemm1x1", "--seed", "5")  # fmt: skip
    assert "session 1's default strategy: random budget 10% seed 5" in out
    assert "search 1 'd' in session 1: random over CpuGemm1x1 on config 1" in out
    shown = _ok(cli, "search", "show", "1")
    assert "random" in shown, shown


def test_search_create_without_strategy_on_a_session_without_one_says_so(cli):
    _ok(cli, *CPU)
    r = cli.invoke(main, ["search", "create", "-s", "1", "--name", "d", "--config", "1",
                          "--solver", "CpuGemm1x1"])  # fmt: skip
    assert r.exit_code == 1, r.output
    assert r.output.startswith(
        "Error: --config and --solver go with --strategy NAME (session 1 has no default strategy)"
    ), r.output
    assert _searches(cli, "1") == []


def test_load_jobs_by_strategy_takes_min_trials_and_says_what_it_skipped(cli):
    """Issue #24: `load_jobs --strategy ... --min-trials N` was refused."""
    _ok(cli, *CPU, "--strategy", "random")
    args = ["load_jobs", "-t", "net", "-s", "1", "--solvers", "CpuGemm1x1", "--min-trials", "3"]
    r = cli.invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "skipped: >= 3 measurements that count" in r.output
    created = _searches(cli, "1")
    again = cli.invoke(main, args)
    assert again.exit_code == 0 and _searches(cli, "1") == created  # nothing created twice
