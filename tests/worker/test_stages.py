"""One worker process through several (session, phase) stages: the order, and the rule that
an evaluation starts only once every compile before it is drained."""

from __future__ import annotations

import threading

import pytest

from tests.support.seed import seed
from tuna.backends.base import CompileOutcome, JobWork
from tuna.backends.noop import NoopBackend
from tuna.db.enums import JobState
from tuna.jobs import job_counts
from tuna.jobs.values import Phase
from tuna.worker.stages import parse_stage, plan, run_stages

C, E = Phase.COMPILE, Phase.EVAL


def test_stages_are_written_session_colon_phase():
    assert parse_stage("3:eval") == (3, E)
    assert parse_stage("12:compile") == (12, C)
    for bad, why in (
        ("3", "SESSION:PHASE"),
        ("x:eval", "SESSION:PHASE"),
        ("3:run", "compile or eval"),
    ):
        with pytest.raises(ValueError, match=why):
            parse_stage(bad)


@pytest.mark.parametrize(
    ("stages", "expected"),
    [
        ([(1, C)], [((1, C), "drained")]),
        ([(1, E)], [((1, E), "drained")]),
        ([(1, C), (1, E)], [((1, C), "drained"), ((1, E), "drained")]),
        # compiles move on when nothing is ready; before the evaluation the earlier one is
        # drained again (its last jobs may have been in flight on another worker)
        (
            [(1, C), (2, C), (1, E), (2, E)],
            [((1, C), "empty"), ((2, C), "drained"), ((1, C), "drain"), ((1, E), "drained"),
             ((2, E), "drained")],
        ),
        ([(1, C), (2, C)], [((1, C), "empty"), ((2, C), "drained")]),
    ],
)  # fmt: skip
def test_the_plan_drains_every_compile_before_an_evaluation(stages, expected):
    assert plan(stages) == expected


class _Watching(NoopBackend):
    """Records, at each evaluation, how many jobs of either session still wait to compile."""

    def __init__(self, db, sessions) -> None:
        super().__init__()
        self.db, self.sessions = db, sessions
        self.compiling_at_eval: list[int] = []

    def evaluate(self, work: JobWork):
        busy = 0
        for s in self.sessions:
            c = job_counts(self.db, s).by_state
            busy += c[JobState.NEW] + c[JobState.COMPILE_START]
        self.compiling_at_eval.append(busy)
        return super().evaluate(work)


def test_one_worker_compiles_both_sessions_then_evaluates_both(lite, monkeypatch):
    a = seed(lite, configs=3, solvers=["NoopDirect"])
    b = seed(lite, configs=2, solvers=["NoopDirect"])
    backend = _Watching(lite, [a.session, b.session])
    monkeypatch.setattr("tuna.worker.loop.get_backend", lambda _name: backend)
    reports = run_stages(
        lite,
        [(a.session, C), (b.session, C), (a.session, E), (b.session, E)],
        handle_signals=False,
    )
    assert [(r.session, r.phase, r.done, r.stopped) for r in reports] == [
        (a.session, C, 3, "empty"),
        (b.session, C, 2, "drained"),
        (a.session, E, 3, "drained"),
        (b.session, E, 2, "drained"),
    ]
    assert backend.compiling_at_eval == [0] * 5
    for s in (a.session, b.session):
        assert {st for st, n in job_counts(lite, s).by_state.items() if n} == {JobState.EVALUATED}


class _Stops(NoopBackend):
    def __init__(self, stop: threading.Event) -> None:
        super().__init__()
        self.stop = stop

    def compile(self, work: JobWork) -> CompileOutcome:
        self.stop.set()  # as a SIGTERM during the first job would
        return super().compile(work)


def test_a_stop_ends_the_current_stage_and_every_later_one(lite, monkeypatch):
    a = seed(lite, configs=2, solvers=["NoopDirect"])
    stop = threading.Event()
    monkeypatch.setattr("tuna.worker.loop.get_backend", lambda _name: _Stops(stop))
    reports = run_stages(lite, [(a.session, C), (a.session, E)], stop=stop, handle_signals=False)
    assert [(r.phase, r.done, r.stopped) for r in reports] == [(C, 1, "signal")]
    assert job_counts(lite, a.session).by_state[JobState.COMPILED] == 1
