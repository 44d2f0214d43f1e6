"""A job's backend call in a child process the worker can kill: the hard time limit.

A SIGALRM inside the worker cannot stop native code (a kernel loaded with ``ctypes``, a
library call that never returns): the handler runs only once the call gives the
interpreter back. So, as rq runs a job in a *work-horse*, :func:`run_in_horse` forks a
child that makes the backend call and sends its outcome back over a pipe; the worker waits
on the pipe with the deadline and kills the child (SIGKILL) past it. A child that dies
(a crash in native code) costs the job, not the worker.

The child never touches the database: a job's checkpoint (``JobWork.checkpoint``) is
relayed to the worker, which saves the measurements under its lease and answers whether
the job is still held; a search run's intermediate values (``SearchWork.report``) are
relayed the same way, the worker answering its pruner's verdict. The worker decides on
stop signals (the child ignores SIGINT and SIGTERM; a second Ctrl-C kills it) and the
child dies with the worker
(``PR_SET_PDEATHSIG``). What the backend caches in the child is lost with it: each job
starts from the worker's state.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import faulthandler
import logging
import os
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any

from tuna.backends.base import JobWork, Measurement, Outcome, SearchWork
from tuna.errors import TunaError

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


class TimeLimitExceeded(TunaError):
    """Raised when a job's backend call ran past the worker's time limit (it was killed)."""


class BackendDied(TunaError):
    """Raised when the child making a job's backend call died without an answer (a signal,
    an exit): the job's failure, not the worker's."""


def run_in_horse(
    step: Callable[[Any], Outcome], work: JobWork | SearchWork, limit_s: float
) -> Outcome:
    """``step(work)`` in a forked child, killed after ``limit_s`` seconds (see the module
    docstring). Raises :class:`TimeLimitExceeded` past the limit, :class:`BackendDied` when
    the child died, and what ``step`` raised, as it raised it."""
    mine, theirs = Pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; what it does comes back over the pipe
        mine.close()
        _child(step, work, theirs)
    theirs.close()
    try:
        return _wait(pid, mine, work, limit_s)
    finally:
        mine.close()
        try:
            running = os.waitpid(pid, os.WNOHANG)[0] == 0
        except ChildProcessError:  # reaped by _wait (it died)
            running = False
        if running:  # past the limit, or the worker is stopping (a second Ctrl-C)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def _wait(pid: int, pipe: Connection, work: JobWork | SearchWork, limit_s: float) -> Outcome:
    deadline = time.monotonic() + limit_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not pipe.poll(left):
            raise TimeLimitExceeded(f"time limit of {limit_s:g} s exceeded")
        try:
            kind, value = pipe.recv()
        except EOFError:
            raise BackendDied(f"the backend's process died: {_status(pid)}") from None
        if kind == "checkpoint":
            pipe.send(isinstance(work, JobWork) and work.save_progress(value))
        elif kind == "report":
            report = work.report if isinstance(work, SearchWork) else None
            pipe.send(report(*value) if report is not None else None)
        elif kind == "outcome":
            return value
        else:
            error, where = value
            log.debug("job %d: the backend raised in the worker's child:\n%s", work.job_id, where)
            raise error


def _child(step: Callable[[Any], Outcome], work: JobWork | SearchWork, pipe: Connection) -> None:
    code = 0
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        faulthandler.disable()  # a crash is the worker's to report (BackendDied)
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if isinstance(work, JobWork) and work.checkpoint is not None:

            def relay(measurements: Sequence[Measurement]) -> bool:
                pipe.send(("checkpoint", list(measurements)))
                return bool(pipe.recv())

            work = dataclasses.replace(work, checkpoint=relay)
        if isinstance(work, SearchWork) and work.report is not None:

            def report(step: int, value: float) -> str | None:
                pipe.send(("report", (step, value)))
                answer = pipe.recv()
                return None if answer is None else str(answer)

            work = dataclasses.replace(work, report=report)
        try:
            pipe.send(("outcome", step(work)))
        except Exception as e:
            where = traceback.format_exc()
            try:
                pipe.send(("raised", (e, where)))
            except Exception:  # an exception that does not pickle
                pipe.send(("raised", (RuntimeError(f"{type(e).__name__}: {e}"), where)))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _status(pid: int) -> str:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return "unknown status"
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    return f"exit status {os.WEXITSTATUS(status)}"
