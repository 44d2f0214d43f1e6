"""Creating a search: everything checked first, then one row, so bad input changes nothing.

What is checked before anything is written (issue #15, "Bad input"): the parameter file
(JSON without nested values, Python that runs, hooks that do not raise, no-rebuild names
that are parameters), the searcher expression, the searcher's proposals (a static
searcher's every point, a dynamic one's first: no unknown parameter, ``META_is_config_valid``
answers), the command templates (no unknown name; the build command names no runtime-only
parameter, since one build serves every runtime value), the stats format, the objective,
the budget, the time budget, the pruner and parallelism, the session and the name.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy import select

from tuna.backends import get_backend
from tuna.db import Database
from tuna.db.models import Search
from tuna.errors import TunaError
from tuna.jobs.search_results import artifact_digest, store_artifact
from tuna.searchers import DryRun, Objective, ParameterSpace, SearchError, dry_run
from tuna.searchers import __all__ as search_names
from tuna.searchers.builtin import SearcherInterface
from tuna.searchers.objective import make_objective
from tuna.searchers.params import Categorical
from tuna.searchers.pareto import Target
from tuna.searchers.prune import parse_pruner
from tuna.searchers.space import parse_json_space, parse_python_space
from tuna.searchers.timebudget import parse_duration
from tuna.searches.objectives import baseline_config, stored_objective
from tuna.sessions.session import session_row

GOALS = ("min", "max")
STATES = ("active", "done", "failed", "stopped")
# A search's spec key marking one tuna.tune measures in its own process: no driver takes it.
IN_PROCESS = "python"
# The seq of a search's baseline run (measured first; constraints read its stats as
# ``baseline.NAME``): before every proposal's seq (0, 1, 2, ...), never replayed to a searcher.
BASELINE_SEQ = -1


@dataclass(frozen=True)
class SearchRequest:
    """A search as asked for (``tuna search create``'s options, as values)."""

    session: int
    name: str
    space_file: str
    space_text: str
    spec: Mapping[str, Any]
    objective_stat: str
    goal: str = "min"
    valid: str | None = None
    base: Mapping[str, Any] = field(default_factory=dict)
    searcher: str | None = None
    budget: int | None = None
    parallelism: int = 1
    backend: str = "bench"
    pruner: str | None = None  # e.g. "median", "halving(min_step=1, factor=3)"
    time_budget: str | float | None = None  # e.g. "10m", 600
    more: tuple[Target, ...] = ()  # the objectives after the first
    constraints: tuple[str, ...] = ()  # e.g. "qos_loss <= 3"
    baseline: Mapping[str, Any] | None = None  # a point measured first (run -1)

    def full_objective(self) -> Objective:
        """Every objective and constraint, checked (an ObjectiveError says what is wrong)."""
        first = Target(self.objective_stat, "max" if self.goal == "max" else "min")
        return make_objective([first, *self.more], self.constraints, self.valid)

    @property
    def objective(self) -> dict[str, Any]:
        """The search row's ``objective``: one stat as ever, or several, the constraints and
        the baseline point."""
        return stored_objective(self.full_objective(), self.baseline)


def load_space(space_file: str, space_text: str, runtime_only: bool = False) -> ParameterSpace:
    """The space of a parameter file's text (JSON by its ``.json`` name, else Python).

    ``runtime_only``: every parameter changes per run without a rebuild, as the search's
    backend says of its spec (:meth:`~tuna.backends.base.Backend.runtime_only`; a bench
    search whose runs call a Python function has one build, its sources).
    """
    if Path(space_file).suffix.lower() == ".json":
        space = parse_json_space(space_text, source=space_file)
    else:
        space = parse_python_space(space_text, source=space_file)
    if runtime_only:
        space = replace(space, no_rebuild=tuple(space.parameters))
    return space


def make_searcher(
    expression: str | None, space: ParameterSpace, objective: Objective | None = None
) -> SearcherInterface | None:
    """The searcher an expression such as ``Random(space, 8, seed=1)`` builds (None: the
    file's own or the product), or a strategy's name (``tpe``: seed 0, rounds of 8). Names
    in scope: ``tuna.searchers``'s, ``space``, each parameter by its name (a list parameter
    as its list of values, a range as itself: ``Int(4, 64, step=4)``, whose ``lo`` and
    ``hi`` a ``Step`` may use), and ``Strategy(name, space, seed=1, round_size=4, ...)``
    (:func:`tuna.searchers.strategies.strategy_over`); a strategy optimises ``objective``."""
    if expression is None or not expression.strip():
        return None
    import tuna.searchers as lib
    from tuna.searchers.strategies import STRATEGIES, strategy_over

    if expression.strip() in STRATEGIES:  # a strategy by name, as --strategy takes it
        return strategy_over(expression.strip(), space, objective=objective)
    scope: dict[str, Any] = {n: getattr(lib, n) for n in search_names}
    for n, p in space.parameters.items():
        scope[n] = list(p.choices) if isinstance(p, Categorical) else p
    scope["space"] = space
    scope["Strategy"] = functools.partial(strategy_over, objective=objective)
    try:
        searcher = eval(expression, {"__builtins__": __builtins__}, scope)  # the user's own code
    except TunaError:
        raise  # already one line: what, where, what to do (an infinite space, a bad strategy)
    except Exception as e:
        raise SearchError(
            f"searcher {expression!r}: {type(e).__name__}: {e}; write an expression such as "
            "'Random(space, 8, seed=1)' or 'Step(\"threads\", 1, 8, lambda x: x * 2)', or a "
            f"strategy's name ({', '.join(STRATEGIES)})"
        ) from e
    if not (callable(getattr(searcher, "generate", None)) and hasattr(searcher, "is_dynamic")):
        raise SearchError(
            f"searcher {expression!r} is {searcher!r}, not a searcher; name one of "
            "CartesianProduct, Random, Step, Bisect, Composer or your own"
        )
    return searcher


@dataclass(frozen=True)
class Checked:
    """A request that passed every check, and what the search would do (its dry run)."""

    request: SearchRequest
    space: ParameterSpace
    plan: DryRun


def check_request(request: SearchRequest) -> Checked:
    """Every check of the module docstring; a :class:`~tuna.errors.TunaError` says what failed."""
    if not request.name.strip() or len(request.name) > 128:
        raise SearchError(f"search name {request.name!r}: give 1 to 128 characters")
    if request.goal not in GOALS:
        raise SearchError(f"objective goal {request.goal!r}: use min or max")
    if not request.objective_stat.strip():
        raise SearchError("objective: name the stat to minimise or maximise (--objective STAT)")
    if request.budget is not None and request.budget < 1:
        raise SearchError(f"budget {request.budget}: give at least 1 run, or no budget")
    if request.parallelism < 1:
        raise SearchError(f"parallelism {request.parallelism}: give at least 1")
    if request.time_budget is not None:
        parse_duration(request.time_budget)
    if request.pruner is not None:
        parse_pruner(request.pruner)
    backend = get_backend(request.backend)
    try:
        json.dumps(dict(request.base))
    except (TypeError, ValueError) as e:
        raise SearchError(f"the base config is not JSON data: {e}") from e
    space = load_space(request.space_file, request.space_text, backend.runtime_only(request.spec))
    backend.check_spec(request.spec, [*request.base, *space.names], space.runtime_params)
    objective = request.full_objective()
    baseline_config(request.baseline, space.names, objective)
    searcher = make_searcher(request.searcher, space, objective)
    plan = dry_run(space, searcher, request.base)
    if not plan.proposals:
        raise SearchError(
            f"{request.space_file}: the searcher proposes nothing to run "
            f"({len(plan.refused)} point(s) refused by META_constraints or META_is_config_valid)"
        )
    return Checked(request, space, plan)


def create_search(db: Database, request: SearchRequest) -> int:
    """Check ``request`` (:func:`check_request`), then store the search; returns its id."""
    check_request(request)
    with db.session(immediate=True) as s:
        session_row(s, request.session)  # NotFoundError if there is none
        taken = s.execute(
            select(Search.id).where(Search.session == request.session, Search.name == request.name)
        ).scalar()
        if taken is not None:
            raise SearchError(
                f"session {request.session} already has a search named {request.name!r} "
                f"(search {taken}); choose another name, or `tuna search run` to resume it"
            )
        spec = dict(request.spec)
        blob = get_backend(request.backend).search_sources(spec)
        if blob is not None:  # the sources travel to the build machines as an artifact
            store_artifact(s.connection(), blob)
            spec["source_artifact"] = artifact_digest(blob)
        required = list(spec.get("required_stats") or [])
        for stat in [request.objective_stat, *(t.stat for t in request.more)]:
            if stat not in required:
                required.append(stat)
        spec["required_stats"] = required
        row = Search(
            session=request.session,
            name=request.name,
            space_file=request.space_file[:255],
            space_text=request.space_text,
            base=dict(request.base),
            searcher=request.searcher or None,
            objective=request.objective,
            budget=request.budget,
            parallelism=request.parallelism,
            backend=request.backend,
            spec=spec,
            state="active",
            pruner=parse_pruner(request.pruner).to_json() if request.pruner else None,
            time_budget_s=parse_duration(request.time_budget) if request.time_budget else None,
        )
        s.add(row)
        s.flush()
        return row.id
