"""examples/c_build_run end to end on this machine: compiled with the system cc, run, read.

The parameter file is the real one the example ships; the schedule must build once per
distinct build tuple (tile, opt) and run every valid (n, reps) on each.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tuna.backends.bench import BenchSpec, LocalBench, run_search
from tuna.searchers import (
    Bisect,
    ParameterSpace,
    Proposer,
    load_base_config,
    load_parameter_file,
)
from tuna.searchers.schedule import build_key

from .examples import EXAMPLES, load_example

EXAMPLE = EXAMPLES / "c_build_run"

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")


EX = load_example("c_build_run")


def bench_spec() -> BenchSpec:
    spec: BenchSpec = EX.SPEC
    return spec


def test_c_example_builds_once_per_build_tuple(tmp_path: Path) -> None:
    space = load_parameter_file(EXAMPLE / "params.py")
    base = load_base_config(EXAMPLE / "base.json")
    proposer = Proposer(space, base=base)
    bench = LocalBench(bench_spec(), space, scratch_root=tmp_path)
    runs = run_search(proposer, bench)

    distinct = {build_key(space, r.config) for r in runs}
    assert len(bench.builds) == len(distinct) == 6  # tile x opt
    assert len(runs) == 20 and len(proposer.refused) == 4  # n=48 is not a multiple of tile=32
    assert all(r.valid for r in runs), [r.reason for r in runs if not r.valid]
    # Every run of one build tuple ran on that build's binary: the kernel reports its TILE.
    assert all(r.stats["tile"] == r.config["tile"] for r in runs)
    # The multiply is the same whatever the tiling: the checksum depends on n only.
    for n in (48, 64):
        assert len({r.stats["checksum"] for r in runs if r.config["n"] == n}) == 1
    best = EX.OBJECTIVE.best(runs)
    assert best is not None and best.stats["gflops"] == max(r.stats["gflops"] for r in runs)


def test_c_example_bad_runs_are_invalid_runs_not_errors(tmp_path: Path) -> None:
    space = ParameterSpace(
        {"n": [50, 64], "tile": [16], "opt": ["-O1", "-Obogus"]}, no_rebuild=("n",)
    )
    proposer = Proposer(space, base={"cc": "cc", "reps": 1})
    bench = LocalBench(bench_spec(), space, scratch_root=tmp_path)
    runs = {(r.config["n"], r.config["opt"]): r for r in run_search(proposer, bench)}
    assert runs[(64, "-O1")].valid
    bad_n = runs[(50, "-O1")]
    assert not bad_n.valid and bad_n.reason is not None
    assert bad_n.reason.startswith("run exited with status 2: n=50 must be a positive multiple")
    for n in (50, 64):
        r = runs[(n, "-Obogus")]
        assert not r.valid and r.reason is not None and r.reason.startswith("not run: build exited")
    assert len(bench.builds) == 2


def test_c_example_with_a_dynamic_searcher(tmp_path: Path) -> None:
    """Bisect the largest n (in steps of the tile) whose multiply stays under a time bound."""
    space = ParameterSpace({"n": [], "tile": [16], "opt": ["-O2"]}, no_rebuild=("n",))
    proposer = Proposer(
        space,
        Bisect("n", 16, 16 * 24, 16, predicate=lambda r: r.valid and r.stats["seconds"] < 1.0),
        base={"cc": "cc", "reps": 1, "tile": 16, "opt": "-O2"},
    )
    bench = LocalBench(bench_spec(), space, scratch_root=tmp_path)
    runs = run_search(proposer, bench)
    assert len(bench.builds) == 1  # n is runtime-only: one build serves every run
    assert 1 <= len(runs) <= 5  # ceil(log2(23))
    assert all(r.valid for r in runs)
