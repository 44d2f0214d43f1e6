"""The examples' parameter files through the pure layer: they load, and their dry runs hold."""

from __future__ import annotations

from pathlib import Path

from tuna.searchers import dry_run, load_base_config, load_parameter_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_c_build_run_dry_run() -> None:
    space = load_parameter_file(EXAMPLES / "c_build_run" / "params.py")
    assert space.names == ["n", "reps", "tile", "opt"]
    assert space.build_params == ["tile", "opt"]
    d = dry_run(space, base=load_base_config(EXAMPLES / "c_build_run" / "base.json"))
    assert len(d.proposals) == 20 and len(d.refused) == 4
    assert len(d.schedule.builds) == 6
    assert d.schedule.naive_builds == 20  # declaration order: the runtime params vary slowest
    assert d.render()[-1] == "builds: 6 for 20 runs (naive order: 20)"


def test_server_tuning_dry_run_and_path() -> None:
    """The worked example's file: its Composer's path for a server of known capacity."""
    from tuna.searchers import Proposer, Run

    space = load_parameter_file(EXAMPLES / "server_tuning" / "params.py")
    base = load_base_config(EXAMPLES / "server_tuning" / "base.json")
    assert space.build_params == ["innodb_flush_log_at_trx_commit"]
    assert dry_run(space, base=base).render()[2:4] == [
        "searcher: Composer (dynamic)",
        "first proposal: rate=500 threads=1 innodb_flush_log_at_trx_commit=1",
    ]
    proposer = Proposer(space, base=base)
    path = []
    p = proposer.start()
    while p is not None:
        c = p.config
        path.append((c["rate"], c["threads"], c["innodb_flush_log_at_trx_commit"]))
        capacity = 100 * c["threads"] * c["innodb_flush_log_at_trx_commit"]
        p95 = 10.0 if c["rate"] <= capacity else 900.0
        p = proposer.send(Run(c, {"tps": min(c["rate"], capacity), "p95_ms": p95}))
    # Worked by hand: more threads first (1 -> 2 -> 4), then the relaxed flush (a rebuild);
    # at (4, 2) the run is under the bound, so the Bisect goes up (grid 25, 50, ... 975):
    # 750 good, 875 bad, then forced: 800 good, 825 bad, exhausted. Best: 800 = capacity.
    assert path == [
        (500, 1, 1),
        (500, 2, 1),
        (500, 4, 1),
        (500, 4, 2),
        (750, 4, 2),
        (875, 4, 2),
        (800, 4, 2),
        (825, 4, 2),
    ]
