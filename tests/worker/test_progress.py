"""An evaluation's checkpoint: saves every interval, only while held, each measurement once."""

from __future__ import annotations

from collections.abc import Sequence

from tuna.backends import EvalOutcome, FindResult
from tuna.backends.base import Measurement as M
from tuna.worker.progress import Progress


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Store:
    def __init__(self, held: bool = True, fail: int = 0) -> None:
        self.saved: list[list[M]] = []
        self.held, self.fail = held, fail

    def __call__(self, ms: Sequence[M]) -> bool:
        if self.fail:
            self.fail -= 1
            raise ConnectionError("database away")
        if self.held:
            self.saved.append(list(ms))
        return self.held


A, B, C = M("a", 1.0, True), M("b", 2.0, True), M("c", None, False, "crashed")


def test_measurements_are_saved_once_an_interval_has_passed_and_recorded_once():
    clock, store = _Clock(), _Store()
    progress = Progress(store, interval=5.0, clock=clock)
    assert progress([A])
    assert store.saved == []  # within the interval: kept for later
    clock.now = 5.0
    assert progress([B])
    assert store.saved == [[A, B]]
    progress([C])
    outcome = EvalOutcome(find=FindResult(1.0, 0, "x"), measurements=(A, B, C))
    assert progress.unsaved(outcome) == EvalOutcome(find=outcome.find, measurements=(C,))


def test_a_job_no_longer_held_saves_nothing_more_and_says_so():
    clock, store = _Clock(), _Store(held=False)
    progress = Progress(store, interval=0.0, clock=clock)
    assert not progress([A])
    assert not progress([B])
    lost = Progress(_Store(), interval=0.0, clock=clock, lost=lambda: True)
    assert not lost([A])
    failed = EvalOutcome.failed("x")
    assert progress.unsaved(failed) is failed


def test_a_failed_save_keeps_its_measurements_for_the_next_one():
    clock, store = _Clock(), _Store(fail=1)
    progress = Progress(store, interval=0.0, clock=clock)
    assert progress([A])  # the save raised: still held, A kept
    assert progress([B])
    assert store.saved == [[A, B]]
    assert progress.saves == 1
