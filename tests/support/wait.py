"""Waiting for something a test started: poll a condition, fail loudly at the deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T], what: str, *, timeout: float = 60.0, interval: float = 0.05
) -> T:
    """Call ``condition`` until it returns something true, and return that.

    Raises :class:`AssertionError` naming ``what`` when ``timeout`` seconds pass first, so a
    wait never falls through into an assertion that then passes vacuously.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}")
        time.sleep(interval)
