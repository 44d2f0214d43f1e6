"""The one installer of a worker's stop-signal handlers (the loop's and run_stages')."""

from __future__ import annotations

import signal
import threading

import pytest

from tuna.worker.signals import STOP_SIGNALS, on_stop_signals


def handler(_signum, _frame):
    pass


def test_the_handler_answers_both_signals_inside_and_the_old_ones_come_back_after():
    before = [signal.getsignal(s) for s in STOP_SIGNALS]
    with pytest.raises(RuntimeError), on_stop_signals(handler):
        assert [signal.getsignal(s) for s in STOP_SIGNALS] == [handler, handler]
        raise RuntimeError("the block failed")
    assert [signal.getsignal(s) for s in STOP_SIGNALS] == before


def test_disabled_or_off_the_main_thread_it_installs_nothing():
    before = [signal.getsignal(s) for s in STOP_SIGNALS]
    seen = []

    def look():
        with on_stop_signals(handler):  # Python refuses handlers off the main thread
            seen.append([signal.getsignal(s) for s in STOP_SIGNALS])

    with on_stop_signals(handler, enabled=False):
        seen.append([signal.getsignal(s) for s in STOP_SIGNALS])
    thread = threading.Thread(target=look)
    thread.start()
    thread.join()
    assert seen == [before, before]
