"""The driver: a search's searcher turned into jobs, and finished Runs fed back to it.

* A **static** searcher's points (the first ``budget`` of them) are all enqueued at once:
  one ``search_run`` per point (``seq`` = its proposal index), one ``search_build`` and one
  build job per distinct build tuple (the build-time values, hashed as ``build_key``), and
  each run's job once its build is stored (:mod:`tuna.jobs.load`).
  ``META_is_config_valid`` has already filtered the points: a refused one is never built.
* A **dynamic** searcher is driven in rounds (:class:`tuna.searchers.RoundProposer`): a round
  is the points it proposes before it needs a result — one point for a searcher of the
  one-point protocol (Bisect, Step, Composer: each point depends on the last Run), a whole
  round for one with ``rounds()`` (the strategies of :mod:`tuna.searchers.strategies`). Up to
  ``parallelism`` points of the round are in flight; as each Run lands the next point of
  the round is enqueued, and once the round's Runs have all landed they are sent to the
  searcher together, in proposal order, for its next round.
* **Resume**: a driver keeps nothing it has not recorded. Started again (after a crash, or
  by another go_fish), it rebuilds the searcher from the ``search_run`` rows — a static
  one passes over recorded points (:func:`tuna.searchers.replay`), a dynamic one is replayed
  round by round: each round's recorded Runs (matched to its proposals by ``seq``) are
  sent to it, up to the round still in flight, whose recorded runs are awaited and whose
  unrecorded points are enqueued — and continues: nothing is measured twice or lost.
  Enqueueing is idempotent (a ``seq`` already recorded is skipped), so two drivers of one
  search do no harm.
* A **baseline** (a configuration the search's ``objective`` names: ``tuna search create
  --baseline``, or a strategy's solver default parameters when a constraint reads
  ``baseline.NAME``) is measured first, as run -1, and nothing else is proposed until it
  has landed: from then on the objective judges every run against its stats, the
  searcher's included (a resume finds it landed and starts the same way). An invalid
  baseline, or one without a stat the objective names, fails the search.
* A **time budget** (``search.time_budget_s``) runs from the search's first run (its
  ``created``, on the database clock: a driver started again counts the time already
  used). Once it is spent the driver proposes and enqueues nothing more; the runs in flight
  finish and the search ends ``done``, its reason saying so. A static search with a time
  budget is enqueued ``parallelism`` runs at a time rather than all at once, so that
  nothing is left queued when the time is up.
* A search ends ``done`` when the searcher has nothing more (or the budget is spent) and
  every run finished; ``failed`` (with the reason) when its searcher raises, its recorded
  runs no longer replay, or the objective's stat is in no run's output.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import update

from tuna.backends import get_backend
from tuna.db import Database
from tuna.db.clock import db_now
from tuna.db.models import Search
from tuna.db.retry import with_retry
from tuna.errors import TunaError
from tuna.searchers import Objective, Proposal, RoundProposer, Run, replay
from tuna.searchers.builtin import SearcherInterface
from tuna.searchers.errors import ObjectiveError, SearchError
from tuna.searchers.propose import Proposer
from tuna.searchers.timebudget import TimeBudget
from tuna.searches.create import BASELINE_SEQ, load_space, make_searcher
from tuna.searches.enqueue import Enqueuer
from tuna.searches.objectives import check_baseline_run
from tuna.searches.runrows import (
    FINAL,
    baseline_row,
    final_build,
    rows_by_id,
    run_of,
    search_rows,
    time_used,
    unfinished,
)
from tuna.searches.strategy import (
    FINAL_CANDIDATES,
    candidate_space,
    candidate_stats_of,
    is_strategy,
    make_searcher_for,
    solver_id,
)

log = logging.getLogger(__name__)

_CHUNK = 500  # proposals per enqueueing transaction


@dataclass
class _Slot:
    """One proposal of the round in flight: not enqueued yet (``run_id`` None), in flight,
    or landed (``run`` set)."""

    proposal: Proposal
    run_id: int | None = None
    run: Run | None = None

    @property
    def seq(self) -> int:
        return self.proposal.index


class SearchDriver:
    """Drives one search; :meth:`start` (or a resume) then :meth:`tick` until it is over."""

    def __init__(
        self, db: Database, search_id: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.db = db
        self.id = search_id
        self.clock = clock
        with db.session() as s:
            row = s.get(Search, search_id)
            if row is None:
                raise TunaError(f"search {search_id} does not exist; `tuna search list` shows them")
            self.session = row.session
            self.name = row.name
            self.ended_as = row.state
            self.ended_reason = row.reason
            self.budget = row.budget
            self.time_budget_s = row.time_budget_s
            self.parallelism = row.parallelism
            self.spec = dict(row.spec)
            self.base = dict(row.base)
            self.expression = row.searcher
            backend = row.backend
            self.objective = Objective.from_stored(row.objective)
            baseline = row.objective.get("baseline")
            self.baseline = dict(baseline) if isinstance(baseline, dict) else None
            space_file, space_text = row.space_file, row.space_text
        self.strategy = is_strategy(self.spec)
        if self.strategy:  # a tunable solver's space (tuna.searches.strategy)
            candidates = candidate_space(db, self.session, self.spec)
            self.space = candidates.parameter_space()
            solver = solver_id(db, self.session, str(self.spec["solver"]))
            computed = None  # threads, workspace, ...: when the objective names them
            named = {*self.objective.named_stats(), *self.objective.baseline_stats}
            if named - {"time_ms"}:
                computed = candidate_stats_of(db, self.session, self.spec)
            self.enqueuer = Enqueuer(
                db, self.id, self.session, self.space, self.spec,
                strategy=True, solver=solver, names=candidates.names, computed=computed,
            )  # fmt: skip
        else:
            runs_on = get_backend(backend)
            self.space = load_space(space_file, space_text, runs_on.runtime_only(self.spec))
            builds = runs_on.needs_build(self.spec)
            self.enqueuer = Enqueuer(db, self.id, self.session, self.space, self.spec, builds)
        self.proposer: Proposer | None = None
        self.rounds: RoundProposer | None = None
        self.round: list[_Slot] = []  # the dynamic searcher's round in flight
        self.round_cut = False  # the budget cut the round: it is the last
        self.started = False
        self.awaiting_baseline = False  # enqueued, not landed: nothing else is proposed yet
        self.exhausted = False
        self.next_seq = 0
        self.enqueued = 0  # proposals this driver enqueued (not counting a resume's)
        self.time_budget: TimeBudget | None = None
        self.timed_out = False  # the time budget is spent: nothing more is proposed
        self.pending: list[Proposal] = []  # a static search's points not enqueued yet
        self.landed_at: dict[int, float] = {}  # seq -> when its Run was seen (figures)

    @property
    def dynamic(self) -> bool:
        return self.rounds is not None

    @property
    def in_flight(self) -> list[_Slot]:
        """The round's points enqueued whose Run has not landed."""
        return [s for s in self.round if s.run_id is not None and s.run is None]

    @property
    def waiting(self) -> bool:
        """Whether a Run landing would let this driver propose or enqueue more."""
        return bool(self.in_flight) or bool(self.pending) or self.awaiting_baseline

    # -- start / resume ---------------------------------------------------------------------

    def start(self) -> None:
        """Measure the baseline first when the search has one; then (:meth:`_search`)
        rebuild the searcher from the recorded runs and enqueue what comes next."""
        self.started = True
        if self.baseline is not None:  # enqueued once (idempotent), before anything else
            point = dict(self.baseline)
            self._enqueue([(BASELINE_SEQ, Proposal(BASELINE_SEQ, point, {**self.base, **point}))])
            self.awaiting_baseline = True
            if not self._baseline_landed():
                return  # tick waits for it
        self._search()

    def _baseline_landed(self) -> bool:
        """Whether the baseline run ended; once it has, the objective judges every run
        against its stats (the searcher, the final job and the search's answer alike), so
        the searcher starts only then. A baseline that is invalid or lacks a stat the
        objective names ends the search (a :class:`SearchError` of one line)."""
        row = baseline_row(self.db, self.id)
        if row is None or row.valid is None:
            return False
        run = run_of(row)
        check_baseline_run(f"search {self.id} ({self.name})", self.baseline, self.objective, run)
        self.objective = self.objective.with_baseline(run.stats)
        self.awaiting_baseline = False
        log.info("search %d (%s): baseline measured: %s", self.id, self.name, run.stats)
        return True

    def _search(self) -> None:
        """Rebuild the searcher from the recorded runs and enqueue what comes next."""
        rows = search_rows(self.db, self.id)
        if self.time_budget_s is not None:
            self.time_budget = TimeBudget(
                self.time_budget_s, time_used(self.db, self.id), self.clock
            )
        self.next_seq = max((r.seq for r in rows), default=-1) + 1
        if not self.strategy and not Proposer(self.space, self._searcher(), self.base).dynamic:
            searcher = self._searcher()
            replayed = replay(self.space, [run_of(r) for r in rows], searcher, self.base)
            self.proposer = replayed.proposer
            fresh: list[Proposal] = []
            proposal = replayed.next
            while proposal is not None and self._within_budget(proposal.index):
                fresh.append(proposal)
                proposal = self.proposer.send(None)
            self.exhausted = True
            if self.time_budget is not None:  # enqueued as runs finish: _fill_static
                self.pending = fresh
                return
            for i in range(0, len(fresh), _CHUNK):
                self._enqueue([(p.index, p) for p in fresh[i : i + _CHUNK]])
            return
        self.rounds = RoundProposer(self.space, self._searcher(), self.base)
        by_seq = {r.seq: r for r in rows}
        self._begin(self.rounds.start())
        while self.round and all(s.seq in by_seq for s in self.round):
            for slot in self.round:
                self._adopt(slot, by_seq.pop(slot.seq))
            if any(slot.run is None for slot in self.round):
                break  # the round in flight when the last driver stopped
            self._next_round()
        else:
            for slot in self.round:  # the round in flight, partly enqueued
                row = by_seq.pop(slot.seq, None)
                if row is not None:
                    self._adopt(slot, row)
        if by_seq:
            seq = min(by_seq)
            raise SearchError(
                f"search {self.id}: recorded run {seq} ran {dict(by_seq[seq].point)}, which the "
                "searcher does not propose on replay; the parameter file or searcher changed "
                "since — start a new search"
            )
        self.next_seq = max((r.seq for r in rows), default=-1) + 1
        self._fill()

    def _searcher(self) -> SearcherInterface | None:
        """A fresh searcher of this search (a strategy's with its history)."""
        if self.strategy:
            return make_searcher_for(self.db, self.session, self.spec, self.objective)
        return make_searcher(self.expression, self.space, self.objective)

    def _adopt(self, slot: _Slot, row: Any) -> None:
        """A recorded row as the slot's run (checked against what the searcher proposes)."""
        run = run_of(row)
        if not run.matches(slot.proposal.point):
            raise SearchError(
                f"search {self.id}: recorded run {row.seq} ran {dict(row.point)}, which the "
                f"searcher does not propose there on replay (it proposes "
                f"{slot.proposal.point}); the parameter file or searcher changed since — "
                "start a new search"
            )
        slot.run_id = row.id
        if row.valid is not None:
            slot.run = run

    def _begin(self, proposals: list[Proposal]) -> None:
        """Make ``proposals`` the round in flight, cut to the budget."""
        kept = [p for p in proposals if self._within_budget(p.index)]
        self.round_cut = len(kept) < len(proposals)
        self.round = [_Slot(p) for p in kept]
        if not self.round:
            self.exhausted = True

    def _next_round(self) -> None:
        """Send the landed round's Runs (proposal order) and take the next round."""
        assert self.rounds is not None
        if self.round_cut:
            self.round, self.exhausted = [], True
            return
        runs = [slot.run for slot in self.round]
        assert all(r is not None for r in runs)
        self._begin(self.rounds.send([r for r in runs if r is not None]))

    def _fill(self) -> None:
        """Enqueue the round's next points while fewer than ``parallelism`` are in flight."""
        if self.time_budget is not None and self.time_budget.spent:
            return  # tick stops proposing
        room = max(1, self.parallelism) - len(self.in_flight)
        if self.strategy:
            room = len(self.round)  # a round is one job: built and timed together
        todo = [s for s in self.round if s.run_id is None][: max(0, room)]
        if not todo:
            return
        ids = self._enqueue([(s.seq, s.proposal) for s in todo])
        for slot in todo:
            slot.run_id = ids[slot.seq]
        self.next_seq = max(self.next_seq, todo[-1].seq + 1)

    def _within_budget(self, seq: int) -> bool:
        return self.budget is None or seq < self.budget

    # -- driving ----------------------------------------------------------------------------

    def tick(self) -> bool:
        """Feed finished Runs to the searcher and enqueue what it proposes; True while the
        search goes on."""
        if not self.started:
            self.start()
        elif self.awaiting_baseline and self._baseline_landed():
            self._search()
        if self.awaiting_baseline:
            return True
        if self.time_budget is not None and not self.timed_out and self.time_budget.spent:
            self._stop_proposing()
        if self.pending:
            self._fill_static()
        if self.dynamic:
            self._land()
        if not self.exhausted or self.round or self.pending:
            return True
        if unfinished(self.db, self.id):
            return True
        if self.strategy and not self._validated():
            return True
        self._finish()
        return False

    def _land(self) -> None:
        """Take the Runs that landed; send each completed round and enqueue what is next."""
        while self.round:
            flying = self.in_flight
            if flying:
                rows = rows_by_id(self.db, [s.run_id for s in flying if s.run_id is not None])
                now = time.monotonic()
                for slot in flying:
                    row = rows.get(slot.run_id or 0)
                    if row is not None and row.valid is not None:
                        slot.run = run_of(row)
                        self.landed_at[slot.seq] = now
            if all(slot.run is not None for slot in self.round):
                self._next_round()
                if self.round:
                    self._fill()
                    continue  # a new round: its points may have landed already (a resume)
                return
            self._fill()
            return

    def _stop_proposing(self) -> None:
        """The time budget is spent: drop what is not enqueued; what is in flight lands."""
        self.timed_out = True
        self.pending = []
        if self.dynamic:
            self.round = [slot for slot in self.round if slot.run_id is not None]
            self.round_cut = True  # the round in flight is the last
            if not self.round:
                self.exhausted = True
        log.info("search %d (%s): time budget spent, proposing nothing more", self.id, self.name)

    def _fill_static(self) -> None:
        """Enqueue a static search's next points while fewer than ``parallelism`` of its
        runs are unfinished (a search with a time budget)."""
        room = max(1, self.parallelism) - unfinished(self.db, self.id)
        if room <= 0:
            return
        todo, self.pending = self.pending[:room], self.pending[room:]
        self._enqueue([(p.index, p) for p in todo])

    def _finish(self) -> None:
        runs = [run_of(r) for r in search_rows(self.db, self.id) if r.valid is not None]
        state, reason = "done", None
        if self.timed_out and self.time_budget is not None:
            reason = self.time_budget.reason(len(runs))
        try:
            self.objective.best(runs)
        except ObjectiveError as e:
            state, reason = "failed", str(e)
        if self.strategy and state == "done":
            final = final_build(self.db, self.id)
            if final is not None and final.valid is False:
                state, reason = "failed", f"final validation: {final.reason}"
        self.end(state, reason)

    # -- a strategy's final validation --------------------------------------------------------

    def _validated(self) -> bool:
        """Whether the final job (the best measured candidates, which writes the perf-db
        and find-db rows) has ended; enqueues it the first time (nothing to validate when
        no candidate counts)."""
        final = final_build(self.db, self.id)
        if final is not None:
            return final.valid is not None
        measured = [baseline_row(self.db, self.id), *search_rows(self.db, self.id)]
        best = sorted(
            (
                r
                for r in measured
                if r is not None and r.valid and r.value is not None
                and self.objective.counts(run_of(r))
            ),
            key=lambda r: (r.value, r.seq),
        )[:FINAL_CANDIDATES]  # fmt: skip
        if not best:
            return True
        texts = [self.enqueuer.text(r.point) for r in best]

        def write() -> None:
            with self.db.transaction(immediate=True) as conn:
                self.enqueuer.insert_round(
                    conn, FINAL, {"candidates": texts, "final": True, "runs": [r.seq for r in best]}
                )

        with_retry(write, what=f"search {self.id}: final validation job")
        log.info("search %d (%s): validating %s", self.id, self.name, ", ".join(texts))
        return False

    def _enqueue(self, proposals: list[tuple[int, Proposal]]) -> dict[int, int]:
        """Record ``(seq, proposal)``s with their builds and jobs (:mod:`tuna.searches.enqueue`);
        returns seq -> search_run id (also for a seq another driver recorded already)."""
        ids = self.enqueuer.enqueue(proposals)
        self.enqueued += len(proposals)
        return ids

    def end(self, state: str, reason: str | None) -> None:
        """Record the search as ended (``done``, ``failed`` or ``stopped``)."""

        def write() -> None:
            with self.db.transaction(immediate=True) as conn:
                conn.execute(
                    update(Search)
                    .where(Search.id == self.id, Search.state == "active")
                    .values({Search.state: state, Search.reason: reason, Search.finished: db_now()})
                )

        with_retry(write, what=f"search {self.id}: end")
        self.ended_as, self.ended_reason = state, reason
        log.info("search %d (%s): %s%s", self.id, self.name, state, f": {reason}" if reason else "")
