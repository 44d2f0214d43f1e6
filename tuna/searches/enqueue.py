"""A search's proposals recorded as rows and jobs: the driver's write side.

:meth:`Enqueuer.enqueue` records ``(seq, proposal)`` pairs in one transaction: one
``search_run`` per proposal (a ``seq`` already recorded is kept, so two drivers of one
search do no harm); for a search whose backend builds, one ``search_build`` and one build
job per distinct build tuple (hashed as :func:`build_key_hash`) and each run's job once its
build is stored; for a strategy, the whole round as one build row and one job
(:meth:`Enqueuer.insert_round`), its candidates measured already where the session's
history counts them recorded ended instead (:func:`tuna.searches.strategy_history.measured_runs`).
Jobs are created by :mod:`tuna.jobs.load`, run rows written by
:mod:`tuna.jobs.search_results`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, select

from tuna.db import Database
from tuna.db.models import SearchBuild, SearchRun
from tuna.db.retry import with_retry
from tuna.jobs.load import insert_build_jobs, insert_round_jobs, insert_run_jobs
from tuna.jobs.search_results import fail_runs, insert_runs
from tuna.searchers import Proposal, build_key
from tuna.searchers.space import ParameterSpace
from tuna.searches.strategy_history import measured_runs, session_history
from tuna.sessions.history import Eligibility


def build_key_hash(key: Sequence[tuple[str, Any]]) -> str:
    """``search_build.build_key``: sha256 of the build tuple as canonical JSON."""
    text = json.dumps([[k, v] for k, v in key], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Enqueuer:
    """Where one search's proposals go: its ids, its space, whether its backend builds, and
    for a strategy (``strategy``) the tunable solver's id and its candidates' names."""

    db: Database
    search: int
    session: int
    space: ParameterSpace
    spec: dict[str, Any]
    builds: bool = False
    strategy: bool = False
    solver: int | None = None
    names: Sequence[str] = ()
    #: A strategy's stats computed from a candidate (its objective names them), or None.
    computed: Callable[[Any], dict[str, float]] | None = None

    def enqueue(self, proposals: list[tuple[int, Proposal]]) -> dict[int, int]:
        """Record ``(seq, proposal)``s with their builds and jobs in one transaction;
        returns seq -> search_run id (also for a seq another driver recorded already)."""
        history = None  # a strategy's (not --remeasure): what it measured is not timed
        if self.strategy and not self.spec.get("remeasure"):
            history = session_history(self.db, self.session)

        def write() -> dict[int, int]:
            with self.db.transaction(immediate=True) as conn:
                return self._enqueue_in(conn, proposals, history)

        return with_retry(write, what=f"search {self.search}: enqueue {len(proposals)} run(s)")

    def text(self, point: Any) -> str:
        """A strategy's candidate as its text (the values in the space's order)."""
        return ",".join(str(point[n]) for n in self.names)

    def insert_round(self, conn: Connection, key: str, params: dict[str, Any]) -> int:
        """A round's build row and its one job (idempotent: a key recorded is kept)."""
        found = conn.execute(
            select(SearchBuild.id).where(
                SearchBuild.search == self.search, SearchBuild.build_key == key
            )
        ).scalar()
        if found is not None:
            return int(found)
        conn.execute(
            insert(SearchBuild), [{"search": self.search, "build_key": key, "params": params}]
        )
        build = int(
            conn.execute(
                select(SearchBuild.id).where(
                    SearchBuild.search == self.search, SearchBuild.build_key == key
                )
            ).scalar_one()
        )
        insert_round_jobs(conn, [(self.session, int(self.spec["config"]), build)])
        return build

    def _enqueue_in(
        self,
        conn: Connection,
        proposals: list[tuple[int, Proposal]],
        history: Eligibility | None,
    ) -> dict[int, int]:
        seqs = [seq for seq, _ in proposals]
        present = {
            r.seq: r.id
            for r in conn.execute(
                select(SearchRun.seq, SearchRun.id).where(
                    SearchRun.search == self.search, SearchRun.seq.in_(seqs)
                )
            )
        }
        todo = [(seq, p) for seq, p in proposals if seq not in present]
        if not todo:
            return present
        builds: dict[str, Any] = {}
        keys: dict[int, str] = {}
        round_build = None
        known: dict[int, dict[str, Any]] = {}  # seq -> its run, measured where history counts
        if self.strategy:  # the whole round: one build, one job
            texts = {seq: self.text(p.point) for seq, p in todo}
            stats = {s: self.computed(p.point) for s, p in todo if self.computed is not None}
            if history is not None and self.solver is not None:
                config = int(self.spec["config"])
                known = measured_runs(conn, history, config, self.solver, texts, stats)
            seqs = [seq for seq, _ in todo if seq not in known]
            if seqs:  # each candidate with its run's seq (and stats the record adds to times)
                params = {"round": seqs[0], "seqs": seqs, "candidates": [texts[s] for s in seqs]}
                round_build = self.insert_round(
                    conn,
                    build_key_hash([("round", seqs[0])]),
                    params | ({"stats": [stats[s] for s in seqs]} if stats else {}),
                )
        elif self.builds:
            tuples = {}
            for seq, p in todo:
                key = build_key(self.space, p.config)
                keys[seq] = build_key_hash(key)
                tuples[keys[seq]] = key
            cols = (SearchBuild.id, SearchBuild.build_key, SearchBuild.valid, SearchBuild.reason)
            builds = {
                r.build_key: r
                for r in conn.execute(
                    select(*cols)
                    .where(
                        SearchBuild.search == self.search, SearchBuild.build_key.in_(sorted(tuples))
                    )
                    .order_by(SearchBuild.id)
                    .with_for_update()
                )
            }
            new = [k for k in tuples if k not in builds]
            if new:
                conn.execute(
                    insert(SearchBuild),
                    [
                        {"search": self.search, "build_key": k, "params": dict(tuples[k])}
                        for k in new
                    ],
                )
                for r in conn.execute(
                    select(*cols).where(
                        SearchBuild.search == self.search, SearchBuild.build_key.in_(new)
                    )
                ):
                    builds[r.build_key] = r
                insert_build_jobs(conn, [(self.session, builds[k].id) for k in new])
        rows = [{"search": self.search, "seq": seq, "point": dict(p.point),
                 "config": dict(p.config),
                 "build": builds[keys[seq]].id if self.builds else round_build}
                for seq, p in todo]  # fmt: skip
        insert_runs(conn, [r | known[r["seq"]] for r in rows if r["seq"] in known])  # ended
        insert_runs(conn, [r for r in rows if r["seq"] not in known])
        ids = {
            r.seq: r.id
            for r in conn.execute(
                select(SearchRun.seq, SearchRun.id).where(
                    SearchRun.search == self.search, SearchRun.seq.in_([s for s, _ in todo])
                )
            )
        }
        if self.strategy:  # the round's job times them; its record fills these rows
            return {**present, **ids}
        ready: list[tuple[int, int]] = []
        for seq, _ in todo:
            build = builds[keys[seq]] if self.builds else None
            if build is None or build.valid:
                ready.append((self.session, ids[seq]))
            elif build.valid is False:
                fail_runs(conn, SearchRun.id == ids[seq], f"not run: {build.reason}")
        insert_run_jobs(conn, ready)
        return {**present, **ids}
