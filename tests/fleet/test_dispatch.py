"""go_fish's dispatcher (tuna/fleet/dispatch.py): signals. The loop itself runs in
tests/fleet/test_local.py (local workers) and the cluster tier (containers)."""

from __future__ import annotations

import os
import signal

import pytest

from tuna.fleet.dispatch import Interrupted, stop_signals


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_the_first_stop_signal_interrupts_even_where_it_was_ignored(sig):
    before = signal.signal(sig, signal.SIG_IGN)  # as a background job inherits SIGINT
    try:
        events: list[str] = []
        with (
            pytest.raises(Interrupted, match=signal.Signals(sig).name),
            stop_signals(events.append),
        ):
            os.kill(os.getpid(), sig)
            pytest.fail("the signal did not interrupt")
        assert signal.getsignal(sig) == signal.SIG_IGN  # put back as it was
    finally:
        signal.signal(sig, before)


def test_once_stopping_a_signal_only_says_so_and_cannot_cut_the_clean_up_short():
    events: list[str] = []
    with stop_signals(events.append) as stopping:
        stopping.set()
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
    assert len(events) == 2 and all("already stopping" in e for e in events)
    assert events[0].startswith("SIGTERM") and events[1].startswith("SIGINT")
