"""A search's build and run jobs in the state machine (issue #15), on SQLite and MariaDB.

A build is compile-phase work that ends ``evaluated`` with its artifact stored; its runs'
jobs appear ``compiled`` in the same transaction. A failed build, an invalid run and a job
that gives up are recorded as invalid builds and Runs, never left for a driver to wait on.
"""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import delete, func, insert, select

from tests.searches.helpers import bench_session, builds, jobs_by_step_state, new_search, runs
from tests.support.seed import expire_leases, force_state, job_row
from tuna.backends.base import BuildOutcome, RunOutcome
from tuna.db import Database
from tuna.db.enums import JobState, JobStep
from tuna.db.models import Artifact, Job, SearchRun
from tuna.jobs import JobFilter, Phase, claim_jobs, reap_expired, record_outcomes, reset_jobs
from tuna.jobs.load import insert_run_jobs
from tuna.jobs.status import count_jobs
from tuna.searches import SearchDriver

S = JobState


def _enqueued(db: Database) -> tuple[int, int]:
    session = bench_session(db)
    search = new_search(db, session)
    SearchDriver(db, search).start()
    return session, search


def _claim(db: Database, session: int, phase: Phase, n: int = 10, **kw: object) -> list:
    return claim_jobs(db, session, phase, owner="w", limit=n, **kw)  # type: ignore[arg-type]


def test_builds_are_compile_work_and_runs_wait_for_them(db):
    session, search = _enqueued(db)
    assert jobs_by_step_state(db, session) == {("build", "new"): 2}
    assert len(runs(db, search)) == 6
    assert _claim(db, session, Phase.EVAL) == []  # no run is claimable before its build
    claimed = _claim(db, session, Phase.COMPILE)
    assert [j.step for j in claimed] == [JobStep.BUILD, JobStep.BUILD]
    assert all(j.search_build is not None and j.config is None for j in claimed)


def test_a_stored_build_ends_evaluated_and_releases_its_runs_as_compiled(db):
    session, search = _enqueued(db)
    first, second = _claim(db, session, Phase.COMPILE)
    rec = record_outcomes(db, "w", [(first, BuildOutcome(artifact=b"tar bytes"))])
    assert rec.states == {first.id: S.EVALUATED}
    b = {x.id: x for x in builds(db, search)}[first.search_build]
    assert b.valid is True and b.artifact is not None
    assert jobs_by_step_state(db, session) == {
        ("build", "evaluated"): 1,
        ("build", "compile_start"): 1,
        ("run", "compiled"): 3,
    }
    ready = _claim(db, session, Phase.EVAL)
    assert {j.search_run for j in ready} == {r.id for r in runs(db, search) if r.build == b.id}
    # the same bytes from another build are stored once
    record_outcomes(db, "w", [(second, BuildOutcome(artifact=b"tar bytes"))])
    with db.session() as s:
        assert s.execute(select(func.count()).select_from(Artifact)).scalar_one() == 1
    assert jobs_by_step_state(db, session)[("run", "compiled")] == 3


def test_a_failed_build_makes_its_runs_invalid_with_its_reason(db):
    session, search = _enqueued(db)
    first, _ = _claim(db, session, Phase.COMPILE)
    record_outcomes(db, "w", [(first, BuildOutcome(failure="build exited with status 2"))])
    assert job_row(db, first.id).state is S.EVALUATED
    assert job_row(db, first.id).reason == "build exited with status 2"
    mine = [r for r in runs(db, search) if r.build == first.search_build]
    assert len(mine) == 3
    assert all(r.valid is False for r in mine)
    assert {r.reason for r in mine} == {"not run: build exited with status 2"}
    assert ("run", "compiled") not in jobs_by_step_state(db, session)


def test_an_invalid_run_is_recorded_not_retried(db):
    session, search = _enqueued(db)
    for b in _claim(db, session, Phase.COMPILE):
        record_outcomes(db, "w", [(b, BuildOutcome(artifact=b"x"))])
    good, bad, *_ = _claim(db, session, Phase.EVAL)
    rec = record_outcomes(
        db,
        "w",
        [
            (good, RunOutcome(stats={"t": 30, "other": "x"})),
            (bad, RunOutcome(stats={}, valid=False, failure="run timed out after 30 s")),
        ],
    )
    assert rec.states == {good.id: S.EVALUATED, bad.id: S.EVALUATED}
    by_id = {r.id: r for r in runs(db, search)}
    assert (by_id[good.search_run].valid, by_id[good.search_run].value) == (True, 30.0)
    assert by_id[good.search_run].stats == {"t": 30, "other": "x"}
    assert by_id[good.search_run].finished is not None
    assert (by_id[bad.search_run].valid, by_id[bad.search_run].reason) == (
        False,
        "run timed out after 30 s",
    )
    assert job_row(db, bad.id).retries == 0


def test_a_run_job_that_gives_up_ends_its_run_invalid(db):
    session, search = _enqueued(db)
    for b in _claim(db, session, Phase.COMPILE):
        record_outcomes(db, "w", [(b, BuildOutcome(artifact=b"x"))])
    target = _claim(db, session, Phase.EVAL, 1)[0]
    for _ in range(2):  # max_retries=1: the second failure gives up
        rec = record_outcomes(
            db, "w", [(target, RunOutcome.failed("OSError: disk full"))], max_retries=1
        )
        if rec.states[target.id] is S.COMPILED:
            target = _claim(db, session, Phase.EVAL, 1)[0]
    assert job_row(db, target.id).state is S.ERRORED
    run = {r.id: r for r in runs(db, search)}[target.search_run]
    assert run.valid is False
    assert run.reason.startswith("run job errored: OSError: disk full")


def test_a_build_whose_lease_expires_too_often_fails_its_runs(db):
    session, search = _enqueued(db)
    claimed = _claim(db, session, Phase.COMPILE)
    expire_leases(db, [j.id for j in claimed])
    reaped = reap_expired(db, max_retries=0)
    assert sorted(reaped.errored) == sorted(j.id for j in claimed)
    assert all(b.valid is False for b in builds(db, search))
    assert all(r.valid is False and "lease expired" in r.reason for r in runs(db, search))


def test_evaluate_workers_may_claim_builds_only(db):
    session, _ = _enqueued(db)
    taken = _claim(db, session, Phase.COMPILE, step=JobStep.BUILD)
    assert len(taken) == 2
    assert _claim(db, session, Phase.COMPILE, step=JobStep.PERF) == []


def test_operators_leave_search_jobs_to_their_driver(db):
    session, _ = _enqueued(db)
    b = _claim(db, session, Phase.COMPILE, 1)[0]
    record_outcomes(db, "w", [(b, BuildOutcome(failure="no"))])
    assert reset_jobs(db, JobFilter(session=session, states=(S.EVALUATED,))) == 0
    assert job_row(db, b.id).state is S.EVALUATED


# --- build affinity: a worker that holds a build takes its runs first ----------------------------


def _interleaved(db: Database) -> tuple[int, dict[int, int], list[int]]:
    """Both builds stored and their runs' jobs re-inserted alternating builds by id (as a
    dynamic searcher's proposals arrive): (session, run job id -> build, build ids)."""
    session, search = _enqueued(db)
    for b in _claim(db, session, Phase.COMPILE):
        record_outcomes(db, "w", [(b, BuildOutcome(artifact=f"{b.search_build}".encode()))])
    by_build: dict[int, list[int]] = defaultdict(list)
    for r in runs(db, search):
        by_build[r.build].append(r.id)
    first, second = sorted(by_build)
    order = [r for pair in zip(by_build[first], by_build[second], strict=True) for r in pair]
    with db.transaction() as conn:
        conn.execute(delete(Job).where(Job.session == session, Job.step == JobStep.RUN))
        insert_run_jobs(conn, [(session, r) for r in order])
    with db.session() as s:
        build_of = dict(
            s.execute(
                select(Job.id, SearchRun.build)
                .join(SearchRun, SearchRun.id == Job.search_run)
                .where(Job.session == session)
            ).all()
        )
    ids = sorted(build_of)
    assert [build_of[i] for i in ids] == [first, second] * 3  # interleaved by id
    return session, build_of, [first, second]


def test_a_worker_holding_a_build_claims_its_runs_first(db):
    session, build_of, (first, second) = _interleaved(db)
    assert [build_of[j.id] for j in _claim(db, session, Phase.EVAL, 1)] == [first]  # id order
    held = _claim(db, session, Phase.EVAL, 2, held=[second])
    assert [build_of[j.id] for j in held] == [second, second]
    assert [j.id for j in held] == sorted(j.id for j in held)  # lowest ids of that build first
    # the held build's last ready run, then the ordinary claim fills the batch in id order
    mixed = _claim(db, session, Phase.EVAL, 3, held=[second])
    assert [build_of[j.id] for j in mixed] == [second, first, first]
    assert all(job_row(db, j.id).state is S.EVAL_START for j in mixed)
    assert _claim(db, session, Phase.EVAL, 3, held=[second]) == []


def test_held_builds_without_ready_runs_leave_the_id_order(db):
    session, build_of, (first, second) = _interleaved(db)
    got = _claim(db, session, Phase.EVAL, 2, held=[10**9])  # no such build
    assert [build_of[j.id] for j in got] == [first, second]
    held_first = _claim(db, session, Phase.EVAL, 2, held=[second])
    assert [build_of[j.id] for j in held_first] == [second, second]
    got = _claim(db, session, Phase.EVAL, 2, held=[second])  # none of second's runs left
    assert [build_of[j.id] for j in got] == [first, first]


def test_a_held_run_locked_by_another_claim_is_skipped_not_waited_for(mysql_db):
    db = mysql_db
    session, build_of, (first, second) = _interleaved(db)
    mine = sorted(i for i, b in build_of.items() if b == second)
    with db.engine.connect() as other, other.begin():  # another worker, mid-claim
        other.execute(select(Job.id).where(Job.id == mine[0]).with_for_update())
        got = _claim(db, session, Phase.EVAL, 2, held=[second])
    assert [j.id for j in got] == mine[1:]
    assert job_row(db, mine[0]).state is S.COMPILED


def test_an_evaluation_of_any_step_takes_a_searchs_runs_and_a_strategys_rounds(db):
    """Issue #24: go_fish --run_find's workers take only find jobs, but a search's work is
    any evaluation's: its runs (step run) and a strategy's rounds (perf jobs of a build)."""
    session, _ = _enqueued(db)
    first, second = _claim(db, session, Phase.COMPILE)
    record_outcomes(db, "w", [(first, BuildOutcome(artifact=b"tar bytes"))])
    force_state(db, second.id, "compiled", step="perf")  # as a strategy's round: a build's
    with db.session() as s:  # and a plain perf job
        s.execute(insert(Job).values(session=session, step="perf", state="compiled"))
    compiled = [S.COMPILED]
    assert count_jobs(db, session, compiled) == {S.COMPILED: 5}
    assert count_jobs(db, session, compiled, [JobStep.FIND, JobStep.RUN]) == {S.COMPILED: 4}
    taken = _claim(db, session, Phase.EVAL, step=JobStep.FIND)
    assert sorted((j.step.value, j.id == second.id) for j in taken) == [
        ("perf", True), ("run", False), ("run", False), ("run", False),
    ]  # fmt: skip
    assert [j.step for j in _claim(db, session, Phase.EVAL, step=JobStep.PERF)] == [JobStep.PERF]
