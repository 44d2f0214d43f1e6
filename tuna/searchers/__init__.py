"""The pure half of searches: parameter spaces, searchers, strategies, schedules and replay
— no database. The stored half (searches in the database, their driver) is
:mod:`tuna.searches`.

Users import the built-in searchers in their parameter files under the shorter name
:mod:`tuna.search` (an alias of this package)::

    from tuna.search import Bisect, Composer, Step
    from tuna.search import Categorical, Float, Int   # parameter kinds beyond a list

(``from library import ...``, the name the benchmark autotuner used, works too inside a
parameter file). See ``reference/search.md`` §1 for the behaviour these follow, and
docs/reference/search-files.md.
"""

from __future__ import annotations

from tuna.searchers.builtin import (
    Bisect,
    CartesianProduct,
    Composer,
    PastRunsCallback,
    Random,
    SearcherInterface,
    Step,
    send,
)
from tuna.searchers.config import load_base_config, parse_assignments
from tuna.searchers.errors import (
    HookError,
    ObjectiveError,
    ParameterFileError,
    ReplayError,
    SearcherError,
    SearchError,
    UnknownParameterError,
)
from tuna.searchers.objective import Objective
from tuna.searchers.params import Categorical, Float, Int, Param
from tuna.searchers.propose import Proposal, Proposer, default_searcher
from tuna.searchers.replay import Replayed, replay
from tuna.searchers.rounds import RoundProposer
from tuna.searchers.run import Point, Primitive, Run
from tuna.searchers.schedule import (
    Build,
    DryRun,
    Schedule,
    build_key,
    count_builds,
    dry_run,
    plan_schedule,
)
from tuna.searchers.space import ParameterSpace, load_parameter_file, merge, space_json

#: The tool's name for ``send``.
do_send = send

__all__ = [
    "Bisect",
    "Build",
    "CartesianProduct",
    "Categorical",
    "Composer",
    "DryRun",
    "Float",
    "HookError",
    "Int",
    "Objective",
    "ObjectiveError",
    "Param",
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
    "space_json",
]
