"""The stop signals (SIGTERM, SIGINT) a worker process answers, installed for a block."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def on_stop_signals(
    handler: Callable[[int, FrameType | None], None], *, enabled: bool = True
) -> Iterator[None]:
    """Answer SIGTERM and SIGINT with ``handler`` inside the block; the handlers that were
    there before come back after it, however it ends. Does nothing unless ``enabled`` and
    on the main thread (the only one Python lets install a handler)."""
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
