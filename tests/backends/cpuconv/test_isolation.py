"""Crash isolation: a candidate that crashes or hangs costs that candidate, never the worker.

The bad candidates are real native code: a tiny C library, compiled here, whose functions
write through a null pointer (SIGSEGV), divide by zero (SIGFPE on x86) or loop forever. The
good ones are fakes that write the reference's output (they pass verification).
"""

from __future__ import annotations

import ctypes
import dataclasses
import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.backends.cpuconv.cases import conv, work
from tuna.backends.base import Measurement
from tuna.backends.cpuconv import CpuConvBackend, isolate, run
from tuna.backends.cpuconv import solvers as sv
from tuna.backends.finalists import RETIME_TURNS

P = conv(batchsize=1, in_channels=2, out_channels=2, in_size=(4, 4), fil_size=(1, 1))

BAD_C = r"""
void crash(float *a, float *b, float *out, float *ws) { *(volatile int *)0 = 1; }
void spin(float *a, float *b, float *out, float *ws) { for (;;) { __asm__ volatile(""); } }
void leave(float *a, float *b, float *out, float *ws) { __builtin_trap(); }
"""


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    d = tmp_path_factory.mktemp("bad")
    Path(d, "bad.c").write_text(BAD_C)
    subprocess.run(["cc", "-O0", "-shared", "-fPIC", "-o", "bad.so", "bad.c"], cwd=d, check=True)
    return ctypes.CDLL(str(d / "bad.so"))


def good(name: str) -> run.Candidate:
    _a, _b, expected = run.Reference.get().case(P)

    def fn(_a: object, _b: object, out: object, _ws: object) -> None:
        ctypes.memmove(out, expected, ctypes.sizeof(expected))

    return run.Candidate(name, fn, 0)


def native(lib: ctypes.CDLL, symbol: str) -> run.Candidate:
    return run.Candidate(symbol, run.kernel_fn(lib, symbol), 0)


def test_a_crashing_candidate_is_recorded_and_the_others_are_measured(bad: ctypes.CDLL) -> None:
    pid = os.getpid()
    cands = [good("g0"), native(bad, "crash"), good("g1"), native(bad, "leave"), good("g2")]
    results = isolate.measure_isolated(P, cands, repeats=2, limit_s=20)
    assert os.getpid() == pid  # still here
    assert [m.params for m in results] == ["g0", "crash", "g1", "leave", "g2"]
    assert [m.ok for m in results] == [True, False, True, False, True]
    assert results[1].reason == "crashed (SIGSEGV)"
    assert results[3].reason == "crashed (SIGILL)"  # __builtin_trap is ud2 on x86
    assert results[1].time_ms is None and results[1].error is None


def test_a_hanging_candidate_is_killed_after_the_limit(bad: ctypes.CDLL) -> None:
    cands = [good("g0"), native(bad, "spin"), good("g1")]
    results = isolate.measure_isolated(P, cands, repeats=2, limit_s=1.5)
    assert [m.ok for m in results] == [True, False, True]
    assert results[1].reason == "hung: killed after 1.5 s"


def test_the_results_are_those_of_measure_in_process() -> None:
    cands = [good("a"), good("b")]
    inside = run.measure(P, cands, repeats=2)
    apart = isolate.measure_isolated(P, cands, repeats=2)
    assert [(m.params, m.ok, m.runs, m.error) for m in apart] == [
        (m.params, m.ok, m.runs, m.error) for m in inside
    ]


def test_the_deadline_still_stops_the_measuring() -> None:
    with pytest.raises(run.TimeBudgetExceeded) as e:
        isolate.measure_isolated(P, [good("a"), good("b")], repeats=2, deadline=0.0)
    assert (e.value.done, e.value.total) == (0, 2)


def test_the_backend_evaluates_in_isolation(
    bad: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A perf job whose second candidate segfaults: the job still reports the fastest of
    the others, and the crash is only that candidate's (the log says what happened)."""
    p = conv(
        batchsize=1, in_channels=3, out_channels=4, in_size=(7, 9), fil_size=(3, 3), pad=(1, 1)
    )
    b = CpuConvBackend(opt="0", max_candidates=4)
    c = b.compile(work(p, sv.IM2COL, "perf"))
    assert c.ok, c.reason
    real = run.candidates
    crashed: list[str] = []

    def with_a_crash(*args: Any, **kw: Any) -> list[run.Candidate]:
        cands = real(*args, **kw)
        crashed.append(cands[1].params)
        return [
            cands[0],
            dataclasses.replace(native(bad, "crash"), params=cands[1].params),
            *cands[2:],
        ]

    monkeypatch.setattr(run, "candidates", with_a_crash)
    with caplog.at_level(logging.WARNING, logger="tuna.backends.cpuconv"):
        e = b.evaluate(
            work(p, sv.IM2COL, "perf", phase="eval", kernels=c.kernels, payload=c.payload)
        )
    assert e.ok, e.reason
    assert e.perf is not None and e.perf.params != crashed[0]
    assert f"{crashed[0]} (crashed (SIGSEGV))" in caplog.text
    # every candidate is a measurement, the crashed one saying what happened (and the 3
    # that passed are re-timed in turns before the winner is stored: issue #24)
    rows = {m.params: m for m in e.measurements[:4]}
    assert len(rows) == 4 and len(e.measurements) == 4 + 3 * RETIME_TURNS
    assert {m.params for m in e.measurements[4:]} == set(rows) - {crashed[0]}
    assert rows[crashed[0]] == Measurement(
        crashed[0], None, False, "crashed (SIGSEGV)", "random", budget=4
    )  # the 4 candidates cpuconv chose: its budget (e3d0dbf)
    assert all(m.valid and m.time_ms for p, m in rows.items() if p != crashed[0])


def test_each_result_is_handed_on_in_the_worker_as_it_arrives(bad: ctypes.CDLL) -> None:
    seen: list[tuple[str, int]] = []
    cands = [good("g0"), native(bad, "crash"), good("g1")]
    results = isolate.measure_isolated(
        P, cands, repeats=2, limit_s=20, on_measured=lambda m: seen.append((m.params, os.getpid()))
    )
    assert seen == [(m.params, os.getpid()) for m in results]
