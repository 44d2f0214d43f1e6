from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import func, select

from tests.support.seed import make_session
from tuna.catalog.importer import import_configs, read_lines
from tuna.db.clock import db_now
from tuna.db.enums import JobState
from tuna.db.models import Job
from tuna.errors import NotFoundError, TunaError
from tuna.jobs.load import load_jobs
from tuna.sessions import SessionSpec, create_session
from tuna.sessions.history import retire, set_rules, unretire
from tuna.sessions.rules import HistoryRules, parse_max_age

LINES = """\
MIOpenDriver conv -n 4 -c 64 -H 14 -W 14 -k 64 -y 1 -x 1 -F 1
MIOpenDriver conv -n 4 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1
MIOpenDriver conv -n 4 -c 64 -H 14 -W 14 -k 64 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -g 2 -F 1
"""
SPEC = SessionSpec(arch="cpu", num_cu=2, backend="noop")


@pytest.fixture
def session_id(db):
    import_configs(db, read_lines(LINES), tag="net")
    return create_session(db, SPEC).id


def jobs(db, **where):
    with db.session() as s:
        q = select(func.count()).select_from(Job)
        for k, v in where.items():
            q = q.where(getattr(Job, k) == v)
        return s.scalar(q)


def test_one_job_per_applicable_pair_and_reasons_for_the_rest(db, session_id):
    report = load_jobs(db, session_id, step="perf", tag="net", label="first")
    # 1x1: Direct, Gemm1x1, Tunable; 3x3 s1: Direct, Winograd, Tunable; 3x3 s2 g2: Direct
    assert (report.configs, report.candidates, report.inserted) == (3, 12, 7)
    assert report.not_applicable == {
        "filter is not 1x1": 2,
        "filter is not 3x3 with stride 1": 2,
        "grouped convolution": 1,
    }
    assert report.by_solver == {
        "NoopDirect": 3,
        "NoopGemm1x1": 1,
        "NoopWinograd3x3": 1,
        "NoopTunable": 2,
    }
    assert jobs(db, session=session_id, state=JobState.NEW, label="first") == 7


def test_loading_again_duplicates_nothing(db, session_id):
    load_jobs(db, session_id, step="perf", tag="net")
    again = load_jobs(db, session_id, step="perf", tag="net")
    assert (again.inserted, again.already_queued) == (0, 7)
    assert jobs(db) == 7
    other_step = load_jobs(db, session_id, step="find", tag="net")
    assert other_step.inserted == 7 and jobs(db) == 14


def test_solver_filters(db, session_id):
    only = load_jobs(db, session_id, step="perf", all_configs=True, solvers=["NoopDirect"])
    assert only.inserted == 3 and only.by_solver == {"NoopDirect": 3}
    tunable = load_jobs(db, session_id, step="find", all_configs=True, only_tunable=True)
    assert tunable.by_solver == {"NoopTunable": 2}
    with pytest.raises(TunaError, match="Bogus.*unknown to backend 'noop'"):
        load_jobs(db, session_id, step="perf", tag="net", solvers=["Bogus"])


def test_work_done_in_a_session_with_the_same_fingerprint_is_skipped_unless_forced(db, session_id):
    load_jobs(db, session_id, step="perf", tag="net")
    with db.session() as s:  # pretend the first session finished two jobs
        for job in s.scalars(select(Job).order_by(Job.id).limit(2)):
            s.execute(Job.__table__.update().where(Job.id == job.id).values(state="evaluated"))
    second = create_session(db, SPEC).id
    report = load_jobs(db, second, step="perf", tag="net")
    assert report.done_elsewhere == {session_id: 2}
    assert report.inserted == 5
    forced = load_jobs(db, second, step="perf", tag="net", force=True)
    assert forced.inserted == 2
    different = make_session(db, arch="cpu", num_cu=4, backend="noop")
    assert load_jobs(db, different, step="perf", tag="net").inserted == 7


def test_clear_errors(db, session_id):
    with pytest.raises(NotFoundError, match="no config is tagged 'nope'"):
        load_jobs(db, session_id, step="perf", tag="nope")
    with pytest.raises(NotFoundError, match="session 99 does not exist"):
        load_jobs(db, 99, step="perf", tag="net")
    with pytest.raises(TunaError, match="exactly one of"):
        load_jobs(db, session_id, step="perf")
    with pytest.raises(TunaError, match="--step 'bogus'"):
        load_jobs(db, session_id, step="bogus", tag="net")


def _finish_first_two(db, session_id):
    load_jobs(db, session_id, step="perf", tag="net")
    with db.session() as s:  # pretend the session finished two jobs, two days ago
        ids = list(s.scalars(select(Job.id).where(Job.session == session_id).order_by(Job.id)))
        s.execute(
            Job.__table__.update()
            .where(Job.id.in_(ids[:2]))
            .values(state="evaluated", eval_end=s.scalar(select(db_now(-2 * 86400))))
        )


def test_a_retired_sessions_work_is_queued_again_and_the_report_says_why(db, session_id):
    _finish_first_two(db, session_id)
    retire(db, session_id)
    second = create_session(db, SPEC).id
    report = load_jobs(db, second, step="perf", tag="net")
    assert report.done_elsewhere == {}
    assert report.inserted == 7
    assert report.not_counted == {"retired": 2}
    unretire(db, session_id)
    third = create_session(db, SPEC).id
    assert load_jobs(db, third, step="perf", tag="net").done_elsewhere == {session_id: 2}


def test_the_sessions_rules_decide_what_is_skipped(db, session_id):
    _finish_first_two(db, session_id)
    newer = create_session(db, replace(SPEC, library_version="3.4.0")).id
    strict = load_jobs(db, newer, step="perf", tag="net")
    assert (strict.inserted, strict.not_counted) == (7, {"library": 2})
    assert strict.rules == "library fingerprint"
    relaxed = create_session(db, replace(SPEC, library_version="3.4.0")).id
    set_rules(db, relaxed, HistoryRules(library="any"))
    assert load_jobs(db, relaxed, step="perf", tag="net").done_elsewhere == {session_id: 2}
    young = create_session(db, SPEC).id
    set_rules(db, young, HistoryRules(max_age=parse_max_age("1d")))  # ages in whole days
    expired = load_jobs(db, young, step="perf", tag="net")
    assert (expired.inserted, expired.not_counted) == (7, {"max_age": 2})
    with db.session() as s:  # expiry deleted nothing
        assert s.scalar(select(func.count()).select_from(Job).where(Job.state == "evaluated")) == 2
