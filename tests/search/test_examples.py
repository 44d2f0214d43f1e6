"""The examples' parameter files through the pure layer: they load, and their dry runs hold."""

from __future__ import annotations

from pathlib import Path

from tuna.search import dry_run, load_base_config, load_parameter_file

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
