# Over 600 lines: one stored study: tune(), study() and Study share its opening and recording.
"""Tuning a Python function in-process: ``tuna.tune(objective, space, ...)`` (issue #28).

The study is an ordinary stored search, so ``tuna search show``, the dashboard and the
reports see it: one ``search`` row (its space as JSON text, its searcher expression, its
objective), one finished ``search_run`` per call of the objective, in a session of the
``bench`` backend labelled ``tuna.tune`` (made on first use). The searcher is driven by the
same :class:`~tuna.searchers.propose.Proposer` as a dry run, in this process, one point at a
time; no job is enqueued.

**Resume**: a second call with the same name continues the study. Its recorded runs are
replayed into a fresh searcher (:func:`tuna.searchers.replay`), so a point already measured
is not measured again; the space, the strategy and the objective must be the ones it was
made with. A call that leaves early (Ctrl-C inside the objective) marks the search
``stopped``, so no ``go_fish --search`` tries to drive it as a bench search.

An objective that raises is an invalid run with the exception as its reason; everything
else (a bad space, strategy, direction or budget) is refused before anything is written.

**Ask and tell**: ``tuna.study(name, space, ...)`` is the same stored study for a loop the
user drives (:class:`Study`): ``trial = study.ask()`` gives the next point (None at the
end), ``study.tell(trial, value)`` records it as a finished run. ``tune()`` is that loop
with the objective called in between, so both store, resume and end a study alike.

**Several objectives and constraints**: ``directions={"time_ms": "min", "accuracy": "max"}``
tunes for every stat at once (the first is the one ``best`` and the search's best-so-far
curve follow); ``constraints=["accuracy >= baseline.accuracy - 0.5"]`` makes a run that
fails one ineligible (recorded, not counted). ``baseline={...}`` is a configuration
measured before the study's first run (stored as its run ``-1``; with ask and tell, the
first trial asked), whose stats constraints name as ``baseline.NAME``; an objective or
constraint naming a stat the baseline did not return is refused then (by ``tune()``
before anything is written). The result's ``pareto`` is the front of the runs that count,
the baseline among them, as ``tuna search show`` and the dashboard show it.

**Pruning and time**: ``pruner=`` judges what an objective of two arguments reports
(:mod:`tuna.searches.trial`); ``timeout=`` bounds ``tune()``: then nothing more is asked
and the study ends ``done``, the result's ``reason`` saying so.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import select, update
from sqlalchemy.engine import URL

from tuna.backends.base import SessionSpec
from tuna.db import Database, open_database
from tuna.db.clock import db_now
from tuna.db.models import Search, SearchRun, TuningSession
from tuna.errors import DatabaseError
from tuna.jobs.pruning import peers, stored_curve
from tuna.jobs.search_results import insert_runs, objective_value
from tuna.searchers import Objective, Run, dry_run, replay
from tuna.searchers.errors import ObjectiveError, SearchError
from tuna.searchers.function import load_function, stats_of
from tuna.searchers.params import Param
from tuna.searchers.prune import Peer, Pruned, Pruner, as_pruner
from tuna.searchers.space import ParameterSpace, parse_json_space
from tuna.searchers.timebudget import TimeBudget, parse_duration
from tuna.searches.create import BASELINE_SEQ, IN_PROCESS, make_searcher
from tuna.searches.objectives import baseline_config, check_baseline_run, study_objective
from tuna.searches.trial import ObjectiveFn, Trial, TrialProgress, measure_call
from tuna.sessions.session import add_session

log = logging.getLogger(__name__)

LABEL = "tuna.tune"  # the label of the session studies are stored in
DIRECTIONS = {"minimize": "min", "min": "min", "maximize": "max", "max": "max"}

__all__ = ["Pruned", "Study", "Trial", "TuneResult", "study", "tune"]


@dataclass(frozen=True)
class TuneResult:
    """A study's outcome: its search id, every run in proposal order, the best that counts
    (with several objectives, the front's first: best by the first objective), the Pareto
    front of the runs that count (in that order; the baseline is one of them) and the
    baseline run, if one was named."""

    search: int
    name: str
    stat: str
    runs: list[Run]
    best: Run | None
    pareto: list[Run] = field(default_factory=list)
    baseline: Run | None = None
    reason: str | None = None  # why the study stopped early (its timeout), if it did

    @property
    def best_params(self) -> dict[str, Any] | None:
        return dict(self.best.config) if self.best is not None else None

    @property
    def best_value(self) -> float | None:
        return float(self.best.stats[self.stat]) if self.best is not None else None


@dataclass(frozen=True)
class _Study:
    name: str
    space: ParameterSpace
    space_text: str
    strategy: str | None
    objective: Objective
    budget: int | None
    baseline: dict[str, Any] | None = None
    pruner: Pruner | None = None

    @property
    def stored_objective(self) -> dict[str, Any]:
        """The search row's ``objective``: :meth:`Objective.stored` and the baseline's config."""
        out = self.objective.stored()
        return out if self.baseline is None else {**out, "baseline": self.baseline}


def tune(
    objective: ObjectiveFn | str,
    space: Mapping[str, Sequence[Any] | Param],
    direction: str = "minimize",
    strategy: str | None = None,
    budget: int | None = None,
    storage: str | URL | Database | None = None,
    *,
    name: str | None = None,
    stat: str = "value",
    directions: Mapping[str, str] | None = None,
    constraints: Sequence[str] = (),
    baseline: Mapping[str, Any] | None = None,
    pruner: str | Pruner | None = None,
    timeout: float | str | None = None,
) -> TuneResult:
    """Tune ``objective(params)`` over ``space`` and store every run; see the module docstring.

    ``space`` maps each parameter to its values: a list, or a range or conditional
    parameter (``Int(4, 64, step=4)``, ``Float(1e-4, 1e-1, log=True)``,
    ``Categorical([1, 2], when={"algo": "tiled"})`` from :mod:`tuna.search`), and may list
    constraints under ``"META_constraints"`` as a JSON parameter file does (it is stored as
    one). A continuous range needs a strategy that samples. ``strategy`` is a searcher
    expression as ``tuna search create --searcher`` takes (``"Random(space, 20, seed=1)"``;
    None: every point) or a strategy's name: ``"tpe"``, ``"cmaes"``, ``"gp"``, ``"nsga2"``
    (Optuna's samplers, ``pip install 'tuna[optuna]'``), ``"hillclimb"``, ... (seed 0;
    ``"Strategy('tpe', space, seed=1)"`` for another); ``budget`` caps the runs;
    ``storage`` is a database URL (None: the default database, SQLite under
    ``TUNA_DATA_DIR``). ``objective`` returns a number (stored as the
    stat ``stat``) or a dict of stats that holds ``stat``. ``directions`` (stat -> "min" or
    "max", in priority order) replaces ``stat`` and ``direction`` with several objectives;
    ``constraints`` and ``baseline`` are the module docstring's. ``pruner`` (``"median"``,
    ``"halving"``, ``"median(warmup_runs=3)"``...) stops runs whose ``trial.report`` values
    are hopeless; ``timeout`` (seconds, or ``"10m"``) bounds this call's time. Given as
    ``"module:function"``, ``objective`` is imported (from the current directory first), as
    ``tuna search create --objective-fn`` has go_fish's workers do.
    """
    if isinstance(objective, str):
        objective = load_function(objective, Path.cwd())
    spec = _check(objective, space, direction, strategy, budget, name, stat)
    spec = _with_objectives(spec, stat, directions, constraints, baseline)
    spec = replace(spec, pruner=as_pruner(pruner))
    clock = None if timeout is None else TimeBudget(parse_duration(timeout, "timeout"))

    def measure(params: dict[str, Any]) -> Run:  # the baseline
        return measure_call(objective, Trial(0, BASELINE_SEQ, params), spec.objective.stat)[0]

    hint = "call tuna.tune again with the same name to resume"
    with _open(spec, storage, hint, measure) as study:
        while not (clock is not None and clock.spent) and (trial := study.ask()) is not None:
            run, pruned = measure_call(objective, trial, spec.objective.stat)
            study.record(trial, run, pruned=pruned)
        if clock is not None and clock.spent:
            study.end_early(clock.reason(study.measured, "timeout"))
    return study.result()


def study(
    name: str,
    space: Mapping[str, Sequence[Any] | Param],
    direction: str = "minimize",
    strategy: str | None = None,
    budget: int | None = None,
    storage: str | URL | Database | None = None,
    *,
    stat: str = "value",
    directions: Mapping[str, str] | None = None,
    constraints: Sequence[str] = (),
    baseline: Mapping[str, Any] | None = None,
    pruner: str | Pruner | None = None,
) -> Study:
    """The study ``name`` for a loop you drive: ``ask()`` a trial, measure it, ``tell()``.

    The arguments are :func:`tune`'s; the study is stored, resumed by name and shown alike.
    Use it as a context manager (or call :meth:`Study.close`): leaving early marks it
    stopped, and a study opened with a URL closes its connections.

    Example::

        with tuna.study("loop", {"x": [1, 2, 3]}) as s:
            while (trial := s.ask()) is not None:
                s.tell(trial, (trial.params["x"] - 2) ** 2)
        print(s.result().best_params)
    """
    spec = _check(None, space, direction, strategy, budget, name, stat)
    spec = _with_objectives(spec, stat, directions, constraints, baseline)
    spec = replace(spec, pruner=as_pruner(pruner))
    hint = "open it again with tuna.study and the same name to resume"
    return _open(spec, storage, hint)


def _open(
    spec: _Study,
    storage: str | URL | Database | None,
    hint: str,
    measure: Callable[[dict[str, Any]], Run] | None = None,
) -> Study:
    db = storage if isinstance(storage, Database) else open_database(storage)
    try:
        return Study(db, spec, hint, owns_db=not isinstance(storage, Database), measure=measure)
    except BaseException:
        if not isinstance(storage, Database):
            db.dispose()
        raise


def _check(
    objective: object,
    space: object,
    direction: str,
    strategy: str | None,
    budget: int | None,
    name: str | None,
    stat: str,
) -> _Study:
    """Every input checked before anything is opened or written; a SearchError says what.
    ``objective`` None: a study for ask and tell (its name must be given)."""
    if objective is not None and not callable(objective):
        raise SearchError(f"objective {objective!r} is not callable; give a function of params")
    if direction not in DIRECTIONS:
        raise SearchError(f"direction {direction!r}: use 'minimize' or 'maximize'")
    if budget is not None and (isinstance(budget, bool) or budget < 1):
        raise SearchError(f"budget {budget!r}: give at least 1 run, or None for no limit")
    if not isinstance(stat, str) or not stat.strip():
        raise SearchError(f"stat {stat!r}: name the stat the objective returns")
    study_name = name if name is not None else getattr(objective, "__name__", "")
    if not study_name.strip() or len(study_name) > 128:
        raise SearchError(f"study name {study_name!r}: give 1 to 128 characters (name=...)")
    if not isinstance(space, Mapping):
        raise SearchError(
            f"space {space!r}: give a dict of each parameter's values, e.g. {{'x': [1, 2, 4]}}"
        )
    try:
        text = json.dumps({str(k): _json_form(v) for k, v in space.items()})
    except (TypeError, ValueError) as e:
        raise SearchError(
            f"space: {e}; each parameter's values must be a list of numbers, strings or booleans"
        ) from e
    parsed = parse_json_space(text, source=f"{study_name}.json")
    goal: Literal["min", "max"] = "max" if DIRECTIONS[direction] == "max" else "min"
    searcher = make_searcher(strategy, parsed, Objective(stat, goal))
    plan = dry_run(parsed, searcher)  # an empty parameter, a searcher that raises: refused now
    if not plan.proposals:
        raise SearchError(f"study {study_name!r}: the strategy proposes nothing to run")
    return _Study(study_name, parsed, text, strategy or None, Objective(stat, goal), budget)


def _json_form(value: Any) -> Any:
    """A space's value as its parameter file's JSON form (a range's object, else a list)."""
    if isinstance(value, Param):
        return value.to_json()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{value!r} is not a list of values or a range")
    return list(value)


def _with_objectives(
    study: _Study,
    stat: str,
    directions: Mapping[str, str] | None,
    constraints: Sequence[str],
    baseline: Mapping[str, Any] | None,
) -> _Study:
    """The study with several objectives, constraints and a baseline, each checked."""
    if directions is None and not constraints and baseline is None:
        return study
    objective = study_objective(study.objective, stat, directions, constraints)
    config = baseline_config(baseline, study.space.names, objective)
    return replace(study, objective=objective, baseline=config)


def _recorded_baseline(db: Database, study: _Study) -> Run | None:
    """The baseline run a study of this name recorded (None: none, or a new study)."""
    if study.baseline is None:
        return None
    with db.session() as s:
        row = s.execute(
            select(SearchRun)
            .join(Search, Search.id == SearchRun.search)
            .join(TuningSession, TuningSession.id == Search.session)
            .where(
                TuningSession.label == LABEL,
                Search.name == study.name,
                SearchRun.seq == BASELINE_SEQ,
            )
        ).scalar_one_or_none()
        return None if row is None else _run_of(row)


def _check_baseline(study: _Study, base: Run) -> None:
    check_baseline_run(study.name, study.baseline, study.objective, base)


class Study:
    """A stored study driven one trial at a time; :func:`study` opens one.

    Opening it makes its search or finds it by name and replays the recorded runs into a
    fresh searcher, so :meth:`ask` goes on where the study stopped. A static strategy may
    have several trials asked and not yet told (told in any order); a dynamic one (Step,
    Bisect, ...) needs each told before the next is asked. A trial asked and never told is
    not stored: the study asks it again when it is next opened. When the strategy or the
    budget has nothing left and every trial is told, the study ends (``done``, or ``failed``
    when no run holds the stat). One process drives a study at a time.

    A study with a baseline asks it first (trial ``-1``) until it is told; told, it is
    checked to print every stat the objective names. Given ``measure``, the study measures
    its baseline itself, before its search is written (``tune()``).
    """

    def __init__(
        self,
        db: Database,
        spec: _Study,
        hint: str,
        *,
        owns_db: bool = False,
        measure: Callable[[dict[str, Any]], Run] | None = None,
    ) -> None:
        self._db, self._spec, self._hint, self._owns_db = db, spec, hint, owns_db
        self.baseline: Run | None = _recorded_baseline(db, spec)
        measured = None
        if spec.baseline is not None and self.baseline is None and measure is not None:
            measured = measure(dict(spec.baseline))  # before anything is written
            _check_baseline(spec, measured)
        self.search = _open_search(db, spec)
        if measured is not None:
            self._store_baseline(measured)
        self._objective = spec.objective.with_baseline(self._baseline_stats)
        with db.session() as s:
            rows = s.execute(
                select(SearchRun)
                .where(SearchRun.search == self.search, SearchRun.seq > BASELINE_SEQ)
                .order_by(SearchRun.seq)
            ).scalars()
            self.runs: list[Run] = [_run_of(r) for r in rows]
            self._peers = peers(s.connection(), self.search)  # the runs' curves, to prune by
        searcher = make_searcher(spec.strategy, spec.space, spec.objective)
        replayed = replay(spec.space, self.runs, searcher)
        self._proposer, self._next = replayed.proposer, replayed.next
        self._pending: dict[int, Trial] = {}
        self.measured = 0  # runs recorded since it was opened
        self.state: str = "active"
        self.reason: str | None = None
        self._closed = False
        if self.runs:
            log.info(
                "study %r: search %d resumed after %d run(s)",
                spec.name,
                self.search,
                len(self.runs),
            )

    @property
    def name(self) -> str:
        return self._spec.name

    def ask(self) -> Trial | None:
        """The next trial to measure; None when the strategy or the budget is spent."""
        self._open_or_raise()
        if self._pending and self._proposer.dynamic:
            waiting = min(self._pending)
            raise SearchError(
                f"study {self.name!r}: tell trial {waiting} before asking another; the strategy "
                f"{self._spec.strategy!r} chooses its next point from that result"
            )
        if self._spec.baseline is not None and self.baseline is None:
            if BASELINE_SEQ in self._pending:
                raise SearchError(
                    f"study {self.name!r}: tell the baseline (trial {BASELINE_SEQ}) before asking "
                    "another; the constraints compare every run with it"
                )
            trial = Trial(self.search, BASELINE_SEQ, dict(self._spec.baseline))
            self._pending[trial.number] = trial
            return trial
        proposal = self._next
        if proposal is None or self._spent(proposal.index):
            self._end_if_over()
            return None
        self._next = None if self._proposer.dynamic else self._proposer.send(None)
        progress = TrialProgress(self._spec.pruner, self._objective.goal, self._peers)
        trial = Trial(self.search, proposal.index, dict(proposal.config), progress)
        self._pending[trial.number] = trial
        return trial

    def tell(
        self, trial: Trial, value: float | Mapping[str, Any] | None = None, *, error: str = ""
    ) -> Run:
        """Record ``trial``'s result: a number (the stat), a dict of stats, ``tuna.Pruned``
        (stopped early: recorded pruned), or ``error=`` saying why it has none (an invalid
        run). A value of another kind stores nothing."""
        self._check_waiting(trial)
        if value is Pruned or isinstance(value, Pruned):
            return self.record(trial, Run.invalid(trial.params, trial.progress.pruned_reason()),
                               pruned=True)  # fmt: skip
        if error:
            return self.record(trial, Run.invalid(trial.params, str(error)))
        stats = stats_of(value, self._objective.stat)
        if isinstance(stats, str):
            raise SearchError(
                f"study {self.name!r}, trial {trial.number}: {stats}, "
                "or error='why' for a run that failed"
            )
        return self.record(trial, Run(trial.params, stats))

    def record(self, trial: Trial, run: Run, *, pruned: bool = False) -> Run:
        """Store ``run`` as ``trial``'s finished run (:meth:`tell` with a Run made already;
        ``pruned``: stopped by its pruner or its objective, ``run`` then invalid)."""
        self._check_waiting(trial)
        if trial.number == BASELINE_SEQ:
            _check_baseline(self._spec, run)
            self._store_baseline(run)
            self._objective = self._spec.objective.with_baseline(self._baseline_stats)
            del self._pending[trial.number]
            return run
        point = {k: trial.params[k] for k in self._spec.space.names if k in trial.params}
        try:
            _record(self._db, self.search, trial.number, point, run, self._objective, trial, pruned)
        except DatabaseError as e:
            if not _recorded(self._db, self.search, trial.number):
                raise
            raise SearchError(
                f"study {self.name!r}: its run {trial.number} was recorded meanwhile by another "
                "process driving the same study; drive a study from one process at a time "
                "(give each process its own name=)"
            ) from e
        del self._pending[trial.number]
        self.runs.append(run)
        self._peers.append(Peer(dict(trial.intermediate), completed=run.valid and not pruned))
        self.measured += 1
        if self._proposer.dynamic:
            self._next = self._proposer.send(run)
        if self._next is None or self._spent(self._next.index):
            self._end_if_over()
        return run

    def result(self) -> TuneResult:
        """Every run and the best that counts; a SearchError if the study failed."""
        if self.state == "failed":
            raise SearchError(f"study {self.name!r} (search {self.search}): {self.reason}")
        measured = ([self.baseline] if self.baseline else []) + self.runs  # as stored: -1 first
        best = self._objective.best(measured)
        pareto = self._objective.front(measured)
        return TuneResult(
            self.search, self.name, self._objective.stat, self.runs[:], best, pareto,
            self.baseline, self.reason if self.state == "done" else None,
        )  # fmt: skip

    def end_early(self, reason: str) -> None:
        """End the study now, ``done`` with ``reason`` (its time is up) unless it failed."""
        if self.state == "active":
            self._pending.clear()  # asked, not told: asked again when it is opened again
            state, why = _ending(self._objective, self.runs)
            self.state, self.reason = state, reason if state == "done" else why
            _end(self._db, self.search, self.state, self.reason)

    def close(self) -> None:
        """Stop here: a study not over is marked stopped (open it again to resume)."""
        if self._closed:
            return
        try:
            if self.state == "active":
                self.state, self.reason = "stopped", f"interrupted; {self._hint}"
                _end(self._db, self.search, self.state, self.reason)
        finally:
            self._closed = True
            self._pending.clear()
            if self._owns_db:
                self._db.dispose()

    def __enter__(self) -> Study:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _baseline_stats(self) -> Mapping[str, Any] | None:
        return None if self.baseline is None else self.baseline.stats

    def _store_baseline(self, run: Run) -> None:
        _record(self._db, self.search, BASELINE_SEQ, dict(self._spec.baseline or {}), run,
                self._spec.objective)  # fmt: skip
        self.baseline = run

    def _spent(self, index: int) -> bool:
        return self._spec.budget is not None and index >= self._spec.budget

    def _end_if_over(self) -> None:
        if self.state == "active" and not self._pending:
            self.state, self.reason = _ending(self._objective, self.runs)
            _end(self._db, self.search, self.state, self.reason)

    def _check_waiting(self, trial: object) -> None:
        self._open_or_raise()
        waiting = isinstance(trial, Trial) and self._pending.get(trial.number) == trial
        if not waiting:  # told already, or asked of another study
            raise SearchError(
                f"study {self.name!r}: {trial!r} is not a trial waiting for its result (told "
                "already, or asked of another study); tell each trial ask() gave once"
            )

    def _open_or_raise(self) -> None:
        if self._closed:
            raise SearchError(f"study {self.name!r} is closed; open it again with its name")


def _session(s: Any) -> int:
    """The session studies live in (label ``tuna.tune``), made on first use."""
    found = s.execute(
        select(TuningSession.id)
        .where(TuningSession.label == LABEL, TuningSession.backend == "bench")
        .order_by(TuningSession.id)
        .limit(1)
    ).scalar()
    if found is not None:
        return int(found)
    spec = SessionSpec(arch="python", num_cu=1, backend="bench", label=LABEL)
    return add_session(s, spec).id


def _open_search(db: Database, study: _Study) -> int:
    """The study's search: made, or found (same name) and checked to be the same study."""
    objective = study.stored_objective
    with db.session(immediate=True) as s:
        session = _session(s)
        row = s.execute(
            select(Search).where(Search.session == session, Search.name == study.name)
        ).scalar_one_or_none()
        if row is None:
            row = Search(
                session=session,
                name=study.name,
                space_file=f"{study.name}.json"[:255],
                space_text=study.space_text,
                base={},
                searcher=study.strategy,
                objective=objective,
                budget=study.budget,
                parallelism=1,
                backend="bench",
                spec={IN_PROCESS: True, "required_stats": study.objective.named_stats()},
                state="active",
                pruner=study.pruner.to_json() if study.pruner is not None else None,
            )
            s.add(row)
            s.flush()
            return row.id
        was = (json.loads(row.space_text), row.searcher, dict(row.objective))
        now = (json.loads(study.space_text), study.strategy, objective)
        if was != now or not row.spec.get(IN_PROCESS):
            raise SearchError(
                f"study {study.name!r} (search {row.id}) was made with another space, strategy "
                "or objective; give the same ones to resume it, or another name= for a new study"
            )
        row.state, row.reason, row.finished, row.budget = "active", None, None, study.budget
        row.pruner = study.pruner.to_json() if study.pruner is not None else None
        return row.id


def _record(
    db: Database,
    search: int,
    seq: int,
    point: Mapping[str, Any],
    run: Run,
    objective: Objective,
    trial: Trial | None = None,
    pruned: bool = False,
) -> None:
    stats = dict(run.stats)
    with db.session() as s:
        finished = s.execute(select(db_now())).scalar_one()
        insert_runs(
            s.connection(),
            [
                {
                    "search": search,
                    "seq": seq,
                    "point": dict(point),
                    "config": dict(run.config),
                    "stats": stats if run.valid else None,
                    "value": objective_value({"stat": objective.stat}, stats),
                    "valid": run.valid,
                    "reason": run.reason,
                    "finished": finished,
                    "intermediate": stored_curve(trial.intermediate) if trial else None,
                    "pruned": pruned,
                }
            ],
        )


def _recorded(db: Database, search: int, seq: int) -> bool:
    with db.session() as s:
        found = s.execute(
            select(SearchRun.id).where(SearchRun.search == search, SearchRun.seq == seq)
        ).first()
        return found is not None


def _ending(objective: Objective, runs: Sequence[Run]) -> tuple[str, str | None]:
    try:
        objective.best(runs)
    except ObjectiveError as e:
        return "failed", str(e)
    return "done", None


def _end(db: Database, search: int, state: str, reason: str | None) -> None:
    with db.session() as s:
        s.execute(
            update(Search)
            .where(Search.id == search)
            .values(state=state, reason=reason, finished=db_now())  # not job.state: the search's
        )


def _run_of(row: SearchRun) -> Run:
    if row.valid:
        return Run(dict(row.config), dict(row.stats or {}))
    return Run.invalid(dict(row.config), row.reason or "invalid")
