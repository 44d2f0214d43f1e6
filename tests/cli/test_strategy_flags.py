"""``--strategy`` and its flags on ``load_jobs`` and ``tuna search create`` (issue #16)."""

from __future__ import annotations

import pytest

from tuna.cli import main

LINE = "MIOpenDriver conv -n 1 -c 16 -H 8 -W 8 -k 16 -y 1 -x 1 -F 1"


@pytest.fixture
def cpuconv(runner):
    for args in (
        ["session", "create", "--arch", "cpu", "--num-cu", "2", "--backend", "cpuconv"],
        ["import_configs", "-t", "net", "-d", LINE],
    ):
        r = runner.invoke(main, args)
        assert r.exit_code == 0, r.output
    return runner


def test_load_jobs_strategy_makes_one_search_per_applicable_tunable_solver(cpuconv):
    args = ["load_jobs", "-t", "net", "-s", "1", "--strategy", "random", "--budget", "10%"]
    r = cpuconv.invoke(main, args)
    assert r.exit_code == 0, r.output
    words = " ".join(r.output.split())
    # 1x1 stride 1: the two GEMM solvers and the tiled direct one; Winograd needs 3x3
    assert "searches created 3" in words
    assert "not applicable: CpuWinograd2x3 1" in words
    again = cpuconv.invoke(main, args)
    assert "searches created 0 already created 3" in " ".join(again.output.split())
    listed = cpuconv.invoke(main, ["search", "list", "-s", "1", "--csv"])
    assert listed.output.count("random Cpu") == 3


def test_transfer_without_history_says_so_and_falls_back(cpuconv):
    r = cpuconv.invoke(
        main,
        ["load_jobs", "-t", "net", "-s", "1", "--solvers", "CpuGemm1x1", "--strategy", "model",
         "--transfer", "--budget", "16"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert (
        "model CpuGemm1x1 config 1: transfer: no compatible history (no measurements of other "
        "problems were given); the model learns from this problem's measurements alone"
    ) in " ".join(r.output.split())


def test_remeasure_is_kept_with_the_search_it_asks_for(cpuconv):
    r = cpuconv.invoke(
        main,
        ["load_jobs", "-t", "net", "-s", "1", "--solvers", "CpuGemm1x1", "--strategy", "random",
         "--budget", "8", "--remeasure"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    plain = cpuconv.invoke(
        main,
        ["search", "create", "-s", "1", "--name", "p", "--strategy", "random", "--config", "1",
         "--solver", "CpuGemm1x1", "--budget", "8"],
    )  # fmt: skip
    assert plain.exit_code == 0, plain.output
    from sqlalchemy import select

    from tuna.cli.base import database
    from tuna.db.models import Search

    db = database()
    try:
        with db.session() as s:
            specs = {row.name: row.spec for row in s.scalars(select(Search))}
    finally:
        db.dispose()
    assert specs["random CpuGemm1x1 config 1"]["remeasure"] is True
    assert "remeasure" not in specs["p"]  # not asked: stored as before the flag existed


def test_search_create_strategy(cpuconv):
    r = cpuconv.invoke(
        main,
        ["search", "create", "-s", "1", "--name", "m", "--strategy", "grid", "--config", "1",
         "--solver", "CpuGemm1x1", "--budget", "16", "--patience", "4"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert r.output.startswith("search 1 'm' in session 1: grid over CpuGemm1x1 on config 1")


def test_a_strategy_search_takes_objectives_constraints_and_a_time_budget(cpuconv):
    r = cpuconv.invoke(
        main,
        ["load_jobs", "-t", "net", "-s", "1", "--solvers", "CpuGemm1x1", "--strategy", "nsga2",
         "--budget", "16", "--objective", "time_ms:min", "--objective", "threads:min",
         "--constraint", "workspace_bytes <= 0", "--time-budget", "2h"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    r = cpuconv.invoke(
        main,
        ["search", "create", "-s", "1", "--name", "t", "--strategy", "tpe", "--config", "1",
         "--solver", "CpuGemm1x1", "--objective", "time_ms", "--objective", "threads:min",
         "--time-budget", "10m"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    shown = cpuconv.invoke(main, ["search", "show", "1"])
    assert "objectives minimise time_ms, minimise threads" in shown.output, shown.output
    assert "workspace_bytes <= 0" in shown.output and "time budget 2h" in shown.output
    shown = cpuconv.invoke(main, ["search", "show", "2"])
    assert "minimise time_ms, minimise threads" in shown.output and "budget 10m" in shown.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "annealing"], "Error: unknown strategy 'annealing'; the strategies are "
         "exhaustive, random, grid, hillclimb, genetic, model"),
        (["--strategy", "random", "--budget", "0"], "Error: budget 0: give a count"),
        (["--strategy", "random", "--budget", "lots"], "Error: budget 'lots': give a count"),
        (["--strategy", "random", "--budget", "200%"], "Error: budget 2: a share of the space"),
        (["--strategy", "random", "--transfer"], "Error: --transfer is for the model and sliced"),
        (["--transfer"], "Error: --transfer, --remeasure and --patience go with --strategy NAME"),
        (["--remeasure"], "Error: --transfer, --remeasure and --patience go with --strategy NAME"),
        (["--strategy", "none", "--remeasure"], "Error: --strategy none queues perf jobs: "
         "leave out --budget, --patience, --seed, --round-size, --transfer and --remeasure"),
        (["--strategy", "random", "--step", "find"], "Error: --strategy searches a tunable"),
        (["--strategy", "random", "--budget", "1000"],
         "Error: a budget of 1000 measurements is above the space's"),
        (["--objective", "threads:min"], "Error: --objective, --constraint and --time-budget go "
         "with --strategy NAME"),
        (["--strategy", "nsga2", "--objective", "time_ms", "--objective", "gflops:max"],
         "Error: objective or constraint stat 'gflops': the runs of a strategy search of "
         "CpuGemm1x1 on config 1 have the stats time_ms, threads, workspace_bytes"),
        (["--strategy", "tpe", "--constraint", "threads <"], "Error: constraint 'threads <'"),
        (["--strategy", "tpe", "--time-budget", "soon"], "Error: time budget 'soon'"),
    ],
)  # fmt: skip
def test_bad_strategy_flags_say_so_in_one_line_and_write_nothing(cpuconv, args, message):
    r = cpuconv.invoke(
        main, ["load_jobs", "-t", "net", "-s", "1", "--solvers", "CpuGemm1x1", *args]
    )
    assert r.exit_code == 1, r.output
    assert r.output.startswith(message), r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
    listed = cpuconv.invoke(main, ["search", "list", "-s", "1", "--csv"])
    assert listed.output.count("\n") <= 1, listed.output  # no search stored
