"""A bench search run on this machine, one point at a time: builds cached by build tuple.

This is the reference behaviour the job-queue driver (to come) spreads over the fleet:
one build per distinct build tuple (:func:`tuna.searchers.schedule.build_key`), reused by
every run of that tuple; a static searcher's points run in schedule order (builds grouped);
a dynamic one is sent each Run. Used by the tests and the examples.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuna.backends.bench.execute import BenchSpec, BuildResult, Executed, build, new_scratch, run
from tuna.searchers.propose import Proposer
from tuna.searchers.run import Run
from tuna.searchers.schedule import BuildKey, build_key, plan_schedule
from tuna.searchers.space import ParameterSpace


@dataclass
class LocalBench:
    """Runs configs of ``space`` with ``spec`` under one scratch directory, caching builds.

    A run's directory is removed once it has run unless ``keep_runs``; use it as a context
    manager (or call :meth:`close`) to remove the scratch directory, builds included.
    """

    spec: BenchSpec
    space: ParameterSpace
    scratch_root: Path | None = None
    keep_runs: bool = False
    builds: dict[BuildKey, BuildResult] = field(default_factory=dict)
    executed: list[Executed] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.scratch = new_scratch(self.scratch_root, "local")

    def __enter__(self) -> LocalBench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    def run(self, config: dict[str, Any]) -> Run:
        key = build_key(self.space, config)
        built = self.builds.get(key)
        if built is None:
            built = build(self.spec, config, self.scratch / f"build-{len(self.builds)}")
            self.builds[key] = built
        directory = self.scratch / f"run-{len(self.executed)}"
        done = run(self.spec, config, built, directory)
        if not self.keep_runs:
            shutil.rmtree(directory, ignore_errors=True)
        self.executed.append(done)
        return done.run


def run_search(proposer: Proposer, bench: LocalBench, budget: int | None = None) -> list[Run]:
    """Every Run of ``proposer``'s search (at most ``budget``), measured by ``bench``."""
    bench.spec.check([*proposer.base, *proposer.space.names])
    runs: list[Run] = []
    if not proposer.dynamic:
        configs = [p.config for p in proposer.proposals()][:budget]
        for b in plan_schedule(proposer.space, configs).builds:
            runs.extend(bench.run(dict(c)) for c in b.runs)
        return runs
    proposal = proposer.start()
    while proposal is not None and (budget is None or len(runs) < budget):
        result = bench.run(proposal.config)
        runs.append(result)
        proposal = proposer.send(result)
    return runs
