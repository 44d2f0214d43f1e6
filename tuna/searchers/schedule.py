"""The rebuild-minimising schedule, and the dry run that shows it before anything runs.

Parameters not named by ``META_get_no_rebuild_params`` are **build-time**: two configs with
the same values of every build-time parameter (the same **build tuple**) can share one
build. The schedule builds once per distinct build tuple and runs every config of that
tuple after it, back to back (first-seen order of tuples, proposal order within one).
The **naive** order is the order given: like the tool with its one cached build, it
rebuilds each time the build tuple changes from one run to the next. With ``a = [128, 256,
512]`` runtime-only and ``b = [128, 256]`` build-time, the naive product order needs 6 builds
for 6 runs; the schedule needs 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuna.searchers.builtin import SearcherInterface, label_of
from tuna.searchers.propose import Proposal, Proposer
from tuna.searchers.run import Primitive, Run
from tuna.searchers.space import ParameterSpace

BuildKey = tuple[tuple[str, Any], ...]


def build_key(space: ParameterSpace, config: Mapping[str, Any]) -> BuildKey:
    """The build tuple of ``config``: its values of ``space``'s build-time parameters; a
    conditional parameter absent from ``config`` is left out (not None: a build's config is
    its tuple, and a build command renders an absent parameter as nothing)."""
    return tuple(
        (name, config.get(name))
        for name in space.build_params
        if name in config or not space.parameters[name].when
    )


def count_builds(space: ParameterSpace, configs: Sequence[Mapping[str, Any]]) -> int:
    """Builds needed to run ``configs`` in the order given, keeping only the latest build."""
    builds, last = 0, None
    for c in configs:
        key = build_key(space, c)
        if key != last:
            builds, last = builds + 1, key
    return builds


@dataclass(frozen=True)
class Build:
    """One build (its build tuple) and the configs that run on it, in order."""

    key: BuildKey
    runs: tuple[Mapping[str, Any], ...]

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.key)


@dataclass(frozen=True)
class Schedule:
    """Builds in order, each with its runs; ``naive_builds`` is what the given order costs."""

    builds: tuple[Build, ...]
    naive_builds: int

    @property
    def runs(self) -> list[Mapping[str, Any]]:
        return [r for b in self.builds for r in b.runs]


def plan_schedule(space: ParameterSpace, configs: Sequence[Mapping[str, Any]]) -> Schedule:
    """Group ``configs`` by build tuple: one build per distinct tuple, its runs back to back."""
    groups: dict[BuildKey, list[Mapping[str, Any]]] = {}
    for c in configs:
        groups.setdefault(build_key(space, c), []).append(c)
    return Schedule(
        builds=tuple(Build(k, tuple(v)) for k, v in groups.items()),
        naive_builds=count_builds(space, configs),
    )


@dataclass(frozen=True)
class DryRun:
    """What a search would do, computed without building or running anything.

    For a static searcher: every point (``proposals``), the configs ``META_is_config_valid``
    refuses, and the schedule. For a dynamic one, only its first proposal is known.
    """

    space: ParameterSpace
    searcher: str
    dynamic: bool
    proposals: tuple[Proposal, ...]
    refused: tuple[Run, ...]
    schedule: Schedule

    def render(self) -> list[str]:
        """The dry run as lines of text (what ``tuna search create --dry-run`` prints)."""
        build = ", ".join(self.space.build_params) or "(none)"
        runtime = ", ".join(self.space.runtime_params) or "(none)"
        lines = [
            f"parameters: {', '.join(self.space.names)} (from {self.space.source})",
            f"build-time: {build}; runtime-only: {runtime}",
            f"searcher: {self.searcher} ({'dynamic' if self.dynamic else 'static'})",
        ]
        if self.dynamic:
            first = self.proposals[0].point if self.proposals else None
            lines.append(f"first proposal: {_fmt(first) if first else '(none)'}")
            lines.append("later proposals depend on the runs' results")
            return lines
        n_runs = len(self.proposals)
        by = "META_constraints" if self.space.constraints else ""
        if "META_is_config_valid" in self.space.hooks or not by:
            by = f"{by} or META_is_config_valid" if by else "META_is_config_valid"
        lines.append(f"runs: {n_runs}, refused by {by}: {len(self.refused)}")
        for i, b in enumerate(self.schedule.builds, 1):
            lines.append(f"build {i}: {_fmt(b.params) or '(no build-time parameters)'}")
            for r in b.runs:
                lines.append(f"  run: {_fmt({k: r[k] for k in self.space.runtime_params})}")
        lines.append(
            f"builds: {len(self.schedule.builds)} for {n_runs} runs "
            f"(naive order: {self.schedule.naive_builds})"
        )
        return lines


def dry_run(
    space: ParameterSpace,
    searcher: SearcherInterface | None = None,
    base: Mapping[str, Any] | None = None,
) -> DryRun:
    """The points (or first proposal) of a search, its schedule and its builds vs naive."""
    proposer = Proposer(space, searcher, base)
    if proposer.dynamic:
        first = proposer.start()
        proposals: list[Proposal] = [first] if first is not None else []
    else:
        proposals = proposer.proposals()
    configs = [p.config for p in proposals]
    return DryRun(
        space=space,
        searcher=label_of(proposer.searcher),
        dynamic=proposer.dynamic,
        proposals=tuple(proposals),
        refused=tuple(proposer.refused),
        schedule=plan_schedule(space, configs),
    )


def _fmt(values: Mapping[str, Primitive] | Mapping[str, Any] | None) -> str:
    return " ".join(f"{k}={v}" for k, v in (values or {}).items())
