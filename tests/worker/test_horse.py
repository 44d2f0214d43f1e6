"""The worker's time limit holds against native code (issue #25, section 5): a backend call
runs in a child the worker kills past ``--time-limit`` (``tuna/worker/horse.py``). A
SIGALRM, which the limit was before, runs its handler only once native code returns."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.support.seed import job_row, seed
from tuna.backends.base import (
    CompileOutcome,
    EvalOutcome,
    JobWork,
    Measurement,
    RunOutcome,
    SearchWork,
)
from tuna.backends.noop import NoopBackend
from tuna.db.models import Measurement as MeasurementRow
from tuna.worker import WorkerReport, run_worker
from tuna.worker.horse import run_in_horse

SPIN_C = "void spin(void) { volatile unsigned long i = 0; for (;;) i++; }\n"


@pytest.fixture(scope="module")
def spin_library(tmp_path_factory) -> Path:
    """A shared object whose ``spin()`` never returns (native code, no Python inside)."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("needs a C compiler (cc)")
    out = tmp_path_factory.mktemp("spin")
    (out / "spin.c").write_text(SPIN_C)
    subprocess.run(
        [cc, "-O0", "-shared", "-fPIC", "-o", out / "spin.so", out / "spin.c"], check=True
    )
    return out / "spin.so"


class SpinningBackend(NoopBackend):
    """Compiles by calling native code that never returns."""

    def __init__(self, library: Path) -> None:
        super().__init__()
        self.library = library

    def compile(self, work: JobWork) -> CompileOutcome:
        ctypes.CDLL(str(self.library)).spin()
        raise AssertionError("spin() returned")


class CrashingBackend(NoopBackend):
    """Compiles by reading address 0 (SIGSEGV in native code)."""

    def compile(self, work: JobWork) -> CompileOutcome:
        ctypes.string_at(0)
        raise AssertionError("survived reading address 0")


class SavingThenHangingBackend(NoopBackend):
    """Evaluates by saving one measurement through its checkpoint, then hanging."""

    def evaluate(self, work: JobWork) -> EvalOutcome:
        held = work.save_progress([Measurement("1,8", 1.5, True)])
        assert held
        time.sleep(60)
        return EvalOutcome.failed("woke up")


def run(db, session, phase, backend, **kw):
    return run_worker(
        db, session, phase, burst=True, handle_signals=False, idle_sleep=0.01, max_retries=0,
        backend=backend, **kw,
    )  # fmt: skip


def test_a_native_busy_loop_is_stopped_at_the_time_limit(lite, spin_library):
    sd = seed(lite, configs=1, solvers=["NoopDirect"])
    reports: list[WorkerReport] = []
    worker = threading.Thread(  # a daemon: the test fails, not hangs, if the loop is not stopped
        target=lambda: reports.append(
            run(lite, sd.session, "compile", SpinningBackend(spin_library), time_limit=0.5)
        ),
        daemon=True,
    )
    started = time.monotonic()
    worker.start()
    worker.join(timeout=30)
    took = time.monotonic() - started
    assert not worker.is_alive(), "the native busy loop ran past the time limit"
    (r,) = reports
    assert r.errored == 1 and r.stopped == "drained"
    reason = job_row(lite, sd.jobs[0]).reason
    assert reason == "TimeLimitExceeded: time limit of 0.5 s exceeded (gave up after 1 try)"
    assert took < 15, took


def test_a_crash_in_native_code_fails_the_job_not_the_worker(lite):
    sd = seed(lite, configs=2, solvers=["NoopDirect"])
    r = run(lite, sd.session, "compile", CrashingBackend(), time_limit=30)
    assert (r.errored, r.stopped) == (2, "drained")
    reason = job_row(lite, sd.jobs[0]).reason
    assert reason.startswith("BackendDied: the backend's process died: SIGSEGV"), reason


def test_what_the_child_raises_and_returns_reaches_the_worker_as_before(lite):
    sd = seed(lite, configs=2, solvers=["NoopDirect"])
    assert run(lite, sd.session, "compile", NoopBackend(), time_limit=30).done == 2
    assert run(lite, sd.session, "eval", NoopBackend(), time_limit=30).done == 2
    again = seed(lite, configs=1, solvers=["NoopDirect"])
    r = run(lite, again.session, "compile", NoopBackend(crash=True), time_limit=30)
    assert r.errored == 1
    reason = job_row(lite, again.jobs[0]).reason
    assert reason.startswith("RuntimeError: noop backend crashed on job"), reason


def test_a_checkpoint_in_the_child_is_saved_by_the_worker_before_the_kill(lite):
    sd = seed(lite, configs=1, solvers=["NoopTunable"])
    assert run(lite, sd.session, "compile", NoopBackend()).done == 1
    r = run(lite, sd.session, "eval", SavingThenHangingBackend(), time_limit=5, record_interval=0)
    assert r.errored == 1
    assert job_row(lite, sd.jobs[0]).reason.startswith("TimeLimitExceeded")
    with lite.session() as s:
        saved = s.execute(select(MeasurementRow.params, MeasurementRow.time_ms)).all()
    assert [tuple(m) for m in saved] == [("1,8", 1.5)]


def _report_twice(work: SearchWork) -> RunOutcome:
    """A run in the child: two intermediate values relayed, the answers in its stats."""
    assert work.report is not None
    answers = [work.report(step, value) for step, value in ((0, 5.0), (1, 9.0))]
    return RunOutcome(stats={"answers": answers, "pid": os.getpid()})


def test_a_search_run_s_reports_are_relayed_to_the_worker_and_answered() -> None:
    heard: list[tuple[int, float, int]] = []

    def report(step: int, value: float) -> str | None:
        heard.append((step, value, os.getpid()))
        return "pruned at step 1" if step == 1 else None

    work = SearchWork(job_id=1, attempt=1, step="run", search_id=1, spec={}, config={},
                      report=report)  # fmt: skip
    outcome = run_in_horse(_report_twice, work, 30.0)
    assert isinstance(outcome, RunOutcome)
    assert outcome.stats["answers"] == [None, "pruned at step 1"]
    assert heard == [(0, 5.0, os.getpid()), (1, 9.0, os.getpid())]  # judged in the worker
    assert outcome.stats["pid"] != os.getpid()  # run in the child
