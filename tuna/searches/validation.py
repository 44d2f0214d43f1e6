"""A search's validation stage: its front measured again on a second input set (issue #28).

PredTuner tunes on one input set and keeps only the configurations that still meet the
QoS threshold on another (its *test set*, ``qos_keep_threshold``). Here the objective is
told which set to measure on by its trial: ``objective(params, trial)`` reads
``trial.inputs``, ``"tune"`` while the study tunes and the validation's name (``"test"``
by default) now. An objective of one argument cannot be told, and is refused. A search
whose runs are shell commands reads its inputs from its settings instead: it is validated
with other values of them (:func:`validate_commands`, :mod:`tuna.searches.remeasure`).

:func:`validate_search` measures every run of the search's stored front, and its
baseline (the constraints' ``baseline.NAME`` are read from the baseline measured on the
same inputs), and stores one ``search_validation`` row per run: what the search's model
**predicted** of its stats when it chose it (the ``predictive`` strategy's, found again by
replaying the stored runs into a fresh searcher; None for a run chosen otherwise), what
was **measured** on the new inputs, and whether it is **kept** there (it meets the
constraints). The tuning stats stay in ``search_run``. Everything is checked and measured
before anything is written (a bad input set, an unknown stat: one SearchError, nothing
stored); validating again on the same inputs replaces the rows.
:func:`stored_validation` reads them back, and :func:`validate` is the Python API
(``tuna.validate``); ``tuna search validate`` the command, and
:mod:`tuna.report.validation` draws predicted against measured.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import case, delete, func, insert, select
from sqlalchemy.engine import URL

from tuna.backends import get_backend
from tuna.db import Database, open_database
from tuna.db.models import Search, SearchRun, SearchValidation, TuningSession
from tuna.errors import TunaError
from tuna.searchers import Objective, Run, replay
from tuna.searchers.errors import SearchError
from tuna.searchers.function import load_function, takes_trial
from tuna.searches import query
from tuna.searches.create import BASELINE_SEQ, IN_PROCESS, load_space, make_searcher
from tuna.searches.remeasure import Remeasure, command_inputs, command_search
from tuna.searches.studyspec import TuneResult
from tuna.searches.studystore import LABEL, run_of
from tuna.searches.trial import TUNING_INPUTS, Trial, measure_call

log = logging.getLogger(__name__)

TEST_INPUTS = "test"  # PredTuner's name for the second input set
MAX_INPUTS = 64  # search_validation.inputs


@dataclass(frozen=True)
class ValidatedRun:
    """One run of the front (``seq`` -1: the baseline) on the validation inputs: what the
    model predicted when it chose it (None: chosen otherwise), what it measured while
    tuning, what it measured now (None: it failed, ``reason`` says why), and whether it
    still meets the constraints there."""

    seq: int
    config: dict[str, Any]
    predicted: dict[str, float] | None
    tuned: dict[str, Any]
    measured: dict[str, Any] | None
    reason: str | None
    kept: bool


@dataclass(frozen=True)
class Validation:
    """A search's front validated on ``inputs``: its runs in the front's order (the
    baseline among them when it is on the front; always as ``baseline``), and the
    ``stats`` compared (every objective's, then the constraints')."""

    search: int
    name: str
    inputs: str
    stats: tuple[str, ...]
    runs: list[ValidatedRun]
    baseline: ValidatedRun | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list[ValidatedRun]:
        """The runs that still meet the constraints on the validation inputs."""
        return [r for r in self.runs if r.kept]


def validate(
    study: str | int | TuneResult,
    objective: Callable[..., Any] | str,
    storage: str | URL | Database | None = None,
    *,
    inputs: str = TEST_INPUTS,
    stats: Sequence[str] | None = None,
) -> Validation:
    """Measure the front of ``study`` (a ``tuna.tune`` study's name or result, or a search
    id) again on the input set ``inputs``; see the module docstring. ``objective`` is the
    study's, of two arguments (``params, trial``: it measures on ``trial.inputs``), or its
    ``"module:function"``; ``stats`` the stats to compare (default: the objective's)."""
    fn = load_function(objective, Path.cwd()) if isinstance(objective, str) else objective
    db = storage if isinstance(storage, Database) else open_database(storage)
    try:
        return validate_search(db, _study_search(db, study), fn, inputs=inputs, stats=stats)
    finally:
        if not isinstance(storage, Database):
            db.dispose()


def _study_search(db: Database, study: str | int | TuneResult) -> int:
    if isinstance(study, TuneResult):
        return study.search
    if isinstance(study, int) and not isinstance(study, bool):
        return study
    with db.session() as s:
        found = s.execute(
            select(Search.id)
            .join(TuningSession, TuningSession.id == Search.session)
            .where(TuningSession.label == LABEL, Search.name == str(study))
        ).scalar()
    if found is None:
        raise SearchError(
            f"no tuna.tune study is named {study!r} in this database; give the name it was "
            "tuned with (name=, default the objective's function name), its result, or a "
            "search id"
        )
    return int(found)


def check_inputs(inputs: object) -> str:
    """The validation input set's name, or one SearchError saying what is wrong."""
    if not isinstance(inputs, str) or not inputs.strip() or len(inputs) > MAX_INPUTS:
        raise SearchError(
            f"inputs {inputs!r}: name the second input set in 1 to {MAX_INPUTS} characters, "
            f"e.g. inputs='{TEST_INPUTS}'"
        )
    if inputs.strip() == TUNING_INPUTS:
        raise SearchError(
            f"inputs {inputs!r} is the set the study was tuned on; validation measures the "
            f"front on a second input set: name it, e.g. inputs='{TEST_INPUTS}'"
        )
    return inputs.strip()


def validate_search(
    db: Database,
    search: int,
    objective: Callable[..., Any],
    *,
    inputs: str = TEST_INPUTS,
    stats: Sequence[str] | None = None,
) -> Validation:
    """Validate search ``search``'s front on ``inputs`` and store it (module docstring)."""
    inputs = check_inputs(inputs)
    if not callable(objective):
        raise SearchError(f"objective {objective!r} is not callable; give the study's function")
    if not takes_trial(objective):
        name = getattr(objective, "__name__", repr(objective))
        raise SearchError(
            f"objective {name} takes params only, so it cannot be told which input set to "
            "measure on; give it a second argument, trial, and measure on trial.inputs "
            f"('{TUNING_INPUTS}' while tuning, '{inputs}' now)"
        )
    stat = query.find_search(db, search).objective.stat

    def measure(seq: int, config: Mapping[str, Any]) -> Run:
        return measure_call(objective, Trial(search, seq, dict(config), inputs=inputs), stat)[0]

    return _validate(db, search, measure, inputs, stats)


def validate_commands(
    db: Database,
    search: int,
    settings: Mapping[str, Any],
    *,
    inputs: str = TEST_INPUTS,
    stats: Sequence[str] | None = None,
) -> Validation:
    """Validate command search ``search``'s front on ``inputs``: its runs measured again on
    this machine with ``settings`` over their configs (:mod:`tuna.searches.remeasure`: the
    settings its commands read its inputs from, e.g. ``{"data": "test.bin"}``)."""
    inputs = check_inputs(inputs)
    found = command_search(db, search)
    given = command_inputs(found, settings)
    with Remeasure(db, found, given) as remeasure:
        return _validate(db, search, lambda _seq, config: remeasure(config), inputs, stats)


def _validate(
    db: Database,
    search: int,
    measure: Callable[[int, Mapping[str, Any]], Run],
    inputs: str,
    stats: Sequence[str] | None,
) -> Validation:
    """The front (and baseline) of ``search`` measured by ``measure(seq, config)`` on
    ``inputs``, judged against the baseline measured there, and stored."""
    summary = query.find_search(db, search)
    found = _front(db, summary)
    if not found.front:
        raise SearchError(
            f"search {search} ({summary.name!r}) has no run that counts, so no front to "
            "validate; tune it first"
        )
    compared = _compared(summary.objective, found, stats, search)
    predicted, notes = _predictions(db, search, summary.objective)
    chosen = found.front if found.baseline is None or found.baseline in found.front else [
        found.baseline, *found.front]  # fmt: skip
    measured = {seq: measure(seq, config) for seq, config, _ in chosen}
    base = measured.get(BASELINE_SEQ)
    judge = summary.objective.with_baseline(base.stats if base is not None and base.valid else None)
    runs = [
        ValidatedRun(
            seq, dict(measured[seq].config), predicted.get(seq), dict(tuned),
            dict(measured[seq].stats) if measured[seq].valid else None, measured[seq].reason,
            judge.counts(measured[seq]),
        )
        for seq, _, tuned in chosen
    ]  # fmt: skip
    _store(db, search, inputs, runs)
    baseline = next((r for r in runs if r.seq == BASELINE_SEQ), None)
    front = [r for r in runs if any(seq == r.seq for seq, _, _ in found.front)]
    return Validation(search, summary.name, inputs, compared, front, baseline, notes)


@dataclass(frozen=True)
class _Found:
    front: list[tuple[int, dict[str, Any], dict[str, Any]]]  # seq, config, tuning stats
    baseline: tuple[int, dict[str, Any], dict[str, Any]] | None


def _front(db: Database, summary: query.SearchSummary) -> _Found:
    """The stored front's runs (and the baseline's) with their configs and stats."""
    front = query.pareto(db, summary)
    base = query.baseline_run(db, summary)
    seqs = [r.seq for r in front] + ([base.seq] if base is not None else [])
    with db.session() as s:
        rows = s.execute(
            select(SearchRun.seq, SearchRun.config, SearchRun.stats).where(
                SearchRun.search == summary.id, SearchRun.seq.in_(seqs)
            )
        ).all()
    by_seq = {int(r.seq): (int(r.seq), dict(r.config), dict(r.stats or {})) for r in rows}
    baseline = by_seq.get(BASELINE_SEQ) if base is not None else None
    return _Found([by_seq[r.seq] for r in front], baseline)


def _compared(
    objective: Objective, found: _Found, stats: Sequence[str] | None, search: int
) -> tuple[str, ...]:
    """The stats to set side by side: ``stats``, each checked to be one the front's runs
    hold, or the objective's (each objective's stat, then the constraints')."""
    held = sorted({k for _, _, st in found.front for k in st})
    if stats is None:
        return tuple(n for n in _modelled(objective) if n in held)
    if isinstance(stats, str) or not stats:
        raise SearchError(f"stats {stats!r}: give a list of stat names, e.g. ['accuracy']")
    for n in stats:
        if n not in held:
            raise SearchError(
                f"stat {n!r} is not a stat of search {search}'s front (its runs hold: "
                f"{', '.join(held)}); name one of those"
            )
    return tuple(dict.fromkeys(stats))


def _modelled(objective: Objective) -> tuple[str, ...]:
    """The stats compared by default: each objective's, then the constraints' (the stats
    the predictive strategy models)."""
    named = [t.stat for t in objective.targets]
    return tuple(
        dict.fromkeys([*named, *sorted({n for c in objective.constraints for n in c.stats})])
    )


def _predictions(
    db: Database, search: int, objective: Objective
) -> tuple[dict[int, dict[str, float]], list[str]]:
    """What the search's strategy predicted of each run it chose, by ``seq``: its stored
    runs replayed into a fresh searcher (seeded: it predicts what it predicted). Empty for
    a searcher that predicts nothing (no ``predicted``), with a note when replay fails.

    The searcher judges runs as it did while tuning: a ``tuna.tune`` study's knows the
    baseline's stats (``objective``), a search the driver drives judges by the stored
    objective alone."""
    with db.session() as s:
        row = s.execute(select(Search).where(Search.id == search)).scalar_one()
        expression, space_file, text = row.searcher, row.space_file, row.space_text
        base, spec, backend = dict(row.base), dict(row.spec), row.backend
        if not spec.get(IN_PROCESS):
            objective = Objective.from_stored(row.objective)
        stored = s.execute(
            select(SearchRun)
            .where(SearchRun.search == search, SearchRun.seq > BASELINE_SEQ)
            .where(SearchRun.valid.is_not(None))
            .order_by(SearchRun.seq)
        ).scalars()
        runs = [(int(r.seq), run_of(r)) for r in stored]
    if not expression:
        return {}, []
    try:
        space = load_space(space_file, text, get_backend(backend).runtime_only(spec))
        searcher = make_searcher(expression, space, objective)
        if searcher is None or not callable(getattr(searcher, "predicted", None)):
            return {}, []
        replay(space, [r for _, r in runs], searcher, base)
    except TunaError as e:
        note = f"the predictions could not be found again by replaying the search ({e})"
        log.warning("search %d: %s", search, note)
        return {}, [note]
    predict: Callable[[Mapping[str, Any]], dict[str, float] | None] = searcher.predicted  # type: ignore[attr-defined]
    out = {}
    for seq, run in runs:
        guess = predict(run.config)
        if guess is not None:
            out[seq] = {k: float(v) for k, v in guess.items()}
    return out, []


def _store(db: Database, search: int, inputs: str, runs: Sequence[ValidatedRun]) -> None:
    """The validation's rows, replacing any earlier validation of the search on ``inputs``."""
    table = SearchValidation.__table__
    with db.session() as s:
        s.execute(delete(table).where(table.c.search == search, table.c.inputs == inputs))
        s.execute(
            insert(table),
            [
                {
                    "search": search, "seq": r.seq, "inputs": inputs, "config": r.config,
                    "predicted": r.predicted, "stats": r.measured, "reason": r.reason,
                    "kept": r.kept,
                }
                for r in runs
            ],
        )  # fmt: skip


@dataclass(frozen=True)
class ValidationSummary:
    """One input set a search's front was validated on: how many runs, how many kept."""

    inputs: str
    runs: int
    kept: int


def validations(db: Database, search: int) -> list[ValidationSummary]:
    """Each input set the search was validated on (by name), as ``tuna search show`` says:
    the runs measured there (the baseline's row included) and those kept."""
    table = SearchValidation.__table__
    with db.session() as s:
        rows = s.execute(
            select(table.c.inputs, func.count(), func.sum(case((table.c.kept, 1), else_=0)))
            .where(table.c.search == search)
            .group_by(table.c.inputs)
            .order_by(table.c.inputs)
        ).all()
    return [ValidationSummary(str(i), int(n), int(k or 0)) for i, n, k in rows]


def stored_validation(db: Database, search: int, inputs: str = TEST_INPUTS) -> Validation | None:
    """The validation of ``search`` on ``inputs`` as stored (None: never validated there):
    each run with its tuning stats (from ``search_run``), in the front's order."""
    summary = query.find_search(db, search)
    with db.session() as s:
        rows = s.execute(
            select(SearchValidation, SearchRun.stats)
            .join(
                SearchRun,
                (SearchRun.search == SearchValidation.search)
                & (SearchRun.seq == SearchValidation.seq),
            )
            .where(SearchValidation.search == search, SearchValidation.inputs == inputs)
            .order_by(SearchValidation.id)
        ).all()
        runs = [
            ValidatedRun(v.seq, dict(v.config), v.predicted, dict(tuned or {}), v.stats,
                         v.reason, bool(v.kept))
            for v, tuned in rows
        ]  # fmt: skip
    if not runs:
        return None
    front = {r.seq for r in query.pareto(db, summary)}
    baseline = next((r for r in runs if r.seq == BASELINE_SEQ), None)
    return Validation(
        search, summary.name, inputs, _modelled(summary.objective),
        [r for r in runs if r.seq in front], baseline,
    )  # fmt: skip
