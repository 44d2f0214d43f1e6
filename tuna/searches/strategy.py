"""Strategy searches: a tunable solver's space on one problem, searched round by round.

A strategy (:mod:`tuna.searchers.strategies`: exhaustive, random, grid, hillclimb, genetic,
model) over the candidates the backend enumerates for (config, solver) is a search like
any other, run by the one driver (:mod:`tuna.searches.drive`): its rows are a ``search``
(``spec["kind"] == "strategy"``), a ``search_run`` per candidate proposed and a
``search_build`` per **round**. A round is one job of the session's backend — a ``perf``
job of the (config, solver) whose compile phase builds exactly the round's candidates (for
cpuconv: one set of shared objects holding them all) and whose evaluate phase times them;
any backend that declares its tuning spaces (``Backend.declares_spaces``) runs them;
every candidate timed is a ``measurement`` row, and the round's ``search_run`` rows are
filled from them in the same fenced transaction (:mod:`tuna.jobs.search_results`).

A candidate already measured in a session whose history counts for this one is not timed
again, and a model learns from the measurements that count
(:mod:`tuna.searches.strategy_history`). ``remeasure`` (``load_jobs --strategy ...
--remeasure``) times every candidate again.

When the strategy is done, one **final** job of the best measured candidates writes the
perf-db and find-db rows (with the winner's kernel): the backend times them again in turns
and each counts by its fastest timing (:mod:`tuna.backends.finalists`), so that a
disturbed run cannot crown a slow candidate. Nothing predicted is ever a result.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession

from tuna.backends import Backend, backends_with_spaces, get_backend
from tuna.catalog.records import configs_with_tensors, conv_problem
from tuna.db import Database
from tuna.db.models import Search, Solver, TuningSession
from tuna.errors import NotFoundError, TunaError
from tuna.library.effort import tuned_enough
from tuna.problems.conv import ConvProblem
from tuna.searchers import Objective, SearchError
from tuna.searchers.costmodel import HistoryEntry
from tuna.searchers.objective import make_objective
from tuna.searchers.pareto import Target
from tuna.searchers.strategies import (
    LEARNS_HISTORY,
    CandidateSpace,
    RoundSearcher,
    StrategyOptions,
    resolve_budget,
)
from tuna.searchers.strategies.sampled import check_objectives
from tuna.searches.objectives import baseline_config, stored_objective
from tuna.searches.strategy_history import (
    history_snapshot,
    problems_of,
    strategy_history,
    tunable_solvers,
)
from tuna.sessions.history import eligibility
from tuna.sessions.session import no_session, session_info, session_row

log = logging.getLogger(__name__)

KIND = "strategy"
OBJECTIVE = Objective("time_ms", "min")
#: The best measured candidates the final job measures (or reuses) and chooses among.
FINAL_CANDIDATES = 3


@dataclass(frozen=True)
class StrategyAims:
    """What a strategy search optimises and for how long, as ``load_jobs --strategy`` and
    ``tuna search create --strategy`` take them (:func:`strategy_objective`)."""

    objective: Objective = field(default_factory=lambda: OBJECTIVE)
    time_budget_s: float | None = None


def strategy_objective(targets: Sequence[Target], constraints: Sequence[str]) -> Objective:
    """The objective of ``--objective STAT:min|max`` (repeated) and ``--constraint TEXT``
    given to a strategy search: ``time_ms`` alone when neither is given, time first when
    only constraints are (each checked: one line; see :func:`check_objective`)."""
    if not targets and not constraints:
        return OBJECTIVE
    return make_objective(list(targets) or list(OBJECTIVE.targets), constraints)


@dataclass(frozen=True)
class StrategyRequest:
    """A strategy search as asked for (``load_jobs --strategy`` / ``tuna search create
    --strategy``) on one config's solver; its options were checked when they were made."""

    session: int
    config: int
    solver: str
    options: StrategyOptions
    name: str | None = None
    aims: StrategyAims = field(default_factory=StrategyAims)


@dataclass(frozen=True)
class Problem:
    """A (config, solver) pair's space and the features a model reads."""

    problem: ConvProblem
    space: CandidateSpace
    features: dict[str, float]


def check_objective(
    objective: Objective, strategy: str, backend: Backend, p: Problem, solver: str
) -> None:
    """A strategy search's objective, checked against what its runs will hold: ``time_ms``
    first and minimised (the perf db keeps the fastest candidate), then any of the stats
    the backend computes from a candidate's parameters (cpuconv: threads, workspace_bytes),
    constraints over those and over the baseline's (:func:`strategy_baseline`)."""
    first = objective.targets[0]
    if first != OBJECTIVE.targets[0]:
        raise SearchError(
            f"--strategy: the first objective is time_ms:min (the perf db keeps the fastest "
            f"candidate), not {first}; give --objective time_ms:min first and {first} after it"
        )
    known = ["time_ms", *backend.candidate_stats(p.problem, solver, p.space.points[0])]
    named = [*objective.named_stats(), *(f"baseline.{n}" for n in objective.baseline_stats)]
    whose = " (its baseline's too)" if objective.baseline_stats else ""
    for name in named:
        if name.removeprefix("baseline.") not in known:
            raise SearchError(
                f"objective or constraint stat {name!r}: the runs of a strategy search of "
                f"{p.space.source}{whose} have the stats {', '.join(known)} "
                "(time measured, the others computed from each candidate's parameters); "
                "name one of those"
            )
    check_objectives(strategy, len(objective.targets))


def strategy_baseline(
    objective: Objective, backend: Backend, p: Problem, solver: str
) -> dict[str, Any] | None:
    """The baseline of a strategy search whose constraints name one (``baseline.time_ms``):
    the solver's default parameters on the problem (:meth:`Backend.default_params`, what
    the library runs untuned), as a point of its space, checked as ``tuna.tune`` checks a
    baseline (:func:`baseline_config`); None when no constraint names the baseline."""
    if not objective.baseline_stats:
        return None
    text = next(c.text for c in objective.constraints if c.baseline_stats)
    try:
        default = backend.default_params(p.problem, solver)
        point = dict(backend.parse_params(solver, default)) if default else None
    except ValueError:
        point = None
    if point is None or p.space.index(point) is None:
        raise SearchError(
            f"constraint {text!r}: a strategy search's baseline is the solver's default "
            f"parameters, and {p.space.source} has none among its candidates; compare "
            "with a number instead, e.g. 'time_ms <= 2.5'"
        )
    return baseline_config(point, p.space.names, objective)


def candidate_stats_of(
    db: Database, session_id: int, spec: Mapping[str, Any]
) -> Callable[[Mapping[str, Any]], dict[str, float]]:
    """The stats the session's backend computes from a candidate's parameters on the
    search's problem (:meth:`Backend.candidate_stats`), as a function of the candidate."""
    with db.session() as s:
        backend = _session_backend(s, session_id)
        p = load_problem(s, backend, int(spec["config"]), str(spec["solver"]))
    solver = str(spec["solver"])
    return lambda params: backend.candidate_stats(p.problem, solver, params)


def searched_backend(name: str, refused: str) -> Backend:
    """The backend called ``name``; ``refused`` (``f"... tunes {name}"``) starts the error
    when it declares no spaces a strategy can search."""
    backend = get_backend(name)
    if not backend.declares_spaces:
        raise SearchError(
            f"{refused}; strategies search the spaces of {', '.join(backends_with_spaces())}"
        )
    return backend


def problem_space(backend: Backend, problem: ConvProblem, solver: str, source: str) -> Problem:
    """The candidates of ``solver`` on ``problem``, as ``backend`` declares them."""
    tunable = tunable_solvers(backend)
    if solver not in tunable:
        raise SearchError(
            f"solver {solver!r} has no tunable space a strategy can search; the tunable "
            f"solvers are {', '.join(tunable)}"
        )
    why = backend.applicability(problem, solver)
    if why is not None:
        raise SearchError(f"{source}: {solver} does not apply: {why}")
    declared = backend.tuning_space(problem, solver)
    space = CandidateSpace.from_strings(declared.names, declared.candidates, source=source)
    return Problem(problem, space, dict(declared.features))


def strategy_spec(request: StrategyRequest, snapshot: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "kind": KIND,
        "config": request.config,
        "solver": request.solver,
        **request.options.to_json(),
        "history": dict(snapshot),
    }


def is_strategy(spec: Mapping[str, Any]) -> bool:
    return spec.get("kind") == KIND


def load_problem(s: OrmSession, backend: Backend, config: int, solver: str) -> Problem:
    problem = problems_of(s, [config]).get(config)
    if problem is None:
        raise SearchError(f"config {config} does not exist or is not a problem {backend.name} runs")
    return problem_space(backend, problem, solver, f"{solver} on config {config}")


def _session_backend(s: OrmSession, session_id: int) -> Backend:
    name = s.scalar(select(TuningSession.backend).where(TuningSession.id == session_id))
    if name is None:
        raise no_session(session_id)
    return searched_backend(name, f"session {session_id} tunes {name}")


def make_searcher_for(
    db: Database, session_id: int, spec: Mapping[str, Any], objective: Objective = OBJECTIVE
) -> RoundSearcher:
    """The strategy of a stored strategy search, with its history as it was at creation,
    optimising ``objective`` (the search row's)."""
    with db.session() as s:
        backend = _session_backend(s, session_id)
        p = load_problem(s, backend, int(spec["config"]), str(spec["solver"]))
        history: list[HistoryEntry] = []
        if spec["strategy"] in LEARNS_HISTORY:
            history = strategy_history(
                s,
                session_id,
                int(spec["config"]),
                str(spec["solver"]),
                transfer=bool(spec.get("transfer")),
                until=(spec.get("history") or {}).get("until"),
                frozen=spec.get("history"),
            )
    extra = _model_extra(str(spec["strategy"]), backend, p, str(spec["solver"]), history)
    return StrategyOptions.from_json(spec).searcher(p.space, objective=objective, **extra)


def _model_extra(
    strategy: str, backend: Backend, p: Problem, solver: str, history: list[HistoryEntry]
) -> dict[str, Any]:
    """What a strategy with a cost model is given besides its options: the problem's
    features, the backend's derived features and the history; ``sliced`` also the stats
    the backend computes from a candidate (its slices are by those its objective names)."""
    if strategy not in LEARNS_HISTORY:
        return {}
    extra: dict[str, Any] = {
        "features": p.features, "history": history, "derive": backend.candidate_features,
    }  # fmt: skip
    if strategy == "sliced":
        extra["known"] = lambda params: backend.candidate_stats(p.problem, solver, params)
    return extra


def solver_id(db: Database, session_id: int, solver: str) -> int:
    """The id of ``solver`` of the session's backend."""
    with db.session() as s:
        backend = s.scalar(select(TuningSession.backend).where(TuningSession.id == session_id))
        found = s.scalar(select(Solver.id).where(Solver.name == solver, Solver.backend == backend))
    if found is None:
        raise SearchError(f"solver {solver!r} is not a solver of session {session_id}'s backend")
    return int(found)


def candidate_space(db: Database, session_id: int, spec: Mapping[str, Any]) -> CandidateSpace:
    with db.session() as s:
        backend = _session_backend(s, session_id)
        return load_problem(s, backend, int(spec["config"]), str(spec["solver"])).space


def create_strategy_search(
    db: Database, request: StrategyRequest, notes: list[str] | None = None
) -> int:
    """Check ``request`` and store its search (nothing is written when a check fails).
    ``notes`` receives what the strategy says of its history (e.g. ``--transfer`` found no
    compatible measurements and falls back to the problem's own)."""
    options = request.options
    name = search_name(request)
    with db.session(immediate=True) as s:
        sess = session_row(s, request.session)
        backend = searched_backend(sess.backend, f"session {request.session} tunes {sess.backend}")
        p = load_problem(s, backend, request.config, request.solver)
        count = resolve_budget(options.budget, len(p.space))
        check_objective(request.aims.objective, options.strategy, backend, p, request.solver)
        baseline = strategy_baseline(request.aims.objective, backend, p, request.solver)
        taken = s.execute(
            select(Search.id).where(Search.session == request.session, Search.name == name)
        ).scalar()
        if taken is not None:
            raise SearchError(
                f"session {request.session} already has a search named {name!r} "
                f"(search {taken}); choose another name, or `tuna search run` to resume it"
            )
        # the history snapshot: rows after it (this search's own included) are not read
        snapshot = history_snapshot(s, request.session)
        spec = strategy_spec(request, snapshot)
        if options.strategy in LEARNS_HISTORY:
            history = strategy_history(
                s,
                request.session,
                request.config,
                request.solver,
                transfer=options.transfer,
                until=snapshot["until"],
                frozen=snapshot,
            )
            model = options.searcher(  # the model's own checks fail here, not later
                p.space,
                objective=request.aims.objective,
                **_model_extra(options.strategy, backend, p, request.solver, history),
            )
            if notes is not None:
                notes += [f"{name}: {note}" for note in getattr(model, "notes", ())]
        row = Search(
            session=request.session,
            name=name[:128],
            space_file=f"{request.solver} on config {request.config}"[:255],
            space_text=json.dumps(
                {"names": list(p.space.names), "candidates": len(p.space)}, sort_keys=True
            ),
            base={},
            searcher=options.strategy,
            objective=stored_objective(request.aims.objective, baseline),
            budget=count,
            parallelism=options.round_size,
            backend=sess.backend,
            spec=spec,
            state="active",
            time_budget_s=request.aims.time_budget_s,
        )
        s.add(row)
        s.flush()
        return row.id


@dataclass
class StrategyLoad:
    """What ``load_jobs --strategy`` did: searches created, present already, skipped."""

    configs: int = 0
    created: list[int] = field(default_factory=list)
    already: int = 0
    min_trials: int | None = None
    tuned_enough: int = 0  # skipped: measured min_trials times where history counts
    not_applicable: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)  # what the strategies said of history


def load_strategy_searches(
    db: Database,
    session_id: int,
    options: StrategyOptions,
    *,
    tag: str | None = None,
    all_configs: bool = False,
    solvers: Sequence[str] | None = None,
    min_trials: int | None = None,
    aims: StrategyAims | None = None,
) -> StrategyLoad:
    """One strategy search per (config, applicable tunable solver) of the configs tagged
    ``tag`` (or all): ``load_jobs --strategy``. A pair whose search exists is left alone
    (one cut off is resumed by its driver, not made again); with ``min_trials``, a pair
    measured that many times in sessions whose history counts for this one (its own
    included: the effort counts, as ``load_jobs --min-trials`` reads them) is skipped.
    Each search optimises ``aims.objective`` (:func:`check_objective`) and stops proposing
    when ``aims.time_budget_s`` seconds have passed since its first round."""
    aims = aims or StrategyAims()
    if (tag is None) == (not all_configs):
        raise TunaError("give exactly one of -t TAG or --all_configs")
    with db.session() as s:
        name = s.scalar(select(TuningSession.backend).where(TuningSession.id == session_id))
        if name is None:
            raise no_session(session_id)
        backend = get_backend(name)
        if not backend.declares_spaces:
            raise SearchError(
                f"session {session_id} tunes {name}; strategies search the spaces of "
                f"{', '.join(backends_with_spaces())} (leave --strategy out to queue its jobs)"
            )
        tunable = tunable_solvers(backend)
        if solvers:
            unknown = sorted(set(solvers) - set(tunable))
            if unknown:
                raise SearchError(
                    f"solver(s) {', '.join(unknown)}: a strategy searches a tunable solver's "
                    f"space; the tunable solvers are {', '.join(tunable)}"
                )
            tunable = [n for n in tunable if n in solvers]
        rows = [(cfg.id, x, w, cfg) for cfg, x, w in s.execute(configs_with_tensors(tag))]
        problems = {}
        for cid, x, w, cfg in rows:
            try:
                problems[cid] = conv_problem(cfg, x, w)
            except TunaError as e:
                problems[cid] = str(e)  # type: ignore[assignment]
        taken = set(s.scalars(select(Search.name).where(Search.session == session_id)))
        tuned: set[tuple[int, str]] = set()
        if min_trials is not None:
            if min_trials < 1:
                raise TunaError(f"--min-trials {min_trials}: give at least 1 (or leave it out)")
            names = dict(
                s.execute(
                    select(Solver.id, Solver.name).where(Solver.backend == backend.name)
                ).all()
            )
            history = eligibility(s, session_info(session_row(s, session_id)))
            enough = tuned_enough(s, history, min_trials, sorted(problems))
            tuned = {(c, names[sv]) for c, sv in enough if sv in names}
    if tag is not None and not problems:
        raise NotFoundError(f"no config is tagged {tag!r}; import_configs -t {tag} -f FILE")
    out = StrategyLoad(configs=len(problems), min_trials=min_trials)
    todo: list[StrategyRequest] = []
    for cid, problem in problems.items():
        for solver in tunable:
            why = problem if isinstance(problem, str) else backend.applicability(problem, solver)
            if why is not None:
                out.not_applicable[why if isinstance(problem, str) else solver] += 1
                continue
            if (cid, solver) in tuned:
                out.tuned_enough += 1
                continue
            request = StrategyRequest(session_id, cid, solver, options, aims=aims)
            if search_name(request) in taken:
                out.already += 1
                continue
            # every pair's budget and objective is checked before anything is stored
            p = problem_space(backend, problem, solver, f"{solver} on config {cid}")
            resolve_budget(options.budget, len(p.space))
            check_objective(aims.objective, options.strategy, backend, p, solver)
            strategy_baseline(aims.objective, backend, p, solver)
            todo.append(request)
    out.created = [create_strategy_search(db, request, out.notes) for request in todo]
    return out


def search_name(request: StrategyRequest) -> str:
    return request.name or f"{request.options.strategy} {request.solver} config {request.config}"
