"""Where a study lives in the database: its session (label ``tuna.tune``, backend
``bench``), its ``search`` row (made, or found by name and checked to be the same study),
its runs (written through :mod:`tuna.jobs.search_results`) and its ending.

Several processes may drive one study (the same storage and name): each trial is
**claimed** when asked, a pending run row whose ``reason`` names the process that asked it
(:func:`claim_trial`); a process whose claim is refused passes that trial over (or, for a
searcher that needs each result, waits for it), so no trial is measured twice, and each
process fills only its own claims (:func:`finish_trial`). A claim is held on a lease (the
database clock) that its process's heartbeat extends (:class:`ClaimHeartbeat`); a claim
whose lease expired (its process died or hung, on any host) is taken over by the next
process that asks its trial. Claims of trials never told are dropped when their process
closes the study, and by the next process to open it when their lease expired or the
process that made them (on this host) is gone (:func:`release_stale`)."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, select, update

from tuna.backends.base import SessionSpec
from tuna.db import Database
from tuna.db.clock import db_now
from tuna.db.models import Search, SearchRun, TuningSession
from tuna.errors import DatabaseError
from tuna.jobs.beat import Beat
from tuna.jobs.pruning import peers
from tuna.jobs.search_results import (
    claim_run,
    extend_claims,
    finish_run,
    insert_runs,
    release_runs,
)
from tuna.jobs.search_values import objective_value, stored_curve
from tuna.jobs.values import DEFAULT_LEASE_SECONDS
from tuna.searchers import Objective, Run
from tuna.searchers.errors import ObjectiveError, SearchError
from tuna.searchers.prune import Peer
from tuna.searches.create import BASELINE_SEQ, IN_PROCESS
from tuna.searches.runrows import run_of
from tuna.searches.studyspec import StudySpec
from tuna.searches.trial import Trial
from tuna.sessions.session import add_session

log = logging.getLogger(__name__)

LABEL = "tuna.tune"  # the label of the session studies are stored in
#: How long a claim holds without a heartbeat (as a worker's job lease); beats come at a third.
CLAIM_LEASE_SECONDS = DEFAULT_LEASE_SECONDS


def recorded_baseline(db: Database, study: StudySpec) -> Run | None:
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
        return None if row is None else run_of(row)


def stored_runs(db: Database, search: int) -> tuple[list[Run], list[Peer]]:
    """The study's runs in proposal order (the baseline left out) and the curves of those
    that reported any, which a pruner judges a new run against."""
    with db.session() as s:
        rows = s.execute(
            select(SearchRun)
            .where(
                SearchRun.search == search,
                SearchRun.seq > BASELINE_SEQ,
                SearchRun.valid.is_not(None),  # not the trials other processes measure now
            )
            .order_by(SearchRun.seq)
        ).scalars()
        return [run_of(r) for r in rows], peers(s.connection(), search)


def _first_session(s: Any) -> int | None:
    found = s.execute(
        select(TuningSession.id)
        .where(TuningSession.label == LABEL, TuningSession.backend == "bench")
        .order_by(TuningSession.id)
        .limit(1)
    ).scalar()
    return None if found is None else int(found)


def _session(db: Database) -> int:
    """The session studies live in (label ``tuna.tune``), made on first use. Two processes
    making it at once (MySQL takes no lock on a row not found) make two; both use the
    first, and the other stays empty."""
    with db.session(immediate=True) as s:
        found = _first_session(s)
        if found is not None:
            return found
        add_session(s, SessionSpec(arch="python", num_cu=1, backend="bench", label=LABEL))
    with db.session() as s:
        first = _first_session(s)
        assert first is not None
        return first


def open_search(db: Database, study: StudySpec) -> int:
    """The study's search: made, or found (same name) and checked to be the same study.
    A process that loses the race to make it (the other's row is unique by session and
    name) finds it instead."""
    try:
        return _open_search(db, study)
    except DatabaseError:
        return _open_search(db, study)  # made meanwhile by another process: found now


def _open_search(db: Database, study: StudySpec) -> int:
    objective = study.stored_objective
    session = _session(db)
    with db.session(immediate=True) as s:
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


def record_run(
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


#: A claim's ``reason``: which process asked the trial (:func:`release_stale` reads it).
CLAIM = "asked by pid {pid} on {host}"
_CLAIM = re.compile(r"^asked by pid (\d+) on (.+)$")


def claim_owner() -> str:
    return CLAIM.format(pid=os.getpid(), host=socket.gethostname())


def claim_trial(db: Database, search: int, seq: int, point: Mapping[str, Any],
                config: Mapping[str, Any],
                lease_seconds: float = CLAIM_LEASE_SECONDS) -> bool:  # fmt: skip
    """Claim trial ``seq`` for this process, on a lease of ``lease_seconds``; False when
    another process has it (asked, its lease alive, or recorded). A claim whose lease
    expired is taken over."""
    row = {"search": search, "seq": seq, "point": dict(point), "config": dict(config),
           "reason": claim_owner()}  # fmt: skip
    with db.transaction(immediate=True) as conn:
        return claim_run(conn, row, lease_seconds)


def extend_trials(db: Database, search: int, lease_seconds: float = CLAIM_LEASE_SECONDS) -> int:
    """Extend the leases of this process's claims in ``search``; returns how many it holds."""
    with db.transaction(immediate=True) as conn:
        return extend_claims(conn, search, claim_owner(), lease_seconds)


class ClaimHeartbeat:
    """Extends this process's claims of a study's trials from a thread of its own, each
    ``interval`` seconds (a third of the lease), while the process lives: a dead or hung
    one stops beating and its claims lapse."""

    def __init__(self, db: Database, search: int, lease_seconds: float = CLAIM_LEASE_SECONDS,
                 interval: float | None = None) -> None:  # fmt: skip
        self.db, self.search, self.lease_seconds = db, search, lease_seconds
        every = lease_seconds / 3 if interval is None else interval
        self._beat = Beat(self._extend, every, f"search {search}", log, "tuna-study-beat")

    def start(self) -> None:
        self._beat.start()

    def stop(self) -> None:
        self._beat.stop()

    def cancel(self) -> None:
        self._beat.cancel()

    def _extend(self) -> None:
        extend_trials(self.db, self.search, self.lease_seconds)


def finish_trial(
    db: Database,
    search: int,
    seq: int,
    run: Run,
    objective: Objective,
    trial: Trial | None = None,
    pruned: bool = False,
) -> bool:
    """Fill this process's claim of trial ``seq`` with ``run``; False when it holds none
    (never claimed, or its lease lapsed and another process took it over)."""
    stats = dict(run.stats)
    values = {
        "stats": stats if run.valid else None,
        "value": objective_value({"stat": objective.stat}, stats),
        "valid": run.valid,
        "reason": run.reason,
        "intermediate": stored_curve(trial.intermediate) if trial else None,
        "pruned": pruned,
    }
    with db.transaction(immediate=True) as conn:
        return finish_run(conn, search, seq, values, claim_owner())


def trial_state(db: Database, search: int, seq: int) -> Run | str | None:
    """Trial ``seq`` as stored: its Run when recorded, the claim (who asked it) while
    another process measures it, None when no process has it (none asked it, or its
    claim's lease expired: the next to ask takes it over)."""
    with db.session() as s:
        found = s.execute(
            select(SearchRun, SearchRun.lease_expires < db_now()).where(
                SearchRun.search == search, SearchRun.seq == seq
            )
        ).one_or_none()
        if found is None:
            return None
        row, lapsed = found
        if row.valid is not None:
            return run_of(row)
        return None if lapsed else str(row.reason or "claimed")


def pending_trials(db: Database, search: int) -> int:
    """Trials claimed and not told yet, by any process."""
    with db.session() as s:
        return int(
            s.execute(
                select(func.count()).where(SearchRun.search == search, SearchRun.valid.is_(None))
            ).scalar_one()
        )


def release_trials(db: Database, search: int, seqs: Sequence[int]) -> None:
    """Drop this process's claims of ``seqs`` (one taken over by another is left alone)."""
    if seqs:
        with db.transaction(immediate=True) as conn:
            release_runs(conn, search, seqs, claim_owner())


def release_stale(db: Database, search: int) -> int:
    """Drop the claims whose lease expired (their process stopped beating, on any host) and
    those of processes on this host that are gone (killed while measuring); returns how
    many. A live claim of another host's process is left alone."""
    here = socket.gethostname()
    with db.session() as s:
        claims = s.execute(
            select(SearchRun.seq, SearchRun.reason, SearchRun.lease_expires < db_now()).where(
                SearchRun.search == search, SearchRun.valid.is_(None)
            )
        ).all()
    lapsed = [int(seq) for seq, _, late in claims if late]
    gone: dict[str, list[int]] = {}
    for seq, reason, late in claims:
        found = _CLAIM.match(reason or "")
        if not late and found and found.group(2) == here and not _alive(int(found.group(1))):
            gone.setdefault(str(reason), []).append(int(seq))
    if not (lapsed or gone):
        return 0
    with db.transaction(immediate=True) as conn:  # each still as read: none taken over since
        dropped = release_runs(conn, search, lapsed, lapsed=True) if lapsed else 0
        for owner, seqs in gone.items():
            dropped += release_runs(conn, search, seqs, owner)
    return dropped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recorded(db: Database, search: int, seq: int) -> bool:
    with db.session() as s:
        found = s.execute(
            select(SearchRun.id).where(SearchRun.search == search, SearchRun.seq == seq)
        ).first()
        return found is not None


def ending(objective: Objective, runs: Sequence[Run]) -> tuple[str, str | None]:
    try:
        objective.best(runs)
    except ObjectiveError as e:
        return "failed", str(e)
    return "done", None


def end_search(db: Database, search: int, state: str, reason: str | None) -> None:
    with db.session() as s:
        s.execute(
            update(Search)
            .where(Search.id == search)
            .values(state=state, reason=reason, finished=db_now())  # not job.state: the search's
        )
