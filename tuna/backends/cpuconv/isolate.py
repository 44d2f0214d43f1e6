"""Crash isolation: candidates run in a child process that the worker can kill.

A candidate is native code loaded with ``ctypes``: a bad one can crash (SIGSEGV, SIGILL,
SIGFPE...) or loop forever, and a SIGALRM cannot stop native code. So, as rq runs a job in
a *work-horse*, :func:`measure_isolated` forks a child that verifies and times the
candidates (:func:`tuna.backends.cpuconv.run.measure`, unchanged) and reports over a pipe
before each candidate and with each result. The worker waits on the pipe:

* the child **dies** (a signal, an exit): the candidate it had started is recorded as
  ``crashed (SIGSEGV)`` (or the exit status), and a new child goes on from the next one;
* **no word** for ``limit_s`` seconds: the child is killed (SIGKILL) and the candidate it
  had started is recorded as ``hung: killed after N s``; a new child goes on.

Only that candidate is lost; the worker, its lease and the other candidates are not. The
child inherits the loaded kernels and the reference data (fork, copy-on-write), touches
no lock of the worker's (no logging), and dies with the worker (PR_SET_PDEATHSIG).
Racing (:mod:`~tuna.backends.cpuconv.run`) starts afresh in a new child.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import signal
import traceback
from collections.abc import Callable, Sequence
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any

from tuna.backends.child import reap_child
from tuna.backends.cpuconv import run
from tuna.errors import BackendError
from tuna.problems.conv import ConvProblem


class IsolationError(BackendError):
    """Raised when the measuring child process fails before any candidate (not a candidate's
    fault: it could not start, or Python failed in it)."""


#: Seconds a candidate may run (verification, warm-up and timed runs) before it is killed.
DEFAULT_LIMIT_S = 30.0
_PR_SET_PDEATHSIG = 1


def measure_isolated(
    p: ConvProblem,
    candidates: Sequence[run.Candidate],
    *,
    limit_s: float = DEFAULT_LIMIT_S,
    on_measured: Callable[[run.Measured], object] | None = None,
    **how: Any,
) -> list[run.Measured]:
    """:func:`run.measure` of ``candidates`` in child processes (see the module docstring);
    raises :class:`run.TimeBudgetExceeded` as it does, counting every candidate.
    ``on_measured`` is called here, in the worker, with each result as it arrives (the
    backend's checkpoint)."""
    note = on_measured or (lambda m: None)
    results: list[run.Measured] = []
    if how.get("reference") is None:
        how["reference"] = run.Reference.get()
    how["reference"].case(p)  # the reference output, computed once here, inherited by children
    while len(results) < len(candidates):
        start = len(results)
        done, failure = _horse(p, candidates, start, limit_s, how, note)
        results += done
        if isinstance(failure, run.TimeBudgetExceeded):
            raise run.TimeBudgetExceeded(len(results), len(candidates), results)
        if failure is not None:
            results.append(run.Measured(candidates[len(results)].params, None, None, failure))
            note(results[-1])
    return results


def _horse(
    p: ConvProblem,
    candidates: Sequence[run.Candidate],
    start: int,
    limit_s: float,
    how: dict[str, Any],
    note: Callable[[run.Measured], object],
) -> tuple[list[run.Measured], str | run.TimeBudgetExceeded | None]:
    """Run ``candidates[start:]`` in one child: their results until it stopped, and why it
    stopped early (a crash or hang of the candidate after those, the deadline) or None."""
    reader, writer = Pipe(duplex=False)
    pid = os.fork()
    if pid == 0:  # the child: never returns
        reader.close()
        _child(writer, p, candidates[start:], how)
    writer.close()
    done: list[run.Measured] = []
    in_flight: int | None = None
    try:
        while True:
            if not reader.poll(limit_s):
                os.kill(pid, signal.SIGKILL)
                reap_child(pid)
                return done, f"hung: killed after {limit_s:g} s"
            try:
                message = reader.recv()
            except (EOFError, OSError):
                status = reap_child(pid)
                if in_flight is None:
                    raise IsolationError(
                        f"the measuring child process died before any candidate ({status})"
                    ) from None
                return done, f"crashed ({status})"
            kind = message[0]
            if kind == "result":
                done.append(message[1])
                note(message[1])
            elif kind == "start":
                in_flight = message[1]
            elif kind == "budget":
                reap_child(pid)
                return done, run.TimeBudgetExceeded(0, 0, [])
            elif kind == "error":
                reap_child(pid)
                raise IsolationError(f"the measuring child process failed: {message[1]}")
            elif kind == "end":
                reap_child(pid)
                return done, None
    finally:
        reader.close()


def _child(
    writer: Connection, p: ConvProblem, candidates: Sequence[run.Candidate], how: dict[str, Any]
) -> None:
    code = 0
    try:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        faulthandler.disable()  # a crash is reported by the parent, not dumped here
        sent = 0

        def starting(i: int, results: list[run.Measured]) -> None:
            nonlocal sent
            for m in results[sent:]:
                writer.send(("result", m))
            sent = len(results)
            writer.send(("start", i))

        try:
            results = run.measure(p, candidates, starting=starting, **how)
        except run.TimeBudgetExceeded as e:
            for m in e.measured[sent:]:
                writer.send(("result", m))
            writer.send(("budget",))
        else:
            for m in results[sent:]:
                writer.send(("result", m))
            writer.send(("end",))
    except BaseException:  # the child reports whatever it was and exits; never returns
        code = 1
        with contextlib.suppress(Exception):
            writer.send(("error", traceback.format_exc(limit=3)))
    finally:
        with contextlib.suppress(Exception):
            writer.close()
        os._exit(code)
