"""The ask-and-tell study (:class:`Study`): a stored search driven one trial at a time,
by the user's loop (``tuna.study``) or by ``tuna.tune``'s; :mod:`tuna.searches.studystore`
keeps its rows."""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from tuna.db import Database
from tuna.errors import DatabaseError
from tuna.searchers import Run, replay
from tuna.searchers.errors import SearchError
from tuna.searchers.function import stats_of
from tuna.searchers.propose import Proposal, Proposer
from tuna.searchers.prune import Peer, Pruned
from tuna.searches.create import BASELINE_SEQ, make_searcher
from tuna.searches.objectives import check_baseline_run
from tuna.searches.studyspec import StudySpec, TuneResult
from tuna.searches.studystore import (
    ClaimHeartbeat,
    claim_trial,
    end_search,
    ending,
    finish_trial,
    open_search,
    pending_trials,
    record_run,
    recorded,
    recorded_baseline,
    release_stale,
    release_trials,
    stored_runs,
    trial_state,
)
from tuna.searches.trial import Trial, TrialProgress

log = logging.getLogger(__name__)


class Study:
    """A stored study driven one trial at a time; :func:`tuna.study` opens one.

    Opening it makes its search or finds it by name and replays the recorded runs into a
    fresh searcher, so :meth:`ask` goes on where the study stopped. A static strategy may
    have several trials asked and not yet told (told in any order); a dynamic one (Step,
    Bisect, ...) needs each told before the next is asked. A trial asked and never told is
    not stored: the study asks it again when it is next opened. When the strategy or the
    budget has nothing left and every trial is told, the study ends (``done``, or ``failed``
    when no run holds the stat).

    Several processes may drive one study at once (:mod:`.studystore`): each trial is
    claimed when asked, a trial another process claimed is passed over (a searcher that
    needs each result waits for it), so none is measured twice or lost; the last process
    to finish ends the study, and :meth:`result` reads every process's runs. A claim is
    kept alive by the process's heartbeat while the study is open; the claim of a process
    that died (on any host) lapses and is taken over.

    A study with a baseline asks it first (trial ``-1``) until it is told; told, it is
    checked to print every stat the objective names. Given ``measure``, the study measures
    its baseline itself, before its search is written (``tune()``).
    """

    def __init__(
        self,
        db: Database,
        spec: StudySpec,
        hint: str,
        *,
        owns_db: bool = False,
        measure: Callable[[dict[str, Any]], Run] | None = None,
    ) -> None:
        self._db, self._spec, self._hint, self._owns_db = db, spec, hint, owns_db
        self.baseline: Run | None = recorded_baseline(db, spec)
        measured = None
        if spec.baseline is not None and self.baseline is None and measure is not None:
            measured = measure(dict(spec.baseline))  # before anything is written
            _check_baseline(spec, measured)
        self.search = open_search(db, spec)
        release_stale(db, self.search)  # trials of a process killed while measuring them
        if measured is not None:
            self._store_baseline(measured)
        self._objective = spec.objective.with_baseline(self._baseline_stats)
        self.runs, self._peers = stored_runs(db, self.search)  # the runs' curves: to prune by
        self._proposer: Proposer
        self._next: Proposal | None
        self._start_searcher()
        self._pending: dict[int, Trial] = {}
        self.measured = 0  # runs recorded since it was opened
        self.state: str = "active"
        self.reason: str | None = None
        self._closed = False
        self._heartbeat = ClaimHeartbeat(db, self.search)  # keeps this process's claims
        self._heartbeat.start()
        weakref.finalize(self, self._heartbeat.cancel)  # a study dropped unclosed: no more beats
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
        proposal = self._claim_next()
        if proposal is None:
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
            self._start_searcher()  # no run yet: the searcher starts again, knowing the baseline
            return run
        if not finish_trial(
            self._db, self.search, trial.number, run, self._objective, trial, pruned
        ):
            raise SearchError(
                f"study {self.name!r}: trial {trial.number} is not this process's any more (its "
                "claim was dropped: was the study opened elsewhere while this one was "
                "stopped?); ask again"
            )
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
        """Every run (every process's) and the best that counts; a SearchError if the study
        failed."""
        self.runs, _ = stored_runs(self._db, self.search)
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
            self._release()  # asked, not told: asked again when it is opened again
            state, why = ending(self._objective, self.runs)
            self.state, self.reason = state, reason if state == "done" else why
            if not pending_trials(self._db, self.search):  # else another process goes on
                end_search(self._db, self.search, self.state, self.reason)

    def close(self) -> None:
        """Stop here: a study not over is marked stopped (open it again to resume)."""
        if self._closed:
            return
        try:
            if self.state == "active":
                self._release()
                self.state, self.reason = "stopped", f"interrupted; {self._hint}"
                if not pending_trials(self._db, self.search):  # else another process goes on
                    end_search(self._db, self.search, self.state, self.reason)
        finally:
            self._heartbeat.stop()
            self._closed = True
            self._pending.clear()
            if self._owns_db:
                self._db.dispose()

    def __enter__(self) -> Study:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start_searcher(self) -> None:
        """A fresh searcher, replayed to the recorded runs. It judges runs (and the
        predictive strategy its predictions) by the objective with the baseline's stats, so
        that a ``baseline.NAME`` constraint holds for it as it does for the study."""
        searcher = make_searcher(self._spec.strategy, self._spec.space, self._objective)
        replayed = replay(self._spec.space, self.runs, searcher)
        self._proposer, self._next = replayed.proposer, replayed.next

    @property
    def _baseline_stats(self) -> Mapping[str, Any] | None:
        return None if self.baseline is None else self.baseline.stats

    def _store_baseline(self, run: Run) -> None:
        """Record the baseline; when another process driving the study recorded it first,
        its run is the baseline (one baseline a study)."""
        try:
            record_run(self._db, self.search, BASELINE_SEQ, dict(self._spec.baseline or {}),
                       run, self._spec.objective)  # fmt: skip
        except DatabaseError:
            if not recorded(self._db, self.search, BASELINE_SEQ):
                raise
            run = recorded_baseline(self._db, self._spec) or run
        self.baseline = run

    def _spent(self, index: int) -> bool:
        return self._spec.budget is not None and index >= self._spec.budget

    def _end_if_over(self) -> None:
        """End the study when nothing is left to ask and no process measures a trial (the
        last one to finish ends it, judging every process's runs)."""
        if self.state == "active" and not self._pending:
            if pending_trials(self._db, self.search):
                self.state, self.reason = "done", None  # here; the study's row stays active
                return
            self.runs, _ = stored_runs(self._db, self.search)
            self.state, self.reason = ending(self._objective, self.runs)
            end_search(self._db, self.search, self.state, self.reason)

    def _claim_next(self) -> Proposal | None:
        """The next proposal, claimed for this process (None when the strategy or budget is
        spent). A trial another process recorded is passed over (a dynamic searcher is
        sent its Run); one it is measuring is passed over too, or, for a dynamic searcher,
        waited for."""
        while (proposal := self._next) is not None and not self._spent(proposal.index):
            point = {k: proposal.config[k] for k in self._spec.space.names if k in proposal.config}
            if claim_trial(self._db, self.search, proposal.index, point, proposal.config):
                return proposal
            taken = trial_state(self._db, self.search, proposal.index)
            if not self._proposer.dynamic:
                self._next = self._proposer.send(None)
                continue
            waited = 0.0
            while isinstance(taken, str):  # its result decides what comes next: wait for it
                if not waited:
                    log.info("study %r: waiting for trial %d (%s)", self.name, proposal.index,
                             taken)  # fmt: skip
                time.sleep(0.05)
                waited += 0.05
                taken = trial_state(self._db, self.search, proposal.index)
            if taken is not None:  # recorded meanwhile (None: released: claim it again)
                self.runs.append(taken)
                self._next = self._proposer.send(taken)
        return None

    def _release(self) -> None:
        """Drop this process's claims of trials asked and never told."""
        release_trials(self._db, self.search, [n for n in self._pending if n != BASELINE_SEQ])
        self._pending.clear()

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


def _check_baseline(study: StudySpec, base: Run) -> None:
    check_baseline_run(f"study {study.name!r}", study.baseline, study.objective, base)
