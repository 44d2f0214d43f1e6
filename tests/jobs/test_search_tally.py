"""A search's ``search_tally`` counters (pruned runs too) equal a full count of its runs
after any sequence of driver inserts, claims, recorded builds and runs, failures, expired
leases, operator resets and resumed drivers (hypothesis picks the sequences), on SQLite
and MariaDB."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import case, func, select, true

from tests.searches.helpers import BISECT, BISECT_SEARCHER, bench_session, new_search
from tests.support.seed import expire_leases
from tuna.backends.base import BuildOutcome, RunOutcome
from tuna.db import Database
from tuna.db.models import SearchRun, SearchTally
from tuna.jobs import JobFilter, Phase, claim_jobs, reap_expired, record_outcomes, reset_jobs
from tuna.jobs.values import ClaimedJob
from tuna.searches import SearchDriver

TUNA = Path(__file__).resolve().parents[2] / "tuna"


STEPS = st.lists(
    st.tuples(
        st.sampled_from(["tick", "resume", "build", "run", "build", "run", "reap", "reset"]),
        st.integers(0, 11),
    ),
    max_size=30,
)


def _tallies(db: Database, searches: list[int]) -> tuple[dict[int, tuple], dict[int, tuple]]:
    """(the counters, a full count of the runs) of ``searches``."""
    with db.session() as s:
        kept = {
            r.search: (r.runs, r.done, r.valid, r.pruned)
            for r in s.execute(select(SearchTally).where(SearchTally.search.in_(searches)))
            .scalars()
            .all()
        }
        counted = {
            int(r[0]): (int(r[1]), int(r[2]), int(r[3] or 0), int(r[4] or 0))
            for r in s.execute(
                select(
                    SearchRun.search,
                    func.count(),
                    func.count(SearchRun.valid),
                    func.sum(case((SearchRun.valid == true(), 1), else_=0)),
                    func.sum(case((SearchRun.pruned == true(), 1), else_=0)),
                )
                .where(SearchRun.search.in_(searches))
                .group_by(SearchRun.search)
            )
        }
    return kept, counted


def _outcome(job: ClaimedJob, k: int) -> BuildOutcome | RunOutcome | None:
    """What the worker holding ``job`` records, by ``k``: None keeps it in flight."""
    kind = BuildOutcome if job.search_build is not None else RunOutcome
    if k % 4 == 0:
        return None
    if k % 4 == 1:
        return kind.failed("OSError: disk full")  # retried, or the job gives up
    if job.search_build is not None:
        return BuildOutcome(artifact=b"tar") if k % 4 == 2 else BuildOutcome(failure="exit 2")
    if k % 4 == 2:
        return RunOutcome(stats={"t": 20 * k})
    return RunOutcome(valid=False, failure="x", pruned=k % 8 == 3)  # its pruner stopped it


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_the_counters_equal_a_full_count_after_any_sequence(db: Database, steps) -> None:
    session = bench_session(db)
    searches = [
        new_search(db, session, name="static"),
        new_search(
            db,
            session,
            name="dynamic",
            space=BISECT,
            searcher=BISECT_SEARCHER,
            base={"b": 10},
            budget=12,
        ),  # fmt: skip
    ]
    drivers = [SearchDriver(db, s) for s in searches]
    for d in drivers:
        d.start()
    held: list[ClaimedJob] = []
    for action, k in steps:
        if action == "tick":
            for d in drivers:
                d.tick()
        elif action == "resume":  # a driver killed and started again
            drivers = [SearchDriver(db, s) for s in searches]
            for d in drivers:
                d.start()
        elif action in ("build", "run"):
            phase = Phase.COMPILE if action == "build" else Phase.EVAL
            for job in claim_jobs(db, session, phase, owner="w", limit=1 + k % 2):
                outcome = _outcome(job, k)
                if outcome is None:
                    held.append(job)
                else:
                    record_outcomes(db, "w", [(job, outcome)], max_retries=1)
        elif action == "reap" and held:
            expire_leases(db, [j.id for j in held])
            reap_expired(db, max_retries=k % 2)
            held = []
        elif action == "reset":
            reset_jobs(db, JobFilter(session=session))
        kept, counted = _tallies(db, searches)
        assert kept == {s: counted.get(s, (0, 0, 0, 0)) for s in kept}, (action, k)
        _assert_landed_one_to_done(db, searches, kept)
    kept, counted = _tallies(db, searches)
    assert kept == {s: counted.get(s, (0, 0, 0, 0)) for s in searches}
    _assert_landed_one_to_done(db, searches, kept)


def _assert_landed_one_to_done(db: Database, searches: list[int], kept: dict[int, tuple]) -> None:
    """Each search's ended runs are numbered 1..done, the others not at all (a run stored
    again after a reset keeps its number: its finish time may then be a later one's)."""
    with db.session() as s:
        for search in searches:
            rows = s.execute(
                select(SearchRun.valid, SearchRun.landed)
                .where(SearchRun.search == search)
                .order_by(SearchRun.landed)
            ).all()
            landed = [r.landed for r in rows if r.valid is not None]
            assert landed == list(range(1, kept.get(search, (0, 0, 0, 0))[1] + 1)), search
            assert all(r.landed is None for r in rows if r.valid is None)


def test_only_the_result_writer_writes_runs() -> None:
    """Every insert into and update of ``search_run`` is in :mod:`tuna.jobs.search_results`,
    which keeps the counters: a write anywhere else would skip them."""
    writes = re.compile(r"\b(insert|update|delete)\(\s*(SearchRun|tables\.search_run)\b")
    found = [
        str(p.relative_to(TUNA))
        for p in TUNA.rglob("*.py")
        if writes.search(p.read_text()) and p.name != "search_results.py"
    ]
    assert found == []
    assert writes.search((TUNA / "jobs" / "search_results.py").read_text())
