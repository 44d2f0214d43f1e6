"""The result writer numbers runs in their search's landing order (``search_run.landed``):
each run that ends takes the next number under the search's ``search_tally`` row lock,
a batch in seq order, and the finish times follow the numbers, with concurrent writers
of one search on MariaDB too."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from sqlalchemy import select, text

from tests.report.seed import session
from tests.searches.seed import add_search
from tests.support.wait import wait_until
from tuna.backends.base import RunOutcome
from tuna.db import Database
from tuna.db.models import SearchRun, SearchTally
from tuna.jobs.search_results import fail_runs, insert_runs, store_runs
from tuna.jobs.values import ClaimedJob, JobStep, Phase


def _search(db: Database, n: int, name: str = "s") -> tuple[int, dict[int, int]]:
    """A search with ``n`` proposed runs (the driver's inserts): its id and seq -> run id."""
    search = add_search(db, session(db, f"landed-{name}"), name, {"stat": "t", "goal": "min"})
    rows = [{"search": search, "seq": i, "point": {}, "config": {}} for i in range(n)]
    with db.transaction() as conn:
        insert_runs(conn, rows)
    with db.session() as s:
        ids = s.execute(select(SearchRun.seq, SearchRun.id).where(SearchRun.search == search))
        return search, {int(r[0]): int(r[1]) for r in ids}


def _job(run: int) -> ClaimedJob:
    return ClaimedJob(run, 1, Phase.EVAL, 0, None, None, JobStep.RUN, search_run=run)


def _store(conn, runs: Sequence[int], t: float = 1.0) -> None:
    store_runs(conn, [(_job(r), RunOutcome(stats={"t": t})) for r in runs])


def _landed(db: Database, search: int) -> list[tuple[int, int | None, object]]:
    """(seq, landed, finished) of the search's runs, by seq."""
    with db.session() as s:
        rows = s.execute(
            select(SearchRun.seq, SearchRun.landed, SearchRun.finished)
            .where(SearchRun.search == search)
            .order_by(SearchRun.seq)
        ).all()
    return [(int(r[0]), r[1], r[2]) for r in rows]


def _done(db: Database, search: int) -> int:
    with db.session() as s:
        done = s.execute(select(SearchTally.done).where(SearchTally.search == search))
        return int(done.scalar_one())


def test_runs_are_numbered_as_they_land_a_batch_in_seq_order(db: Database) -> None:
    search, ids = _search(db, 8)
    with db.transaction() as conn:
        _store(conn, [ids[5], ids[2], ids[7]])  # one batch, given out of seq order
    with db.transaction() as conn:
        fail_runs(conn, SearchRun.id.in_([ids[0], ids[6]]), "not run: build failed")
    with db.transaction() as conn:
        _store(conn, [ids[1]])
    with db.transaction() as conn:
        _store(conn, [ids[2]], t=0.5)  # stored again (a reset job): keeps its place
    with db.transaction() as conn:  # inserted ended (refused at once): numbered too
        insert_runs(conn, [{"search": search, "seq": 8, "point": {}, "config": {},
                            "valid": False, "reason": "refused"}])  # fmt: skip
    landed = {seq: n for seq, n, _ in _landed(db, search)}
    assert landed == {0: 4, 1: 6, 2: 1, 3: None, 4: None, 5: 2, 6: 5, 7: 3, 8: 7}
    assert _done(db, search) == 7


def test_two_writers_of_one_search_number_one_after_the_other(mysql_db: Database) -> None:
    """The second writer waits for the first's ``search_tally`` lock before it takes its
    numbers and its finish time: both follow the first's, none is given twice."""
    db = mysql_db
    search, ids = _search(db, 6)
    second_done = threading.Event()
    errors: list[BaseException] = []

    def second() -> None:
        try:
            with db.transaction() as conn:
                _store(conn, [ids[0], ids[1]])
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append(e)
        finally:
            second_done.set()

    with db.engine.connect() as first, first.begin():
        _store(first, [ids[4], ids[5], ids[3]])  # numbered, finish time taken, not committed
        writer = threading.Thread(target=second)
        writer.start()
        wait_until(
            lambda: _waits_for_a_lock(db) or second_done.is_set(),
            "the second writer to wait for the lock",
            interval=0.25,  # InnoDB refreshes its lock tables for a read 0.1 s after the last
        )
        assert not second_done.is_set(), errors  # it waits for the first
    writer.join(timeout=60)
    assert not errors and second_done.is_set()
    rows = _landed(db, search)
    assert [(seq, n) for seq, n, _ in rows] == [(0, 4), (1, 5), (2, None), (3, 1), (4, 2), (5, 3)]
    by_landing = sorted((n, at) for _, n, at in rows if n is not None)
    assert [at for _, at in by_landing] == sorted(at for _, at in by_landing)
    assert _done(db, search) == 5


def _waits_for_a_lock(db: Database) -> bool:
    with db.engine.connect() as conn:
        return bool(conn.execute(text("SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS"))
                    .scalar())  # fmt: skip


def test_concurrent_writers_never_give_a_number_twice(mysql_db: Database) -> None:
    """Two writers storing batches of one search's runs at once, round after round: the
    numbers are 1..n, each batch's consecutive in seq order, finish times in their order."""
    db = mysql_db
    rounds, per = 20, 3
    search, ids = _search(db, 2 * rounds * per)
    start = threading.Barrier(2)
    errors: list[BaseException] = []
    batches: dict[int, list[list[int]]] = {0: [], 1: []}

    def writer(w: int) -> None:
        try:
            for r in range(rounds):
                seqs = [(2 * r + w) * per + i for i in range(per)]
                batches[w].append(seqs)
                start.wait(timeout=60)
                with db.transaction() as conn:
                    _store(conn, [ids[s] for s in reversed(seqs)])
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append(e)
            start.abort()

    threads = [threading.Thread(target=writer, args=(w,)) for w in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    rows = _landed(db, search)
    landed = {seq: n for seq, n, _ in rows}
    assert sorted(n for n in landed.values() if n is not None) == list(range(1, len(ids) + 1))
    for seqs in batches[0] + batches[1]:
        first = landed[seqs[0]]
        assert first is not None
        assert [landed[s] for s in seqs] == list(range(first, first + per))
    by_landing = sorted((n, at) for _, n, at in rows if n is not None)
    assert [at for _, at in by_landing] == sorted(at for _, at in by_landing)
    assert _done(db, search) == len(ids)
