"""Searches for the queue tests: a bench session and small parameter files."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlalchemy import select, text

from tests.support.seed import make_session
from tuna.db import Database
from tuna.db.models import Search, SearchBuild, SearchRun
from tuna.searches import SearchRequest, SessionSearches, create_search
from tuna.worker.loop import WorkerReport, run_worker

# a: runtime-only; b: build-time. 2 builds for 6 runs (the reference's pathological case).
TWO_BUILDS = """\
a = [1, 2, 3]
b = [10, 20]

def META_get_no_rebuild_params():
    return ["a"]
"""

# The build writes b into a file the run prints: a run sees its own build's artifact.
SPEC: dict[str, Any] = {
    "build": "echo {b} > built.txt",
    "run": 'echo "t: $(( {a} * $(cat built.txt) ))"',
    "owns": "nothing",
    "run_timeout_s": 30,
}


# A dynamic search with one build (b), one run at a time: Bisect the largest a whose run
# stays under a bound; its later runs are inserted after earlier ones land, and inserted
# invalid at once when its build failed.
BISECT = """\
a = []
b = [10]

def META_get_no_rebuild_params():
    return ["a"]
"""
BISECT_SEARCHER = "Bisect('a', 1, 40, 1, lambda r: r.valid and r.stats['t'] <= 170)"


def bench_session(db: Database) -> int:
    return make_session(db, arch="cpu", num_cu=1, backend="bench")


def new_search(
    db: Database,
    session: int,
    *,
    name: str = "s",
    space: str = TWO_BUILDS,
    space_file: str = "params.py",
    spec: Mapping[str, Any] | None = None,
    objective: str = "t",
    goal: str = "min",
    **kw: Any,
) -> int:
    return create_search(
        db,
        SearchRequest(
            session=session,
            name=name,
            space_file=space_file,
            space_text=space,
            spec=dict(SPEC if spec is None else spec),
            objective_stat=objective,
            goal=goal,
            **kw,
        ),
    )


def runs(db: Database, search: int) -> list[Any]:
    with db.session() as s:
        return list(
            s.execute(select(SearchRun).where(SearchRun.search == search).order_by(SearchRun.seq))
            .scalars()
            .all()
        )


def builds(db: Database, search: int) -> list[Any]:
    with db.session() as s:
        return list(
            s.execute(
                select(SearchBuild).where(SearchBuild.search == search).order_by(SearchBuild.id)
            )
            .scalars()
            .all()
        )


def search_state(db: Database, search: int) -> tuple[str, str | None]:
    with db.session() as s:
        row = s.get(Search, search)
        assert row is not None
        return row.state, row.reason


def jobs_by_step_state(db: Database, session: int) -> dict[tuple[str, str], int]:
    with db.session() as s:
        return {
            (step, state): n
            for step, state, n in s.execute(
                text(
                    "SELECT step, state, COUNT(*) FROM job WHERE session = :s GROUP BY step, state"
                ),
                {"s": session},
            )
        }


@contextmanager
def driving(db: Database, session: int) -> Iterator[SessionSearches]:
    """The session's searches driven from a thread, as go_fish drives them."""
    searches = SessionSearches(db, session)
    stop = threading.Event()
    thread = threading.Thread(target=searches.run, args=(stop,), kwargs={"idle_s": 0.05})
    thread.start()
    try:
        yield searches
    finally:
        stop.set()
        thread.join()


def drain(db: Database, session: int, **settings: Any) -> WorkerReport:
    """One burst evaluate worker (it takes builds too) until the searches are over."""
    return run_worker(db, session, "eval", burst=True, handle_signals=False, **settings)
