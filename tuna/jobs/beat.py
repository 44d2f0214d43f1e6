"""A heartbeat's thread: what keeps a lease alive (a worker's jobs, a study's trial claims)
calls its beat from a daemon thread of its own, each ``interval`` seconds, until stopped.
A beat that fails (the database is down) is one warning line, its traceback at debug
level, and the next beat comes as usual: the lease has slack for a missed one."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from tuna.db.engine import one_line_error


class Beat:
    """Calls ``beat`` each ``interval`` seconds from its own thread until :meth:`stop`;
    ``subject`` starts its log lines, written to ``log``."""

    def __init__(self, beat: Callable[[], object], interval: float, subject: str,
                 log: logging.Logger, name: str = "tuna-heartbeat") -> None:  # fmt: skip
        self.interval, self.subject = interval, subject
        self._beat, self._log = beat, log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.cancel()
        if self._thread.is_alive():
            self._thread.join()

    def cancel(self) -> None:
        """Stop beating without waiting for the thread (from any thread, a finalizer too)."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._beat()
            except Exception as e:  # the database may be back by the next beat
                # One line per beat (an outage fails every beat); the traceback at debug level.
                self._log.warning("%s: heartbeat failed (%s)", self.subject, one_line_error(e))
                self._log.debug("%s: heartbeat failed", self.subject, exc_info=True)
