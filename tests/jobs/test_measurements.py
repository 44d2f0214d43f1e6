"""Measurement rows: written with a job's record (ok or failed, never when lost), saved
midway under the job's fence, and read back for a resumed job, on both databases."""

from __future__ import annotations

from sqlalchemy import func, select

from tests.support.seed import expire_leases, seed
from tuna.backends import CompileOutcome, EvalOutcome, FindResult, PerfResult
from tuna.backends.base import Measurement as M
from tuna.db import Database
from tuna.db.models import Measurement, MeasurementEffort, Platform
from tuna.jobs import Phase, claim_jobs, reap_expired, record_outcome, record_outcomes
from tuna.jobs.measurements import MeasuredOn, measured_before, save_progress
from tuna.jobs.values import ClaimedJob
from tuna.platforms import store_platform

FIND = FindResult(0.5, 0, "direct", "b")


def _platform(db: Database, name: str = "box") -> int:
    with db.transaction() as conn:
        return store_platform(conn, {"cpu": {"model": name}})


def _eval_jobs(db: Database, n: int = 1) -> list[ClaimedJob]:
    sd = seed(db, configs=n, solvers=["NoopTunable"])
    for job in claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=n):
        record_outcome(db, "w", job, CompileOutcome())
    return claim_jobs(db, sd.session, Phase.EVAL, owner="w", limit=n)


def _rows(db: Database) -> list[tuple]:
    with db.session() as s:
        q = select(
            Measurement.job,
            Measurement.params,
            Measurement.time_ms,
            Measurement.valid,
            Measurement.reason,
            Measurement.platform,
            Measurement.machine,
            Measurement.strategy,
        ).order_by(Measurement.id)
        return [tuple(r) for r in s.execute(q)]


def _counts(db: Database) -> list[tuple]:
    """The effort counts, (session, config, strategy, measurements, valid[, budget]), all
    of today (the budget only where one was said)."""
    e = MeasurementEffort
    with db.session() as s:
        today = str(s.scalar(select(func.current_date())))
        rows = s.execute(select(e).order_by(e.config, e.strategy)).scalars().all()
        assert {str(r.day) for r in rows} <= {today}
        return [
            (r.session, r.config, r.strategy, r.measurements, r.valid)
            + (() if r.budget is None else (r.budget,))
            for r in rows
        ]


def test_a_record_writes_every_measurement_of_an_ok_and_of_a_failed_evaluation(db):
    on = MeasuredOn(_platform(db), machine=None)
    ok_job, failed_job = _eval_jobs(db, 2)
    ok = EvalOutcome(
        perf=PerfResult("b"),
        find=FIND,
        measurements=(
            M("a", 0.7, True, strategy="random", budget=8),
            M("b", 0.5, True, "raced"),
        ),
    )
    failed = EvalOutcome(
        ok=False, reason="time budget", measurements=(M("c", None, False, "crashed"),)
    )
    record_outcomes(db, "w", [(ok_job, ok), (failed_job, failed)], measured_on=on)
    assert _rows(db) == [
        (ok_job.id, "a", 0.7, True, None, on.platform, None, "random"),
        (ok_job.id, "b", 0.5, True, "raced", on.platform, None, None),
        (failed_job.id, "c", None, False, "crashed", on.platform, None, None),
    ]
    sess = ok_job.session
    assert _counts(db) == [  # the effort counts, in the same transaction
        (sess, ok_job.config, "", 1, 1),
        (sess, ok_job.config, "random", 1, 1, 8),
        (sess, failed_job.config, "", 1, 0),
    ]


def test_a_lost_job_writes_no_measurement(db):
    on = MeasuredOn(_platform(db))
    (job,) = _eval_jobs(db)
    expire_leases(db, [job.id])
    reap_expired(db)
    rec = record_outcomes(
        db, "w", [(job, EvalOutcome(find=FIND, measurements=(M("a", 1.0, True),)))], measured_on=on
    )
    assert rec.lost == [job.id]
    assert _rows(db) == []
    assert _counts(db) == []


def test_a_record_without_a_platform_measures_on_this_process_s(db):
    (job,) = _eval_jobs(db)
    record_outcome(db, "w", job, EvalOutcome(find=FIND, measurements=(M("a", 1.0, True),)))
    with db.session() as s:
        (platform,) = s.scalars(select(Platform)).all()
    assert _rows(db)[0][5] == platform.id
    assert platform.info["os"]["kernel"]  # collected here


def test_progress_is_saved_while_held_and_refused_once_the_lease_is_lost(db):
    on = MeasuredOn(_platform(db), machine=7)
    (job,) = _eval_jobs(db)
    assert save_progress(db, "w", job, [M("a", 1.0, True)], on)
    assert not save_progress(db, "someone else", job, [M("b", 1.0, True)], on)
    expire_leases(db, [job.id])
    reap_expired(db)
    assert not save_progress(db, "w", job, [M("c", 1.0, True)], on)
    assert [(r[1], r[6]) for r in _rows(db)] == [("a", 7)]
    assert _counts(db) == [(job.session, job.config, "", 1, 1)]


def test_measured_before_is_per_session_problem_solver_and_platform_fastest_kept(db):
    here, there = _platform(db, "here"), _platform(db, "there")
    a, b = _eval_jobs(db, 2)
    save_progress(db, "w", a, [M("x", 2.0, True), M("y", None, False, "crashed")], MeasuredOn(here))
    save_progress(db, "w", a, [M("x", 1.5, True)], MeasuredOn(here))  # measured again
    save_progress(db, "w", a, [M("x", 4.0, True)], MeasuredOn(here))  # and again, disturbed
    save_progress(db, "w", a, [M("z", 9.0, True)], MeasuredOn(there))
    save_progress(db, "w", b, [M("w", 3.0, True)], MeasuredOn(here))
    with db.transaction() as conn:
        found = measured_before(conn, a.session, here, [(a.config, a.solver)])
        other_session = measured_before(conn, a.session + 1, here, [(a.config, a.solver)])
        nothing = measured_before(conn, a.session, here, [])
    assert found == {(a.config, a.solver): (M("x", 1.5, True), M("y", None, False, "crashed"))}
    assert other_session == {} and nothing == {}
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Measurement)) == 6


def test_a_record_made_with_the_next_claim_writes_the_measurements_too(db):
    from tuna.jobs import record_and_claim

    on = MeasuredOn(_platform(db), machine=3)
    first, _second = _eval_jobs(db, 2)
    rec, claimed = record_and_claim(
        db,
        "w",
        [(first, EvalOutcome(find=FIND, measurements=(M("a", 1.0, True),)))],
        first.session,
        Phase.EVAL,
        measured_on=on,
    )
    assert rec.lost == [] and claimed == []  # the second is held already
    assert _rows(db) == [(first.id, "a", 1.0, True, None, on.platform, 3, None)]


def test_saves_add_to_one_count_and_keep_the_largest_budget_said(db):
    on = MeasuredOn(_platform(db))
    (job,) = _eval_jobs(db)
    batches = [
        [M("a", 1.0, True, budget=4)],
        [M("b", None, False)],
        [M("c", 2.0, True, budget=6)],
        [M("d", 2.0, True, budget=5)],
    ]
    for batch in batches:
        assert save_progress(db, "w", job, batch, on)
    assert _counts(db) == [(job.session, job.config, "", 4, 3, 6)]
