"""Searches: parameter spaces, searchers, schedules and replay — pure, no database.

Users import the built-in searchers from here in their parameter files::

    from tuna.search import Bisect, Composer, Step

(``from library import ...``, the name the benchmark autotuner used, works too inside a
parameter file). See ``reference/search.md`` §1 for the behaviour these follow, and the
README's "Searches (foundation)".
"""

from __future__ import annotations

from tuna.search.config import load_base_config, parse_assignments
from tuna.search.errors import (
    HookError,
    ObjectiveError,
    ParameterFileError,
    ReplayError,
    SearcherError,
    SearchError,
    UnknownParameterError,
)
from tuna.search.objective import Objective
from tuna.search.propose import Proposal, Proposer, default_searcher
from tuna.search.replay import Replayed, replay
from tuna.search.rounds import RoundProposer
from tuna.search.run import Point, Primitive, Run
from tuna.search.schedule import (
    Build,
    DryRun,
    Schedule,
    build_key,
    count_builds,
    dry_run,
    plan_schedule,
)
from tuna.search.searchers import (
    Bisect,
    CartesianProduct,
    Composer,
    PastRunsCallback,
    Random,
    SearcherInterface,
    Step,
    send,
)
from tuna.search.space import ParameterSpace, load_parameter_file, merge

#: The tool's name for ``send``.
do_send = send

__all__ = [
    "Bisect",
    "Build",
    "CartesianProduct",
    "Composer",
    "DryRun",
    "HookError",
    "Objective",
    "ObjectiveError",
    "ParameterFileError",
    "ParameterSpace",
    "PastRunsCallback",
    "Point",
    "Primitive",
    "Proposal",
    "Proposer",
    "Random",
    "Replayed",
    "RoundProposer",
    "ReplayError",
    "Run",
    "Schedule",
    "SearchError",
    "SearcherError",
    "SearcherInterface",
    "Step",
    "UnknownParameterError",
    "build_key",
    "count_builds",
    "default_searcher",
    "do_send",
    "dry_run",
    "load_base_config",
    "load_parameter_file",
    "merge",
    "parse_assignments",
    "plan_schedule",
    "replay",
    "send",
]
