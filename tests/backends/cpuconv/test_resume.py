"""A cpuconv perf job whose evaluation worker is killed midway resumes from its measurements:
nothing measured twice (issue #17, "Resume").

The evaluation worker runs in a child process that is SIGKILLed right after its third
checkpoint committed (the checkpoint is wrapped to kill its own process there: a real kill
at a point the test chooses, not a race with a timer). The job's lease is then expired, and
a second worker reaps, claims and finishes it.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
from sqlalchemy import func, select

from tests.worker.procs import CTX, join_all
from tuna.backends.finalists import FINALISTS, RETIME_TURNS
from tuna.catalog.importer import import_configs, read_lines
from tuna.db import Database, open_database
from tuna.db.enums import JobState
from tuna.db.models import Job, Measurement, MeasurementEffort, PerfDb
from tuna.jobs.load import load_jobs
from tuna.sessions import SessionSpec, create_session
from tuna.worker import run_worker

pytestmark = pytest.mark.usefixtures("own_lock_dir")

LINE = "MIOpenDriver conv -n 1 -c 8 -H 10 -W 10 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1\n"
ENV = {
    "CPUCONV_MAX_CANDIDATES": "10",
    "CPUCONV_OPT": "1",
    "CPUCONV_REPEATS": "1",
    "CPUCONV_PER_UNIT": "10",
}
KILL_AFTER_SAVES = 3
KW = dict(burst=True, handle_signals=False, idle_sleep=0.01, record_interval=0.0)


def _killed_after_saves(url: str, session: int) -> None:
    """A burst evaluation worker that SIGKILLs itself after its third saved checkpoint."""
    import tuna.worker.loop as loop

    real, saves = loop.save_progress, []

    def save_then_maybe_die(*args, **kw):  # type: ignore[no-untyped-def]
        held = real(*args, **kw)
        saves.append(held)
        if len(saves) == KILL_AFTER_SAVES:
            os.kill(os.getpid(), signal.SIGKILL)
        return held

    loop.save_progress = save_then_maybe_die  # type: ignore[assignment]
    db = open_database(url)
    run_worker(db, session, "eval", **KW)


def _rows(db: Database, session: int) -> list[tuple[str, bool]]:
    with db.session() as s:
        q = select(Measurement.params, Measurement.valid).where(Measurement.session == session)
        return [tuple(r) for r in s.execute(q.order_by(Measurement.id))]


def test_a_perf_job_killed_midway_resumes_without_measuring_anything_twice(db):
    import_configs(db, read_lines(LINE), tag="one")
    session = create_session(
        db, SessionSpec(arch="cpu", num_cu=2, backend="cpuconv", environment=ENV)
    ).id
    assert load_jobs(db, session, step="perf", tag="one", solvers=["CpuDirectTiled"]).inserted == 1
    assert run_worker(db, session, "compile", **KW).done == 1
    with db.session() as s:
        job_id, payload = s.execute(select(Job.id, Job.result).where(Job.session == session)).one()
    candidates = len(json.loads(payload)["candidates"])
    assert candidates > KILL_AFTER_SAVES + 2  # some left to do after the kill

    url = db.url.render_as_string(hide_password=False)
    child = CTX.Process(target=_killed_after_saves, args=(url, session))
    child.start()
    assert join_all([child], timeout=300) == [-signal.SIGKILL]
    before = _rows(db, session)
    assert len(before) == KILL_AFTER_SAVES  # one candidate per save: saved, then killed
    with db.session() as s:
        assert s.scalar(select(Job.state).where(Job.id == job_id)) == JobState.EVAL_START

    from tests.support.seed import expire_leases

    expire_leases(db, [job_id])  # the dead worker's lease runs out
    resumed = run_worker(db, session, "eval", **KW)
    assert (resumed.reaped, resumed.done) == (1, 1)

    after = _rows(db, session)
    params = [p for p, _ in after]
    # every candidate measured once (none timed again on resume), then the finalists
    # re-timed in turns before the winner is stored (issue #24), the default parameters in
    # every turn beside them (issue #30: what tuning gained is timed side by side)
    assert len(set(params)) == candidates
    retimed = {p for p, _ in after[candidates:]}
    assert json.loads(payload)["default"] in retimed
    assert len(retimed) in (FINALISTS, FINALISTS + 1)
    assert len(after) == candidates + len(retimed) * RETIME_TURNS
    assert after[:KILL_AFTER_SAVES] == before
    with db.session() as s:
        assert s.scalar(select(Job.state).where(Job.id == job_id)) == JobState.EVALUATED
        best = s.scalar(select(PerfDb.params).where(PerfDb.session == session))
        fastest = s.scalar(
            select(Measurement.params)
            .where(Measurement.session == session, Measurement.valid)
            .order_by(Measurement.time_ms, Measurement.params)
            .limit(1)
        )
        assert s.scalar(select(func.count()).select_from(PerfDb)) == 1
    assert best == fastest  # the winner is chosen over the measurements of both runs
    with db.session() as s:  # the effort counts: every row, across kill and resume
        counts = s.execute(
            select(MeasurementEffort.measurements, MeasurementEffort.budget).where(
                MeasurementEffort.session == session
            )
        ).all()
    assert sum(n for n, _ in counts) == len(after)
    assert {b for _, b in counts} == {candidates}  # the candidates chosen: the budget
