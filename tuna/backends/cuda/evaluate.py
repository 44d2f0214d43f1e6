"""The evaluate phase: candidates verified and timed on the GPU, in a child process.

A CUDA context does not survive a fork and a faulting kernel poisons its context, so the
worker never touches CUDA itself: :func:`measure_isolated` forks a child *before any CUDA
call* (as rq runs a job in a work-horse), which opens the GPU (fills the problem's buffers,
computes the reference there), then for each candidate loads its cubin, runs it once,
compares the output with the reference, and only if it is right warms it up and times it
(the median of ``repeats`` runs, CUDA events). It reports over a pipe before each
candidate and with each result:

* the child **dies** (a fault: the driver kills the context, or a signal): the candidate it
  had started is recorded ``crashed (...)`` and a new child goes on from the next one;
* **no word** for ``limit_s`` seconds: it is killed and the candidate recorded ``hung``;
* the child cannot open the GPU, or the cubins are for another architecture or from a
  compiler newer than the driver accepts: :class:`EvaluationRefusedError` with that reason,
  before any candidate runs.

:func:`probe` gets the GPU's facts the same way. The device is made by a factory (the real
:class:`~tuna.backends.cuda.device.Gpu`, or :class:`~tuna.backends.cuda.fake.FakeGpu` in
the tests), called in the child.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import signal
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any, Protocol

from tuna.backends.child import reap_child
from tuna.backends.cuda.device import DeviceError, GpuFacts, Timing, refusal
from tuna.errors import BackendError, TunaError

_PR_SET_PDEATHSIG = 1


class EvaluationRefusedError(BackendError):
    """Raised when the evaluation cannot start: no GPU or driver, or cubins it must refuse."""


class Device(Protocol):
    facts: GpuFacts

    def measure(
        self,
        cubin: bytes,
        solver: str,
        params: str,
        *,
        repeats: int,
        warmup_ms: float,
        tolerance: float,
    ) -> Timing: ...


DeviceFactory = Callable[[], Device]


@dataclass(frozen=True)
class Item:
    """One candidate to measure: its parameters and cubin."""

    params: str
    cubin: bytes


@dataclass(frozen=True)
class Measured:
    """A candidate's result: its median time when right, else why not (``error`` is its
    largest relative error when it was verified)."""

    params: str
    time_ms: float | None
    error: float | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.time_ms is not None


@dataclass(frozen=True)
class How:
    """What the child needs besides the candidates (all picklable or inherited by fork)."""

    solver: str
    arch: str
    compiler: str
    compiler_version: tuple[int, int]
    repeats: int
    warmup_ms: float
    tolerance: float


def measure_isolated(
    open_device: DeviceFactory,
    items: Sequence[Item],
    how: How,
    *,
    limit_s: float,
    on_measured: Callable[[Measured], object] | None = None,
) -> list[Measured]:
    """Every item measured, in order (see the module docstring)."""
    note = on_measured or (lambda m: None)
    results: list[Measured] = []
    while len(results) < len(items):
        done, failure = _horse(open_device, items, len(results), how, limit_s, note)
        results += done
        if failure is not None:
            results.append(Measured(items[len(results)].params, None, None, failure))
            note(results[-1])
    return results


def probe(open_facts: Callable[[], GpuFacts], limit_s: float = 60.0) -> GpuFacts | str:
    """The GPU's facts read in a child process, or why they could not be (one line)."""
    reader, writer = Pipe(duplex=False)
    pid = os.fork()
    if pid == 0:
        reader.close()
        code = 0
        try:
            _child_setup()
            writer.send(("facts", open_facts()))
        except TunaError as e:
            writer.send(("fatal", str(e)))
        except BaseException as e:
            code = 1
            with contextlib.suppress(Exception):
                writer.send(("fatal", f"{type(e).__name__}: {e}"))
        finally:
            os._exit(code)
    writer.close()
    try:
        if not reader.poll(limit_s):
            os.kill(pid, signal.SIGKILL)
            return f"reading the GPU's facts hung for {limit_s:g} s"
        try:
            kind, value = reader.recv()
        except (EOFError, OSError):
            return f"reading the GPU's facts crashed ({reap_child(pid)})"
        return value if kind == "facts" else str(value)
    finally:
        reader.close()
        with contextlib.suppress(ChildProcessError):
            reap_child(pid)


def _horse(
    open_device: DeviceFactory,
    items: Sequence[Item],
    start: int,
    how: How,
    limit_s: float,
    note: Callable[[Measured], object],
) -> tuple[list[Measured], str | None]:
    reader, writer = Pipe(duplex=False)
    pid = os.fork()
    if pid == 0:
        reader.close()
        _child(writer, open_device, items[start:], how)
    writer.close()
    done: list[Measured] = []
    started = False
    try:
        while True:
            if not reader.poll(limit_s):
                os.kill(pid, signal.SIGKILL)
                reap_child(pid)
                if not started:
                    raise EvaluationRefusedError(f"opening the GPU hung for {limit_s:g} s")
                return done, f"hung: killed after {limit_s:g} s"
            try:
                message = reader.recv()
            except (EOFError, OSError):
                status = reap_child(pid)
                if not started:
                    raise EvaluationRefusedError(
                        f"the measuring child process died before any candidate ({status})"
                    ) from None
                return done, f"crashed ({status})"
            kind = message[0]
            if kind == "start":
                started = True
            elif kind == "result":
                done.append(message[1])
                note(message[1])
            elif kind == "lost":  # the candidate faulted: the context is gone with the child
                reap_child(pid)
                return done, message[1]
            elif kind == "fatal":
                reap_child(pid)
                raise EvaluationRefusedError(message[1])
            elif kind == "end":
                reap_child(pid)
                return done, None
    finally:
        reader.close()


def _child_setup() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    faulthandler.disable()  # a crash is reported by the parent, not dumped here


def _child(writer: Connection, open_device: DeviceFactory, items: Sequence[Item], how: How) -> None:
    code = 0
    try:
        _child_setup()
        try:
            device = open_device()
        except TunaError as e:
            writer.send(("fatal", str(e)))
            return
        why = refusal(device.facts, how.arch, how.compiler, how.compiler_version)
        if why is not None:
            writer.send(("fatal", why))
            return
        for item in items:
            writer.send(("start", item.params))
            try:
                timing = device.measure(
                    item.cubin, how.solver, item.params, repeats=how.repeats,
                    warmup_ms=how.warmup_ms, tolerance=how.tolerance,
                )  # fmt: skip
            except DeviceError as e:
                writer.send(("lost", f"failed on the GPU ({e.code})"))
                return
            writer.send(("result", _result(item.params, timing, how.tolerance)))
        writer.send(("end",))
    except BaseException:
        code = 1
        with contextlib.suppress(Exception):
            writer.send(("fatal", traceback.format_exc(limit=3)))
    finally:
        with contextlib.suppress(Exception):
            writer.close()
        os._exit(code)


def _result(params: str, timing: Timing, tolerance: float) -> Measured:
    if not timing.error <= tolerance or not timing.times_ms:
        return Measured(params, None, timing.error, "verification failed")
    return Measured(params, timing.median_ms, timing.error)


def describe(facts: GpuFacts | str) -> dict[str, Any]:
    """Facts for a platform document (or the reason there are none)."""
    return facts.as_json() if isinstance(facts, GpuFacts) else {"unavailable": facts}
