"""The driver through the queue (issue #15): static and dynamic searches, budgets, failures,
and resuming a driver killed mid-search, with real bench jobs run by a worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.searches.helpers import (
    BISECT,
    BISECT_SEARCHER,
    SPEC,
    bench_session,
    builds,
    drain,
    driving,
    jobs_by_step_state,
    new_search,
    runs,
    search_state,
)
from tests.support.wait import wait_until
from tuna.backends.bench import BenchSpec, LocalBench, run_search
from tuna.db import Database
from tuna.db.models import Search
from tuna.searchers import Proposer
from tuna.searches import SearchDriver
from tuna.searches.create import load_space, make_searcher
from tuna.worker.loop import run_worker

# a dynamic searcher of rounds: 3 points a round, each round above the last round's best
ROUNDS = """\
a = []
b = [10]

def META_get_no_rebuild_params():
    return ["a"]

class Climb:
    is_dynamic = True

    def rounds(self):
        start = 1
        for _ in range(4):
            points = [{"a": start + i} for i in range(3)]
            runs = yield points
            # the Runs come back together, in proposal order
            assert [r.config["a"] for r in runs] == [p["a"] for p in points], runs
            start = max(r.config["a"] for r in runs if r.valid) + 1

    def generate(self):
        rounds = self.rounds()
        batch = next(rounds)
        while True:
            runs = []
            for point in batch:
                runs.append((yield point))
            try:
                batch = rounds.send(runs)
            except StopIteration:
                return

def META_search_callback():
    return Climb()
"""


def test_a_static_search_builds_once_per_build_tuple(db: Database) -> None:
    session = bench_session(db)
    search = new_search(db, session)
    with driving(db, session):
        report = drain(db, session, claim_batch=4)
    assert search_state(db, search) == ("done", None)
    assert len(builds(db, search)) == 2  # 6 runs, 2 distinct values of b
    assert all(b.valid for b in builds(db, search))
    got = sorted((r.config["a"], r.config["b"], r.value) for r in runs(db, search))
    assert got == sorted((a, b, float(a * b)) for a in (1, 2, 3) for b in (10, 20))
    assert jobs_by_step_state(db, session) == {("build", "evaluated"): 2, ("run", "evaluated"): 6}
    assert report.done == 8


def test_a_budget_bounds_the_runs_and_meta_refusals_are_never_built(db: Database) -> None:
    session = bench_session(db)
    space = "a = [1, 2, 3]\nb = [10, 20, 30]\ndef META_get_no_rebuild_params():\n    return ['a']\n"
    space += "def META_is_config_valid(c):\n    return c['b'] != 20\n"
    search = new_search(db, session, space=space, budget=4)
    with driving(db, session):
        drain(db, session)
    # product order (a, then b); b = 20 refused before anything is built; 4 of 6 runs
    assert [(r.seq, r.config["a"], r.config["b"]) for r in runs(db, search)] == [
        (0, 1, 10),
        (1, 1, 30),
        (2, 2, 10),
        (3, 2, 30),
    ]
    assert sorted(b.params["b"] for b in builds(db, search)) == [10, 30]


RANGES = """{
  "a": {"int": [1, 9], "step": 2},
  "b": {"float": [0.5, 2.0], "log": true},
  "c": {"values": [10, 20], "when": {"a": [1, 3]}},
  "META_constraints": ["a * b <= 12"]
}"""


def test_a_search_over_ranges_runs_through_the_queue_and_resumes_the_same_space(
    db: Database,
) -> None:
    session = bench_session(db)
    search = new_search(
        db,
        session,
        space=RANGES,
        space_file="ranges.json",
        spec={"run": "echo t: {a}", "owns": "nothing", "run_timeout_s": 30},
        searcher="Random(space, 6, seed=4)",
    )
    with db.session() as s:
        row = s.get(Search, search)
        assert row is not None
        stored = load_space(row.space_file, row.space_text)  # what a resumed driver reads
    assert stored == load_space("ranges.json", RANGES)
    with driving(db, session):
        drain(db, session)
    assert search_state(db, search) == ("done", None)
    got = runs(db, search)
    proposer = Proposer(stored, make_searcher("Random(space, 6, seed=4)", stored))
    expected = [p.config for p in proposer.proposals()]
    assert len(got) == len(expected) == 6 - len(proposer.refused) >= 3
    assert [r.config for r in got] == expected  # floats and conditions as proposed, in order
    for r in got:
        assert r.valid and r.value == float(r.config["a"])
        assert stored.check_point(r.config) == r.config
        assert ("c" in r.config) == (r.config["a"] in (1, 3))
        assert r.config["a"] * r.config["b"] <= 12


def test_optunas_sampler_by_name_drives_a_search_over_ranges_through_the_queue(
    db: Database,
) -> None:
    """--searcher tpe (issue #28): Optuna's TPE proposes rounds of the ranges, the
    condition and the constraint as declared; the queue's runs are told back to it."""
    session = bench_session(db)
    search = new_search(
        db,
        session,
        space=RANGES,
        space_file="ranges.json",
        spec={"run": "echo t: {a}", "owns": "nothing", "run_timeout_s": 30},
        searcher="tpe",
        budget=8,
        parallelism=4,
    )
    with driving(db, session):
        drain(db, session)
    assert search_state(db, search) == ("done", None)
    got = runs(db, search)
    assert 4 <= len(got) <= 8  # a point the constraint refuses is not run
    assert len({tuple(sorted(r.config.items())) for r in got}) == len(got)
    stored = load_space("ranges.json", RANGES)
    for r in got:
        assert r.valid and r.value == float(r.config["a"])
        assert stored.check_point(r.config) == r.config
        assert ("c" in r.config) == (r.config["a"] in (1, 3))
        assert r.config["a"] * r.config["b"] <= 12


def test_a_dynamic_search_takes_the_path_the_local_runner_takes(db: Database, tmp_path) -> None:
    session = bench_session(db)
    search = new_search(db, session, space=BISECT, searcher=BISECT_SEARCHER, base={"b": 10})
    with driving(db, session):
        drain(db, session)
    assert search_state(db, search) == ("done", None)
    queued = [(r.seq, r.point, r.valid) for r in runs(db, search)]
    space = load_space("p.py", BISECT)
    proposer = Proposer(space, make_searcher(BISECT_SEARCHER, space), {"b": 10})
    spec = BenchSpec.of(SPEC["run"], build=SPEC["build"])
    with LocalBench(spec, space, scratch_root=tmp_path) as bench:
        local = run_search(proposer, bench)
    assert [(r.point, r.valid) for r in runs(db, search)] == [
        ({"a": r.config["a"]}, r.valid) for r in local
    ]
    assert [q[0] for q in queued] == list(range(len(local)))
    assert max(r.config["a"] for r in local if r.stats["t"] <= 170) == 17  # 170 <= 170 < 180
    assert len(builds(db, search)) == 1


def test_failures_are_invalid_runs_and_the_search_still_ends(db: Database) -> None:
    session = bench_session(db)
    spec = {**SPEC, "run": "if [ {a} = 2 ]; then exit 3; fi; echo t: {a}"}
    search = new_search(db, session, spec=spec)
    with driving(db, session):
        drain(db, session)
    assert search_state(db, search) == ("done", None)
    bad = [r for r in runs(db, search) if not r.valid]
    assert [r.config["a"] for r in bad] == [2, 2]
    assert all(r.reason.startswith("run exited with status 3") for r in bad)
    assert jobs_by_step_state(db, session)[("run", "evaluated")] == 6


def test_a_failed_build_fails_its_runs_not_the_search(db: Database) -> None:
    session = bench_session(db)
    spec = {**SPEC, "build": "test {b} = 10 && echo {b} > built.txt"}
    search = new_search(db, session, spec=spec)
    with driving(db, session):
        drain(db, session)
    assert search_state(db, search)[0] == "done"
    by_b = {b: [r for r in runs(db, search) if r.config["b"] == b] for b in (10, 20)}
    assert all(r.valid for r in by_b[10])
    assert all(not r.valid and r.reason.startswith("not run: build exited") for r in by_b[20])


def test_an_objective_no_run_prints_fails_the_search_with_the_stats_it_saw(db: Database) -> None:
    session = bench_session(db)
    search = new_search(db, session, objective="qps")
    with driving(db, session):
        drain(db, session)
    state, reason = search_state(db, search)
    assert state == "failed"
    assert "the objective's stat 'qps' is in no run's output (the runs printed: t)" in reason


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_killed_driver_resumes_without_measuring_anything_twice(
    db: Database, tmp_path: Path, parallelism: int
) -> None:
    """Bisect (one point in flight) and a searcher of rounds with 2 of its 3 in flight."""
    session = bench_session(db)
    log = tmp_path / "measured.log"
    spec = {**SPEC, "run": f'echo {{a}} >> {log}; echo "t: $(( {{a}} * 10 ))"'}
    if parallelism == 1:
        kw = {"space": BISECT, "searcher": BISECT_SEARCHER}
    else:
        kw = {"space": ROUNDS, "parallelism": parallelism}
    search = new_search(db, session, base={"b": 10}, spec=spec, **kw)  # type: ignore[arg-type]
    stop = threading.Event()
    worker = threading.Thread(
        target=run_worker,
        args=(db, session, "eval"),
        kwargs={"stop": stop, "handle_signals": False, "idle_sleep": 0.02, "claim_batch": 2},
    )
    worker.start()
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(session)],
        env={**os.environ, "TUNA_DB_URL": db.url.render_as_string(hide_password=False)},
        start_new_session=True,
    )
    try:
        landed = 2 * parallelism  # rounds of 3: the kill comes in the second
        wait_until(
            lambda: sum(r.valid is not None for r in runs(db, search)) >= landed,
            f"{landed} runs recorded while the first driver runs",
        )
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        before = len(runs(db, search))
        with driving(db, session):  # a new driver replays the recorded Runs and goes on
            wait_until(lambda: search_state(db, search)[0] != "active", "the search to end")
    finally:
        if driver.poll() is None:
            driver.kill()
        stop.set()
        worker.join()
    assert search_state(db, search) == ("done", None)
    measured = [int(x) for x in log.read_text().split()]
    assert len(measured) == len(set(measured)) == len(runs(db, search)) > before
    assert [r.seq for r in runs(db, search)] == list(range(len(measured)))
    if parallelism == 1:
        assert max(r.config["a"] for r in runs(db, search) if r.value <= 170) == 17
    else:
        assert sorted(measured) == list(range(1, 13))


DRIVER = """
import sys, threading
from tuna.config import load_settings
from tuna.db import open_database
from tuna.searches import SessionSearches
db = open_database(load_settings().db_url)
SessionSearches(db, int(sys.argv[1])).run(threading.Event(), poll_s=0.01)
"""


@pytest.mark.parametrize("static", [True, False])
def test_starting_a_driver_twice_enqueues_nothing_twice(lite: Database, static: bool) -> None:
    session = bench_session(lite)
    if static:
        search = new_search(lite, session)
    else:
        search = new_search(lite, session, space=BISECT, searcher=BISECT_SEARCHER, base={"b": 10})
    SearchDriver(lite, search).start()
    first = [(r.seq, r.point) for r in runs(lite, search)]
    SearchDriver(lite, search).start()
    assert [(r.seq, r.point) for r in runs(lite, search)] == first
    assert len(first) == (6 if static else 1)


def in_flight(db: Database, search: int) -> list[int]:
    return [r.seq for r in runs(db, search) if r.valid is None]


def work(db: Database, session: int, jobs: int | None = None) -> None:
    """Run the jobs ready now (at most ``jobs``: builds count), with no driver running."""
    run_worker(db, session, "eval", until_empty=True, max_jobs=jobs, handle_signals=False)


def test_parallelism_bounds_a_rounds_searchers_points_in_flight(lite: Database) -> None:
    session = bench_session(lite)
    search = new_search(lite, session, space=ROUNDS, base={"b": 10}, parallelism=2)
    driver = SearchDriver(lite, search)
    assert driver.tick()
    assert in_flight(lite, search) == [0, 1]  # 2 of the round's 3 points
    work(lite, session, 2)  # the build, then seq 0
    assert driver.tick()
    # one landed: the round's third point goes out; the round is not complete yet
    assert in_flight(lite, search) == [1, 2]
    work(lite, session, 2)
    assert driver.tick()
    assert in_flight(lite, search) == [3, 4]  # the next round, above the first's best (3)
    assert [r.config["a"] for r in runs(lite, search)] == [1, 2, 3, 4, 5]
    while driver.tick():
        work(lite, session)
    assert search_state(lite, search) == ("done", None)
    assert [(r.seq, r.config["a"]) for r in runs(lite, search)] == [(i, i + 1) for i in range(12)]


@pytest.mark.parametrize("parallelism", [1, 3])
def test_a_plain_dynamic_searcher_has_one_point_in_flight_whatever_the_parallelism(
    lite: Database, parallelism: int
) -> None:
    session = bench_session(lite)
    search = new_search(
        lite, session, space=BISECT, searcher=BISECT_SEARCHER, base={"b": 10},
        parallelism=parallelism,
    )  # fmt: skip
    driver = SearchDriver(lite, search)
    driver.tick()
    assert in_flight(lite, search) == [0]  # Bisect needs each Run before its next point


def test_a_budget_cuts_the_round_in_flight(lite: Database) -> None:
    session = bench_session(lite)
    search = new_search(lite, session, space=ROUNDS, base={"b": 10}, parallelism=3, budget=5)
    driver = SearchDriver(lite, search)
    while driver.tick():
        work(lite, session)
    assert search_state(lite, search) == ("done", None)
    assert [r.config["a"] for r in runs(lite, search)] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("landed", [0, 1, 2])
def test_a_resumed_round_awaits_its_runs_and_enqueues_the_rest(lite: Database, landed: int) -> None:
    session = bench_session(lite)
    search = new_search(lite, session, space=ROUNDS, base={"b": 10}, parallelism=2)
    first = SearchDriver(lite, search)
    first.tick()  # seq 0 and 1 in flight
    if landed:
        work(lite, session, 1 + landed)
    second = SearchDriver(lite, search)  # the first one died here
    second.tick()
    assert len(runs(lite, search)) == 2 + (landed > 0)  # landed: the round's third goes out
    assert in_flight(lite, search) == [s for s in (0, 1, 2) if s >= landed][:2]
    while second.tick():
        work(lite, session)
    assert [(r.seq, r.config["a"]) for r in runs(lite, search)] == [(i, i + 1) for i in range(12)]
