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

**Validation** (PredTuner's test set): ``tuna.validate(result, objective)`` measures the
study's front again on a second input set, the objective reading which from
``trial.inputs`` (``"tune"`` while tuning, ``"test"`` then), and stores what the
``predictive`` strategy predicted beside what was measured (:mod:`tuna.searches.validation`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from tuna.db import Database, open_database
from tuna.searchers import Run
from tuna.searchers.function import load_function
from tuna.searchers.params import Param
from tuna.searchers.prune import Pruned, Pruner, as_pruner
from tuna.searchers.timebudget import TimeBudget, parse_duration
from tuna.searches.create import BASELINE_SEQ
from tuna.searches.study import Study
from tuna.searches.studyspec import StudySpec, TuneResult, check_study, with_objectives
from tuna.searches.trial import ObjectiveFn, Trial, measure_call
from tuna.searches.validation import Validation, validate

__all__ = ["Pruned", "Study", "Trial", "TuneResult", "Validation", "study", "tune", "validate"]


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
    spec = check_study(objective, space, direction, strategy, budget, name, stat)
    spec = with_objectives(spec, stat, directions, constraints, baseline)
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
    spec = check_study(None, space, direction, strategy, budget, name, stat)
    spec = with_objectives(spec, stat, directions, constraints, baseline)
    spec = replace(spec, pruner=as_pruner(pruner))
    hint = "open it again with tuna.study and the same name to resume"
    return _open(spec, storage, hint)


def _open(
    spec: StudySpec,
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
