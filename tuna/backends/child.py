"""Measuring in a forked child, the parts every backend that isolates its timing shares.

A backend that runs native code it compiled (cpuconv's C kernels, cuda's cubins) times each
candidate in a child forked for the purpose, so that a crash or a hang loses one candidate,
not the worker: see ``tuna.backends.cpuconv.isolate`` and ``tuna.backends.cuda.evaluate``.
"""

from __future__ import annotations

import os
import signal
import time


def reap_child(pid: int, grace_s: float = 5.0) -> str:
    """Wait for the child (killing it after ``grace_s``); how it ended, e.g. ``SIGSEGV`` or
    ``exit 3``."""
    deadline = time.monotonic() + grace_s
    while True:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got == pid:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.005)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit {code}"
