"""``tuna worker`` (the command lives in tuna/cli/worker.py)."""

from __future__ import annotations

import contextlib
import os
import re

from click.testing import CliRunner

from tests.support.seed import ALL_NOOP_SOLVERS, open_test_db, seed
from tuna.cli import main
from tuna.jobs import job_counts


def test_a_burst_worker_drains_a_phase_and_reports(sqlite_url, monkeypatch):
    monkeypatch.setenv("TUNA_DB_URL", sqlite_url)
    db = open_test_db(sqlite_url)
    sd = seed(db, configs=3, solvers=ALL_NOOP_SOLVERS)
    runner = CliRunner()
    for phase, summary in (
        (
            "compile",
            "12 claimed, 9 done, 0 retried, 0 errored, 3 not applicable, 0 lost, "
            "0 released, 0 reaped",
        ),
        (
            "eval",
            "9 claimed, 9 done, 0 retried, 0 errored, 0 not applicable, 0 lost, "
            "0 released, 0 reaped",
        ),
    ):
        result = runner.invoke(
            main,
            [
                "worker",
                "--session",
                str(sd.session),
                "--phase",
                phase,
                "--burst",
                "--claim-batch",
                "4",
            ],
        )
        assert result.exit_code == 0, result.output
        assert re.fullmatch(
            rf"worker \S+:\d+:[0-9a-f]{{8}} \({phase}, session {sd.session}\) stopped: drained; "
            rf"{summary}, in \d+\.\d s\n",
            result.output,
        ), result.output
    assert job_counts(db, sd.session).by_state["evaluated"] == 9
    db.dispose()


def test_an_unknown_session_is_an_error(sqlite_url, monkeypatch):
    monkeypatch.setenv("TUNA_DB_URL", sqlite_url)
    result = CliRunner().invoke(main, ["worker", "--session", "7", "--phase", "eval", "--burst"])
    assert (result.exit_code, result.output) == (
        1,
        "Error: session 7 does not exist; `tuna session list` shows the sessions\n",
    )


def test_help_has_examples():
    result = CliRunner().invoke(main, ["worker", "--help"])
    assert result.exit_code == 0
    assert "Examples:" in result.output
    assert "tuna worker --session 3 --phase compile" in result.output


def _forward(listener, target: tuple[str, int], stop) -> None:
    """A TCP forwarder from ``listener`` to ``target``: the database coming back."""
    import socket
    import threading

    def pump(a, b) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    listener.settimeout(0.2)
    while not stop.is_set():
        try:
            client, _ = listener.accept()
        except TimeoutError:
            continue
        upstream = socket.create_connection(target)
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


def test_a_worker_started_while_the_database_is_down_waits_for_it(mysql_url, tmp_path):
    """A worker starting during an outage rides it out (up to --outage-patience) with a
    clear line per try, as a running worker does, instead of exiting 1 at once."""
    import socket
    import subprocess
    import sys
    import threading

    from sqlalchemy.engine import make_url

    db = open_test_db(mysql_url)
    sd = seed(db, configs=2, solvers=ALL_NOOP_SOLVERS)
    db.dispose()
    real = make_url(mysql_url)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    down = real.set(host="127.0.0.1", port=listener.getsockname()[1])
    env = {**os.environ, "TUNA_DB_URL": down.render_as_string(hide_password=False)}
    cmd = [sys.executable, "-m", "tuna.cli", "worker", "--session", str(sd.session)]
    proc = subprocess.Popen(
        [*cmd, "--phase", "compile", "--burst"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    stop = threading.Event()
    forwarder: threading.Thread | None = None
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "database unreachable" in first and "MySQL error 2003" in first, first
        assert proc.poll() is None
        listener.listen()  # the database is back
        forwarder = threading.Thread(
            target=_forward, args=(listener, (real.host, real.port), stop), daemon=True
        )
        forwarder.start()
        out, _ = proc.communicate(timeout=120)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
        if forwarder is not None:  # out of accept() (0.2 s timeouts) before its socket closes
            forwarder.join(timeout=5)
        listener.close()
    assert proc.returncode == 0, first + out
    assert "stopped: drained; 8 claimed" in out and "Traceback" not in out
