"""A search's proposals recorded as rows and jobs (tuna.searches.enqueue), without a driver."""

from __future__ import annotations

from tests.searches.helpers import (
    SPEC,
    TWO_BUILDS,
    bench_session,
    builds,
    jobs_by_step_state,
    new_search,
    runs,
)
from tuna.db import Database
from tuna.searchers import Proposal
from tuna.searches.create import load_space
from tuna.searches.enqueue import Enqueuer, build_key_hash


def _enqueuer(db: Database) -> tuple[Enqueuer, int, int]:
    session = bench_session(db)
    search = new_search(db, session)
    space = load_space("params.py", TWO_BUILDS)
    return Enqueuer(db, search, session, space, dict(SPEC), builds=True), session, search


def _proposals(*points: tuple[int, int]) -> list[tuple[int, Proposal]]:
    return [(i, Proposal(i, {"a": a, "b": b}, {"a": a, "b": b})) for i, (a, b) in enumerate(points)]


def test_one_build_and_one_build_job_per_build_tuple_and_no_run_job_before_it(db):
    enqueuer, session, search = _enqueuer(db)
    ids = enqueuer.enqueue(_proposals((1, 10), (2, 10), (3, 20)))
    assert sorted(ids) == [0, 1, 2] and len(set(ids.values())) == 3
    assert [(r.seq, r.point, r.valid) for r in runs(db, search)] == [
        (0, {"a": 1, "b": 10}, None),
        (1, {"a": 2, "b": 10}, None),
        (2, {"a": 3, "b": 20}, None),
    ]
    assert sorted(b.params["b"] for b in builds(db, search)) == [10, 20]
    assert {step for step, _ in jobs_by_step_state(db, session)} == {"build"}
    assert jobs_by_step_state(db, session)[("build", "new")] == 2


def test_a_seq_recorded_already_is_kept_and_its_id_returned(db):
    enqueuer, session, search = _enqueuer(db)
    first = enqueuer.enqueue(_proposals((1, 10)))
    again = enqueuer.enqueue(_proposals((2, 20), (3, 20)))  # seq 0 again, with another point
    assert again[0] == first[0]
    assert [r.point["a"] for r in runs(db, search)] == [1, 3]
    assert len(builds(db, search)) == 2


def test_the_build_key_is_the_tuple_s_canonical_hash():
    assert build_key_hash([("b", 10), ("c", "x")]) == build_key_hash([("b", 10), ("c", "x")])
    assert build_key_hash([("b", 10)]) != build_key_hash([("b", 20)])
    assert len(build_key_hash([])) == 64
