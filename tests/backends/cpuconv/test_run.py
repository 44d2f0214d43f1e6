"""``run.measure``'s conditions for a fair timing: buffers on cache-line boundaries, and a
warm-up measured in milliseconds, not in runs (the kernels are fakes, named as such: they
count their calls)."""

from __future__ import annotations

import ctypes
import time

import pytest

from tests.backends.cpuconv.cases import conv
from tuna.backends.cpuconv import run

P = conv(batchsize=1, in_channels=2, out_channels=2, in_size=(4, 4), fil_size=(1, 1))


@pytest.mark.parametrize("n", [1, 3, 17, 1000, 300_000])
def test_buffers_start_on_a_cache_line_and_are_zeroed(n):
    buf = run.aligned_floats(n)
    assert ctypes.addressof(buf) % run.BUFFER_ALIGN == 0
    assert len(buf) == n and buf[0] == 0.0 and buf[n - 1] == 0.0


def test_the_reference_case_and_the_output_given_to_a_candidate_are_aligned():
    ref = run.Reference.get()
    a, b, expected = ref.case(P)
    seen: list[int] = []

    def fake_kernel(_a, _b, out, _ws) -> None:
        seen.append(ctypes.addressof(out))
        ctypes.memmove(out, expected, ctypes.sizeof(expected))

    run.measure(P, [run.Candidate("c0", fake_kernel, 0)], repeats=1, reference=ref)
    for buf in (a, b, expected):
        assert ctypes.addressof(buf) % run.BUFFER_ALIGN == 0
    assert seen and all(addr % run.BUFFER_ALIGN == 0 for addr in seen)


def test_each_candidate_warms_up_for_milliseconds_and_the_first_for_longer():
    ref = run.Reference.get()
    _a, _b, expected = ref.case(P)
    calls = {"c0": 0, "c1": 0}

    def fake_kernel(name):
        def fn(_a, _b, out, _ws) -> None:  # a fake: well under a millisecond a call
            calls[name] += 1
            ctypes.memmove(out, expected, ctypes.sizeof(expected))

        return fn

    cands = [run.Candidate(n, fake_kernel(n), 0) for n in calls]
    first, second = run.measure(P, cands, repeats=3, prune=1e9, reference=ref)
    assert (first.runs, second.runs) == (3, 3)
    # verification + warm-up + 3 timed runs: a call of well under a millisecond needs many
    # warm-up runs to fill WARM_UP_MS, and more still for the first candidate's longer one.
    assert calls["c1"] > 1 + 1 + 3
    assert calls["c0"] > calls["c1"]


def test_a_slow_candidate_warms_up_once():
    ref = run.Reference.get()
    _a, _b, expected = ref.case(P)
    calls = 0

    def fn(_a, _b, out, _ws) -> None:  # a fake kernel of 120 ms: past FIRST_WARM_UP_MS
        nonlocal calls
        calls += 1
        ctypes.memmove(out, expected, ctypes.sizeof(expected))
        deadline = time.perf_counter() + 0.120
        while time.perf_counter() < deadline:
            pass

    (m,) = run.measure(P, [run.Candidate("c0", fn, 0)], repeats=1, reference=ref)
    assert m.runs == 1
    assert calls == 3  # verification, one warm-up, one timed run


@pytest.mark.parametrize(("fastest", "expected"), [(False, 3.0), (True, 1.0)])
def test_a_re_timing_turn_keeps_the_fastest_run_where_a_first_pass_keeps_the_median(
    monkeypatch, fastest, expected
):
    """Issue #30: a busy machine only ever slows a run, so a finalist's re-timing turn counts
    its fastest run. The clock is a FAKE here: ``_time_ms`` returns scripted times (a
    warm-up of two 60 ms runs, then the five timed runs), so what is kept does not depend on
    this machine."""
    ref = run.Reference.get()
    _a, _b, expected_out = ref.case(P)
    script = iter([60.0, 60.0, 3.0, 1.0, 2.0, 5.0, 4.0])

    def fake_clock(fn, *args):  # the kernel still runs: verification needs its output
        fn(*args)
        return next(script)

    def fake_kernel(_a, _b, out, _ws) -> None:
        ctypes.memmove(out, expected_out, ctypes.sizeof(expected_out))

    monkeypatch.setattr(run, "_time_ms", fake_clock)
    (m,) = run.measure(
        P, [run.Candidate("c0", fake_kernel, 0)], repeats=5, reference=ref, fastest=fastest
    )
    assert (m.runs, m.time_ms) == (5, expected)
