"""Stress (issue #24): many strategy rounds of several searches of one (config, solver),
driven by one driver while two evaluate workers take the rounds in whatever order they
claim them (concurrent writers on MariaDB, serialised on SQLite); every Run holds its own
candidate's measurement and the stored winner is always the best measured.

The kernels are not built or timed: :class:`FakeTimedCpuConv` is a FAKE of cpuconv's
compile and evaluate (the real driver, strategies, queue, worker loop, record and round
filling run): each candidate's time comes from a seeded table, so what the Runs and the
stored rows must hold is known. A CI run once stored a hillclimb winner that was not the
best measured; the rounds here carry their seqs with their candidates (``search_build.params``).
"""

from __future__ import annotations

import json
import random
import threading
from typing import Any

import pytest
from sqlalchemy import select

from tests.searches.helpers import search_state
from tests.searches.test_strategy import SOLVER, cpuconv_session
from tests.support.wait import wait_until
from tuna.backends.base import (
    CompileOutcome,
    EvalOutcome,
    FindResult,
    JobWork,
    Measurement,
    Owns,
    PerfResult,
)
from tuna.backends.cpuconv import CpuConvBackend
from tuna.db import Database
from tuna.db.models import FindDb, PerfDb, SearchBuild, SearchRun
from tuna.db.models import Measurement as MeasurementRow
from tuna.searchers.strategies import StrategyOptions
from tuna.searches import SessionSearches
from tuna.searches.strategy import StrategyRequest, create_strategy_search
from tuna.worker import run_worker

pytestmark = pytest.mark.usefixtures("own_lock_dir")

NAMES = ("MR", "NV", "VW", "KC", "NT", "LO", "PB")


def fake_time(params: str) -> float:
    """A candidate's time (ms), fixed by its parameters: distinct, and in no order."""
    return round(0.5 + random.Random(params).random(), 6)


class FakeTimedCpuConv(CpuConvBackend):
    """A FAKE: cpuconv's solvers and spaces, with compile and evaluate replaced by a seeded
    table (nothing is built or timed). It reuses what ``work.measured`` holds, as cpuconv
    does, and a final job chooses the fastest of its candidates."""

    evaluation_owns = Owns.NOTHING

    def compile(self, work: JobWork) -> CompileOutcome:
        return CompileOutcome(payload=json.dumps({"candidates": list(work.candidates or ())}))

    def evaluate(self, work: JobWork) -> EvalOutcome:
        table = json.loads(work.payload or "{}")["candidates"]
        before = {m.params: m for m in work.measured if m.params in table}
        fresh = [
            Measurement(p, fake_time(p), True, None, work.strategy, work.budget)
            for p in table
            if p not in before
        ]
        if not work.choose:
            return EvalOutcome(measurements=tuple(fresh))
        measured = [*before.values(), *fresh]
        best = min((m for m in measured if m.valid), key=lambda m: (m.time_ms, m.params))
        assert best.time_ms is not None
        find = FindResult(best.time_ms, 0, "miopenConvolutionFwdAlgoDirect", best.params)
        return EvalOutcome(perf=PerfResult(best.params), find=find, measurements=tuple(fresh))


def test_many_rounds_of_several_searches_record_their_own_measurements_and_the_best(
    db: Database,
) -> None:
    session, config = cpuconv_session(db)
    searches = [
        create_strategy_search(
            db,
            StrategyRequest(
                session,
                config,
                SOLVER,
                StrategyOptions(strategy, budget=40, round_size=round_size, seed=seed),
                name=f"{strategy} {seed}",
            ),
        )
        for strategy, seed, round_size in (
            ("hillclimb", 1, 3),
            ("hillclimb", 2, 5),
            ("random", 1, 4),
            ("genetic", 3, 6),
        )
    ]
    stop = threading.Event()
    driver = SessionSearches(db, session)
    kw: dict[str, Any] = {"stop": stop, "handle_signals": False, "idle_sleep": 0.005}
    threads = [threading.Thread(target=driver.run, args=(stop,), kwargs={"poll_s": 0.005})]
    threads += [
        threading.Thread(
            target=run_worker,
            args=(db, session, "eval"),
            kwargs={**kw, "backend": FakeTimedCpuConv(), "claim_batch": n},
        )
        for n in (1, 2)
    ]
    for t in threads:
        t.start()
    try:
        wait_until(
            lambda: all(search_state(db, s)[0] != "active" for s in searches),
            "the searches to end",
            timeout=240,
        )
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert [search_state(db, s) for s in searches] == [("done", None)] * len(searches)
    with db.session() as s:
        run_rows = s.execute(
            select(SearchRun.search, SearchRun.point, SearchRun.value, SearchRun.valid)
        ).all()
        finals = dict(
            s.execute(
                select(SearchBuild.search, SearchBuild.params).where(
                    SearchBuild.build_key == "final"
                )
            ).all()
        )
        rounds = s.execute(select(SearchBuild.id).where(SearchBuild.build_key != "final")).all()
        measured = s.execute(
            select(MeasurementRow.params, MeasurementRow.time_ms).where(
                MeasurementRow.session == session
            )
        ).all()
        find = s.execute(select(FindDb.time_ms, FindDb.params)).one()
        perf = s.execute(select(PerfDb.params)).scalar_one()
    assert len(rounds) >= 30  # many rounds

    def text(r: Any) -> str:
        return ",".join(str(r.point[n]) for n in NAMES)

    # every Run holds its own candidate's measurement
    assert all(r.valid and r.value == fake_time(text(r)) for r in run_rows)
    # (two searches' rounds evaluated at once may both time a candidate: each reuses what was
    # measured when it was claimed)
    for search in searches:  # each search's best measured is among its finalists
        mine = [r for r in run_rows if r.search == search]
        best = min(mine, key=lambda r: r.value)
        assert text(best) in finals[search]["candidates"]
    fastest = min(measured, key=lambda m: m.time_ms)
    assert (find.time_ms, find.params, perf) == (fastest.time_ms, fastest.params, fastest.params)
