"""Search jobs' work on a worker: the artifact cache, and the claim's build affinity.

Two workers share a queue whose runs alternate between builds by id (as a dynamic
searcher's proposals arrive). Each takes one run at a time, in turn; with the builds it
holds passed to the claim (as the worker loop passes them) they fetch fewer artifacts
than in id order.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import delete, select

from tests.searches.helpers import bench_session, drain, driving, new_search, runs, search_state
from tuna.backends.artifact import pack
from tuna.backends.base import BuildOutcome, RunOutcome
from tuna.db import Database
from tuna.db.enums import JobStep
from tuna.db.models import Job, SearchRun
from tuna.jobs import Phase, claim_jobs, record_outcomes
from tuna.jobs.load import insert_run_jobs
from tuna.searches import SearchDriver
from tuna.worker import Hook
from tuna.worker.searchwork import ArtifactCache, SearchLoader

# 3 builds (b) of 4 runs (a) each
THREE_BUILDS = """\
a = [1, 2, 3, 4]
b = [10, 20, 30]

def META_get_no_rebuild_params():
    return ["a"]
"""


def _round_robin_queue(db: Database, tmp_path: Path) -> int:
    """Every build stored (distinct artifacts), the 12 runs' jobs alternating builds by id."""
    session = bench_session(db)
    search = new_search(db, session, space=THREE_BUILDS)
    SearchDriver(db, search).start()
    for b in claim_jobs(db, session, Phase.COMPILE, owner="builder", limit=10):
        d = tmp_path / f"build{b.search_build}"
        d.mkdir()
        (d / "built.txt").write_text(f"{b.search_build}\n")
        record_outcomes(db, "builder", [(b, BuildOutcome(artifact=pack(d)))])
    by_build: dict[int, list[int]] = {}
    for r in runs(db, search):
        by_build.setdefault(r.build, []).append(r.id)
    order = [r for group in zip(*by_build.values(), strict=True) for r in group]
    with db.transaction() as conn:
        conn.execute(delete(Job).where(Job.session == session, Job.step == JobStep.RUN))
        insert_run_jobs(conn, [(session, r) for r in order])
    return session


def _fetches(db: Database, session: int, tmp_path: Path, *, affinity: bool) -> list[int]:
    """Two workers take turns claiming one run, loading it and recording it; each one's
    artifact fetches."""
    loaders = [SearchLoader(db, ArtifactCache(tmp_path)) for _ in range(2)]
    try:
        while True:
            took = 0
            for n, loader in enumerate(loaders):
                held = loader.held_builds() if affinity else ()
                jobs = claim_jobs(db, session, Phase.EVAL, owner=f"w{n}", held=held)
                if not jobs:
                    continue
                took += 1
                work = loader.load(jobs)
                assert all(not isinstance(w, str) for w in work.values()), work
                record_outcomes(db, f"w{n}", [(j, RunOutcome(stats={"t": 1})) for j in jobs])
            if not took:
                return [loader.cache.fetched for loader in loaders]
    finally:
        for loader in loaders:
            loader.cache.close()


def _build_of(db: Database, job_id: int) -> int:
    with db.session() as s:
        return s.execute(
            select(SearchRun.build)
            .join(Job, Job.search_run == SearchRun.id)
            .where(Job.id == job_id)
        ).scalar_one()


def test_held_builds_are_those_whose_artifact_is_cached(db, tmp_path):
    session = _round_robin_queue(db, tmp_path)
    loader = SearchLoader(db, ArtifactCache(tmp_path, keep=1))
    try:
        assert loader.held_builds() == []
        first = claim_jobs(db, session, Phase.EVAL, owner="w")
        loader.load(first)
        assert loader.held_builds() == [_build_of(db, first[0].id)]
        second = claim_jobs(db, session, Phase.EVAL, owner="w")  # another build, by id
        loader.load(second)
        assert loader.held_builds() == [_build_of(db, second[0].id)]  # the first one evicted
        assert _build_of(db, second[0].id) != _build_of(db, first[0].id)
    finally:
        loader.cache.close()


@pytest.mark.parametrize("affinity", [False, True], ids=["id_order", "held_first"])
def test_two_workers_fetch_fewer_artifacts_when_claims_prefer_held_builds(db, tmp_path, affinity):
    session = _round_robin_queue(db, tmp_path)
    fetched = _fetches(db, session, tmp_path, affinity=affinity)
    # id order: each worker meets every build (3 + 3); held first: each worker keeps to
    # the build it met first until its runs are gone, then both meet the third (2 + 2)
    assert fetched == ([2, 2] if affinity else [3, 3])


class Seen(Hook):
    """Records the step of every job the worker runs, before and after."""

    def __init__(self) -> None:
        self.before: list[str] = []
        self.after: list[tuple[str, bool]] = []

    def before_job(self, work):
        self.before.append(work.step)

    def after_job(self, work, outcome, seconds):
        self.after.append((work.step, outcome is not None and outcome.ok))


def test_search_jobs_take_the_one_execute_path_hooks_and_time_limit(lite: Database) -> None:
    """A search's builds and runs get the hooks every job gets, and run under the time
    limit in a child as every job does (issue #25, section 5)."""
    session = bench_session(lite)
    search = new_search(lite, session)
    seen = Seen()
    with driving(lite, session):
        report = drain(lite, session, hooks=[seen], time_limit=60)
    assert search_state(lite, search) == ("done", None)
    assert report.done == 8
    assert sorted(seen.before) == ["build"] * 2 + ["run"] * 6
    assert sorted(seen.after) == [("build", True)] * 2 + [("run", True)] * 6
