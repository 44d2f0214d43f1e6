"""Racing in ``run.measure``: a candidate clearly slower than the best stops being timed;
the winner is always timed fully.

The candidates here are fakes named as such: Python functions that write the reference's
expected output (so they pass verification) and then wait a fixed time, so which one is
slower is known. ``prune`` is set out of the way: what is tested is racing alone.
"""

from __future__ import annotations

import ctypes
import time

import pytest

from tests.backends.cpuconv.cases import conv
from tuna.backends.cpuconv import run

# Timed: a 2 ms busy-wait stretched 20x by a loaded machine (load 18, nice 19) failed
# test_a_clearly_slower_candidate_after_the_best_is_raced once, as any timing test can.
pytestmark = pytest.mark.serial

P = conv(batchsize=1, in_channels=2, out_channels=2, in_size=(4, 4), fil_size=(1, 1))
FAST_S, SLOW_S = 0.002, 0.040  # 20x apart: far beyond any scheduling noise of a 2 ms run


def fake_kernel(seconds: float, ref: run.Reference):
    _a, _b, expected = ref.case(P)

    def fn(_a, _b, out, _ws) -> None:
        ctypes.memmove(out, expected, ctypes.sizeof(expected))
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            pass

    return fn


def measure(*seconds: float) -> list[run.Measured]:
    ref = run.Reference.get()
    cands = [run.Candidate(f"c{i}", fake_kernel(s, ref), 0) for i, s in enumerate(seconds)]
    return run.measure(P, cands, repeats=5, prune=1000.0, reference=ref)


def test_a_clearly_slower_candidate_after_the_best_is_raced():
    fast, slow = measure(FAST_S, SLOW_S)
    assert (fast.runs, fast.raced) == (5, False)
    assert slow.raced and slow.runs == 1
    assert slow.saved_ms >= 4 * SLOW_S * 1000 * 0.9  # four runs of about 40 ms skipped
    assert fast.time_ms is not None and slow.time_ms is not None
    assert slow.time_ms > fast.time_ms


def test_the_winner_is_always_timed_fully_even_when_it_comes_last():
    slow, fast = measure(SLOW_S, FAST_S)
    assert (slow.runs, slow.raced) == (5, False)  # nothing to race against yet
    assert (fast.runs, fast.raced) == (5, False)  # faster than the best: never stopped
    assert fast.saved_ms == 0


def test_only_what_is_slower_than_the_best_so_far_is_raced():
    first, best, loser = measure(SLOW_S, FAST_S, SLOW_S)
    assert not first.raced and not best.raced
    assert loser.raced  # raced against the new best, not the first
    chosen = min((m for m in (first, best, loser) if m.ok), key=lambda m: m.time_ms or 0)
    assert chosen is best
