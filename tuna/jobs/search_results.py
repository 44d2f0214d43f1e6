# Over 600 lines: every search_run write lives here (a house rule), each beside the tally it keeps.
"""What a search's build and run jobs write, inside the fenced transaction that ends them.

* a **build** stores its artifact in ``artifact``, content-addressed by the sha256 of the
  bytes (identical builds are stored once), and links it from its ``search_build`` row
  (``valid`` true); a build that did not build is ``valid`` false with its reason, and every
  unfinished run of it becomes an invalid Run with that reason;
* a **run** writes its Run into its ``search_run`` row: stats, the objective's stat as
  ``value``, ``valid`` and ``reason``, its intermediate values and whether it was pruned
  (:mod:`tuna.jobs.pruning`), the machine, the finish time and its place in the
  search's landing order (``landed``, below);
* a strategy's **round** (a perf job of a (config, solver) linked to the round's
  ``search_build``: :mod:`tuna.searches.strategy`) fills its ``search_run`` rows from the
  ``measurement`` rows of its candidates (the fastest valid of each in the session, timed
  by this job or reused from before), and its final validation job ends its build row and
  gives each finalist's Run the final job's timing where it is faster (its re-timing turns:
  the Runs' best is then the winner the job stored, :func:`_take_final_timings`);
* a build or run job that **gave up** (errored past its retries, or its lease expired too
  often) ends its build or Run the same way, invalid with the job's reason, so a search
  never waits for a job that will not come back.

Every write that adds a run or changes whether it ended (``valid``) goes through this
module, the driver's inserts included (:func:`insert_runs`, :func:`fail_runs`), and counts
its change in the search's ``search_tally`` row in the same transaction: the read side's
counts by status and the best-so-far curve's number of measurements read one row.

A run that ends is numbered in its search's **landing order** (``search_run.landed``: 1, 2,
3, ...), the order of the best-so-far curve: the ``search_tally`` row is locked first
(:func:`_landing`, before the finish time is taken), and the runs that end in one write
take the numbers after its ``done`` in seq order. Two writers of one search number one
after the other, never the same number twice, and the one that numbers later also takes
its finish time later. A run stored again (it had ended) keeps its number.

A ``tuna.study`` driven by several processes at once **claims** each trial when it is asked
(:func:`claim_run`: the run inserted pending unless another process took its seq), keeps
the claim's lease alive from a heartbeat (:func:`extend_claims`; a claim whose lease
expired is taken over by the next process that asks it), fills it when told
(:func:`finish_run`) and drops the claims of trials never told (:func:`release_runs`).

The run jobs of a stored build are inserted by :mod:`tuna.jobs.load` (the one module that
creates jobs, and finds the runs awaiting one), when :mod:`tuna.jobs.recording` stores the
build. What the columns hold (a curve, the objective's value, a round's candidates) is
read by the pure translations of :mod:`tuna.jobs.search_values`.
"""

from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Update,
    bindparam,
    case,
    delete,
    func,
    insert,
    select,
    true,
    update,
)
from sqlalchemy.exc import IntegrityError

from tuna.backends.base import BuildOutcome, RunOutcome
from tuna.db import tables
from tuna.db.clock import db_now
from tuna.jobs.search_values import (
    final_runs,
    objective_value,
    round_candidates,
    round_stats,
    stored_curve,
)
from tuna.jobs.values import ClaimedJob, stands_for

# The tables' columns, named as the ORM classes: statements here are Core (tuna.db.tables),
# so a worker never imports the ORM.
Artifact = tables.artifact.c
Job = tables.job.c
Measurement = tables.measurement.c
Search = tables.search.c
SearchBuild = tables.search_build.c
SearchRun = tables.search_run.c
SearchTally = tables.search_tally.c


@dataclass(frozen=True)
class GaveUp:
    """A search job that ended errored: its build or run, and why."""

    search_build: int | None
    search_run: int | None
    reason: str


def store_intermediate(conn: Connection, run: int, curve: Mapping[int, float]) -> None:
    """A run's intermediate values so far (:mod:`tuna.jobs.pruning`), written only while the
    run has not ended (``valid`` NULL): a late report of a recorded run changes nothing."""
    conn.execute(
        update(tables.search_run)
        .where(SearchRun.id == run, SearchRun.valid.is_(None))
        .values(intermediate=stored_curve(curve))
    )


def artifact_digest(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def store_artifact(conn: Connection, blob: bytes) -> int:
    """The id of the artifact holding ``blob``, inserted unless stored already."""
    digest = artifact_digest(blob)
    found = conn.execute(select(Artifact.id).where(Artifact.digest == digest)).scalar()
    if found is not None:
        return int(found)
    result = conn.execute(insert(tables.artifact).values(digest=digest, size=len(blob), blob=blob))
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def store_builds(conn: Connection, done: Sequence[tuple[ClaimedJob, BuildOutcome]]) -> list[int]:
    """Record finished builds; returns the ids of the builds that built (their runs may go)."""
    built: list[int] = []
    failed: list[tuple[int, str]] = []
    for job, outcome in sorted(done, key=lambda d: d[0].search_build or 0):
        assert job.search_build is not None
        if outcome.built:
            assert outcome.artifact is not None
            artifact = store_artifact(conn, outcome.artifact)
            conn.execute(
                update(tables.search_build)
                .where(SearchBuild.id == job.search_build)
                .values(artifact=artifact, valid=True, reason=None, finished=db_now())
            )
            built.append(job.search_build)
        else:
            failed.append((job.search_build, outcome.failure or outcome.reason or "build failed"))
    fail_builds(conn, failed)
    return built


def fail_builds(conn: Connection, failed: Sequence[tuple[int, str]]) -> None:
    """Mark builds as not built, and their unfinished runs invalid with the build's reason."""
    for build_id, reason in failed:
        conn.execute(
            update(tables.search_build)
            .where(SearchBuild.id == build_id)
            .values(valid=False, reason=reason, finished=db_now())
        )
        fail_runs(conn, SearchRun.build == build_id, f"not run: {reason}")


def store_runs(conn: Connection, done: Sequence[tuple[ClaimedJob, RunOutcome]]) -> None:
    """Write each finished run's Run into its ``search_run`` row."""
    if not done:
        return
    ids = sorted(j.search_run for j, _ in done if j.search_run is not None)
    before = {r.id: r for r in conn.execute(_locked(SearchRun.id.in_(ids)))}
    landed = _landing(conn, [r for r in before.values() if r.valid is None])
    searches = sorted({r.search for r in before.values()})
    objectives = {
        int(r.id): r.objective
        for r in conn.execute(select(Search.id, Search.objective).where(Search.id.in_(searches)))
    }
    rows = []
    tally: _Tally = defaultdict(lambda: [0, 0, 0, 0])
    for job, outcome in sorted(done, key=lambda d: d[0].search_run or 0):
        assert job.search_run is not None
        was = before.get(job.search_run)
        if was is None:
            continue  # no such run: nothing to write
        stats = dict(outcome.stats)
        rows.append(
            {
                "rid": job.search_run,
                "v_stats": stats,
                "v_value": objective_value(objectives.get(was.search) or {}, stats),
                "v_valid": outcome.valid,
                "v_reason": None if outcome.valid else (outcome.failure or "invalid run"),
                "v_landed": landed.get(was.id),
                "v_intermediate": stored_curve(outcome.intermediate),
                "v_pruned": bool(outcome.pruned),
            }
        )
        t = tally[was.search]
        t[1] += 1 if was.valid is None else 0
        t[2] += int(bool(outcome.valid)) - int(bool(was.valid))
        t[3] += int(bool(outcome.pruned)) - int(bool(was.pruned))
    if rows:
        conn.execute(_store_run(), rows)
    _count(conn, tally)


@functools.cache
def _store_run() -> Update:
    """One run's Run into its row (an executemany over a batch), machine from its job; a
    run that had ended keeps its ``landed`` (``v_landed`` NULL)."""
    c = tables.search_run.c
    return (
        update(tables.search_run)
        .where(SearchRun.id == bindparam("rid", type_=c.id.type))
        .values(
            stats=bindparam("v_stats", type_=c.stats.type),
            value=bindparam("v_value", type_=c.value.type),
            valid=bindparam("v_valid", type_=c.valid.type),
            reason=bindparam("v_reason", type_=c.reason.type),
            intermediate=bindparam("v_intermediate", type_=c.intermediate.type),
            pruned=bindparam("v_pruned", type_=c.pruned.type),
            machine=select(Job.machine).where(Job.search_run == SearchRun.id).scalar_subquery(),
            finished=db_now(),
            landed=func.coalesce(SearchRun.landed, bindparam("v_landed", type_=c.landed.type)),
        )
    )


def store_gave_up(conn: Connection, gave_up: Sequence[GaveUp]) -> None:
    """End the builds and runs of search jobs that errored, invalid with the job's reason."""
    builds = [(g.search_build, g.reason) for g in gave_up if g.search_build is not None]
    fail_builds(conn, [(b, f"build job errored: {r}") for b, r in builds])
    for g in gave_up:
        if g.search_run is not None:
            fail_runs(conn, SearchRun.id == g.search_run, f"run job errored: {g.reason}")


_Tally = defaultdict[int, list[int]]
"""search id -> [runs, done, valid] added, and [..., pruned] where runs were pruned."""


def insert_runs(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert proposed runs (``search_run`` rows, not yet run) and count them."""
    if not rows:
        return
    ended = [
        _Ending(0, int(r["search"]), int(r["seq"])) for r in rows if r.get("valid") is not None
    ]
    landed = {(e.search, e.seq): n for e, n in _landing_by_run(conn, ended)}
    conn.execute(
        insert(tables.search_run),
        [
            {**r, "landed": landed[int(r["search"]), int(r["seq"])]}
            if r.get("valid") is not None
            else dict(r)
            for r in rows
        ],
    )
    tally: _Tally = defaultdict(lambda: [0, 0, 0, 0])
    for row in rows:
        t = tally[int(row["search"])]
        t[0] += 1
        t[1] += 0 if row.get("valid") is None else 1
        t[2] += 1 if row.get("valid") else 0
        t[3] += 1 if row.get("pruned") else 0
    _count(conn, tally)


def claim_run(conn: Connection, row: Mapping[str, Any], lease_seconds: float) -> bool:
    """Insert a proposed run, pending and claimed by ``row["reason"]`` for ``lease_seconds``
    (on the database clock), unless its ``(search, seq)`` is taken. A pending run whose
    claim's lease expired (its process stopped beating: :func:`extend_claims`) is taken
    over, in one compare-and-set. False when another process holds the trial (asked first,
    lease alive) or recorded it."""
    expires = conn.execute(select(db_now(lease_seconds))).scalar_one()
    try:
        with conn.begin_nested():  # a savepoint: a taken seq leaves the transaction usable
            insert_runs(conn, [{**row, "lease_expires": expires}])
    except IntegrityError:
        taken = conn.execute(
            update(tables.search_run)
            .where(
                SearchRun.search == row["search"],
                SearchRun.seq == row["seq"],
                SearchRun.valid.is_(None),
                SearchRun.lease_expires < db_now(),
            )
            .values(
                point=row["point"],
                config=row["config"],
                reason=row["reason"],
                intermediate=None,
                lease_expires=expires,
            )  # fmt: skip
        )
        return bool(taken.rowcount)
    return True


def extend_claims(conn: Connection, search: int, owner: str, lease_seconds: float) -> int:
    """Extend the leases of ``owner``'s claims of pending runs of ``search`` to now +
    ``lease_seconds`` (the study's heartbeat); returns how many it holds."""
    return int(
        conn.execute(
            update(tables.search_run)
            .where(
                SearchRun.search == search,
                SearchRun.valid.is_(None),
                SearchRun.reason == owner,
                SearchRun.lease_expires.is_not(None),
            )
            .values(lease_expires=db_now(lease_seconds))
        ).rowcount
    )


def finish_run(
    conn: Connection, search: int, seq: int, values: Mapping[str, Any], owner: str | None = None
) -> bool:
    """Write a claimed run's result (``stats``, ``value``, ``valid``, ``reason``,
    ``intermediate``, ``pruned``); False when the run is not pending (not claimed, or
    ended already) or, given ``owner``, not claimed by it (taken over meanwhile)."""
    mine = [] if owner is None else [SearchRun.reason == owner]
    ended = conn.execute(
        _locked(SearchRun.search == search, SearchRun.seq == seq, SearchRun.valid.is_(None), *mine)
    ).all()
    if not ended:
        return False
    landed = _landing(conn, ended)
    conn.execute(
        update(tables.search_run)
        .where(SearchRun.id == ended[0].id)
        .values(**values, finished=db_now(), landed=landed[ended[0].id], lease_expires=None)
    )
    _count(conn, {search: [0, 1, int(bool(values["valid"])), int(bool(values.get("pruned")))]})
    return True


def release_runs(
    conn: Connection, search: int, seqs: Sequence[int], owner: str | None = None,
    lapsed: bool = False,
) -> int:  # fmt: skip
    """Delete the pending runs ``seqs`` of ``search`` (a study's trials asked and never
    told: asked again when it is next opened): given ``owner``, only those it claims; with
    ``lapsed``, only those whose claim's lease expired. Returns how many."""
    mine = [] if owner is None else [SearchRun.reason == owner]
    if lapsed:
        mine.append(SearchRun.lease_expires < db_now())
    gone = conn.execute(
        _locked(
            SearchRun.search == search, SearchRun.seq.in_(seqs), SearchRun.valid.is_(None), *mine
        )
    ).all()
    if gone:
        conn.execute(delete(tables.search_run).where(SearchRun.id.in_([r.id for r in gone])))
        _count(conn, {search: [-len(gone), 0, 0]})
    return len(gone)


def fail_runs(conn: Connection, where: ColumnElement[bool], reason: str) -> int:
    """End the unfinished runs that match ``where`` invalid with ``reason`` (a run of a
    build that did not build, a run whose job gave up); returns how many."""
    ended = conn.execute(_locked(where, SearchRun.valid.is_(None))).all()
    if not ended:
        return 0
    landed = _landing(conn, ended)
    c = tables.search_run.c
    conn.execute(
        update(tables.search_run)
        .where(SearchRun.id == bindparam("rid", type_=c.id.type))
        .values(
            valid=False,
            reason=reason,
            finished=db_now(),
            landed=bindparam("v_landed", type_=c.landed.type),
        ),
        [{"rid": r.id, "v_landed": landed[r.id]} for r in ended],
    )
    tally: _Tally = defaultdict(lambda: [0, 0, 0])
    for r in ended:
        tally[r.search][1] += 1
    _count(conn, tally)
    return len(ended)


@dataclass(frozen=True)
class _Ending:
    """A run about to end: its id, search and seq."""

    id: int
    search: int
    seq: int


def _landing(conn: Connection, ending: Iterable[Any]) -> dict[int, int]:
    """Run id -> its ``landed`` for runs about to end (rows with ``id``, ``search``, ``seq``).

    Locks each search's ``search_tally`` row (in search id order, until the transaction
    ends) before the caller takes the finish time; the runs of a search are numbered after
    its ``done``, in seq order. The caller then adds them to ``done`` (:func:`_count`), in
    the same transaction."""
    return {e.id: n for e, n in _landing_by_run(conn, ending)}


def _landing_by_run(conn: Connection, ending: Iterable[Any]) -> list[tuple[Any, int]]:
    by_search: defaultdict[int, list[Any]] = defaultdict(list)
    for r in ending:
        by_search[int(r.search)].append(r)
    if not by_search:
        return []
    done = _lock_tallies(conn, sorted(by_search))
    missing = [s for s in sorted(by_search) if s not in done]
    if missing:  # counted from the runs (and their ended runs numbered), then locked
        recount(conn, missing)
        done |= _lock_tallies(conn, missing)
    out = []
    for search in sorted(by_search):
        for i, r in enumerate(sorted(by_search[search], key=lambda r: int(r.seq)), start=1):
            out.append((r, done[search] + i))
    return out


def _lock_tallies(conn: Connection, searches: Sequence[int]) -> dict[int, int]:
    """``done`` of each search's ``search_tally`` row, locked (a missing row: absent)."""
    c = tables.search_tally.c
    return {
        int(r[0]): int(r[1])
        for r in conn.execute(
            select(c.search, c.done)
            .where(c.search.in_(searches))
            .order_by(c.search)
            .with_for_update()
        )
    }


def _locked(*where: ColumnElement[bool]) -> Any:
    """The runs matching ``where`` (id, search, seq, valid), locked until the transaction
    ends: their counts are taken from what they were just before this transaction changes
    them."""
    return (
        select(SearchRun.id, SearchRun.search, SearchRun.seq, SearchRun.valid, SearchRun.pruned)
        .where(*where)
        .order_by(SearchRun.id)
        .with_for_update()
    )


def _count(conn: Connection, tally: Mapping[int, Sequence[int]]) -> None:
    """Add ``tally``'s changes to the searches' counters (in id order: no deadlock between
    two writers); a search without a counter row yet gets one counted from its runs."""
    for search in sorted(tally):
        runs, done, valid, *more = tally[search]
        pruned = more[0] if more else 0
        if not (runs or done or valid or pruned):
            continue
        c = tables.search_tally.c
        changed = conn.execute(
            update(tables.search_tally)
            .where(c.search == search)
            .values(
                {
                    c.runs: c.runs + runs,
                    c.done: c.done + done,
                    c.valid: c.valid + valid,
                    c.pruned: c.pruned + pruned,
                }
            )  # fmt: skip
        ).rowcount
        if not changed:
            recount(conn, [search])


def recount(conn: Connection, searches: Iterable[int]) -> None:
    """Set the counters of ``searches`` from their runs (a full count of each), and number
    their ended runs that have no ``landed`` yet after the highest one, in (finished, seq)
    order: for a search whose counter row is missing, and for tests and benchmarks that
    write runs directly."""
    ids = sorted(set(searches))
    if not ids:
        return
    counted = {
        int(r[0]): (int(r[1]), int(r[2]), int(r[3] or 0), int(r[4] or 0))
        for r in conn.execute(
            select(
                SearchRun.search,
                func.count(),
                func.count(SearchRun.valid),
                func.sum(case((SearchRun.valid == true(), 1), else_=0)),
                func.sum(case((SearchRun.pruned == true(), 1), else_=0)),
            )
            .where(SearchRun.search.in_(ids))
            .group_by(SearchRun.search)
        )
    }
    for search in ids:
        _number_unlanded(conn, search)
    c = tables.search_tally.c
    for search in ids:
        runs, done, valid, pruned = counted.get(search, (0, 0, 0, 0))
        values = {c.runs: runs, c.done: done, c.valid: valid, c.pruned: pruned}
        if not conn.execute(
            update(tables.search_tally).where(c.search == search).values(values)
        ).rowcount:
            conn.execute(insert(tables.search_tally).values({c.search: search, **values}))


def _number_unlanded(conn: Connection, search: int) -> None:
    """Number the search's ended runs without ``landed`` after its highest, by (finished,
    seq) (an index seek when there are none: ``(search, landed, valid, ...)``)."""
    unlanded = conn.execute(
        select(SearchRun.id)
        .where(SearchRun.search == search, SearchRun.landed.is_(None), SearchRun.valid.is_not(None))
        .order_by(SearchRun.finished, SearchRun.seq)
    ).all()
    if not unlanded:
        return
    top = conn.execute(select(func.max(SearchRun.landed)).where(SearchRun.search == search))
    first = int(top.scalar() or 0) + 1
    c = tables.search_run.c
    conn.execute(
        update(tables.search_run)
        .where(SearchRun.id == bindparam("rid", type_=c.id.type))
        .values(landed=bindparam("v_landed", type_=c.landed.type)),
        [{"rid": r.id, "v_landed": n} for n, r in enumerate(unlanded, start=first)],
    )


def store_rounds(
    conn: Connection, done: Sequence[ClaimedJob], failed: Sequence[tuple[int | None, str]] = ()
) -> None:
    """Fill the Runs of strategy rounds whose job was evaluated, from the measurements
    (written before, in this transaction); a candidate with none is an invalid Run. A
    round that did not apply (``failed``) ends its Runs invalid with the reason."""
    fail_builds(conn, [(b, r) for b, r in failed if b is not None])
    for job in done:
        assert job.search_build is not None
        params = conn.execute(
            select(SearchBuild.params).where(SearchBuild.id == job.search_build)
        ).scalar_one()
        if final_runs(params):
            _take_final_timings(conn, job, final_runs(params))
        texts = round_candidates(params)
        extra = round_stats(params)
        pending = conn.execute(
            select(SearchRun.id, SearchRun.seq, SearchRun.search)
            .where(SearchRun.build == job.search_build, SearchRun.valid.is_(None))
            .order_by(SearchRun.id)
            .with_for_update()
        ).all()
        landed = _landing(conn, pending)
        best = _standing(conn, job, texts.values()) if pending else {}
        tally: _Tally = defaultdict(lambda: [0, 0, 0])
        for run_id, seq, search in pending:
            found = best.get(texts.get(seq, ""))
            if found is None:
                values: dict[str, Any] = {"valid": False, "reason": "not measured by its round"}
            elif found.valid and found.time_ms is not None:
                t = found.time_ms
                values = {"valid": True, "value": t, "stats": {**extra.get(seq, {}), "time_ms": t}}
            else:
                values = {"valid": False, "reason": found.reason or "invalid", "stats": {}}
            conn.execute(
                update(tables.search_run)
                .where(SearchRun.id == run_id)
                .values(
                    **values,
                    machine=_machine(conn, job.id),
                    finished=db_now(),
                    landed=landed[run_id],
                )
            )
            tally[search][1] += 1
            tally[search][2] += int(bool(values["valid"]))
        _count(conn, tally)
        conn.execute(
            update(tables.search_build)
            .where(SearchBuild.id == job.search_build)
            .values(valid=True, reason=None, finished=db_now())
        )


def _standing(conn: Connection, job: ClaimedJob, texts: Iterable[str]) -> dict[str, Any]:
    """Candidate text -> the measurement that stands for it in the job's session, config
    and solver (:func:`~tuna.jobs.values.stands_for`: the fastest valid one)."""
    best: dict[str, Any] = {}
    for m in conn.execute(
        select(Measurement.params, Measurement.time_ms, Measurement.valid, Measurement.reason)
        .where(
            Measurement.session == job.session,
            Measurement.config == job.config,
            Measurement.solver == job.solver,
            Measurement.params.in_(sorted(set(texts))),
        )
        .order_by(Measurement.id)
    ):
        if stands_for(m, best.get(m.params)):
            best[m.params] = m
    return best


def _take_final_timings(conn: Connection, job: ClaimedJob, finalists: Mapping[int, str]) -> None:
    """A strategy's final job: each finalist's Run takes its candidate's fastest valid
    timing in the session when the re-timing turns beat its round's, as a round's Run
    does (the time is its value and its ``time_ms`` stat). The job stores the finalist
    with the fastest timing as the perf/find rows; without this the search's best Run
    could be another finalist, whose round was faster than the winner's round."""
    assert job.search_build is not None
    search = conn.execute(
        select(SearchBuild.search).where(SearchBuild.id == job.search_build)
    ).scalar_one()
    standing = _standing(conn, job, finalists.values())
    for run in conn.execute(
        select(SearchRun.id, SearchRun.seq, SearchRun.value, SearchRun.stats)
        .where(SearchRun.search == search, SearchRun.seq.in_(sorted(finalists)))
        .where(SearchRun.valid == true(), SearchRun.value.is_not(None))
        .with_for_update()
    ).all():
        m = standing.get(finalists[run.seq])
        if m is None or not m.valid or m.time_ms is None or m.time_ms >= run.value:
            continue
        conn.execute(
            update(tables.search_run)
            .where(SearchRun.id == run.id)
            .values(value=m.time_ms, stats={**(run.stats or {}), "time_ms": m.time_ms})
        )


def _machine(conn: Connection, job: int) -> Any:
    return conn.execute(select(Job.machine).where(Job.id == job)).scalar()
