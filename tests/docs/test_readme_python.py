"""The README's Python example, run as a user runs it: a script, Ctrl-C halfway, run again.

Issue #28's first "done when": the README's first example after the quick start is a short
Python script tuning a function; the same study resumes after Ctrl-C (nothing measured
twice) and shows in the dashboard.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.dashboard.conftest import dashboard_client
from tests.dashboard.test_app import cells
from tests.support.docs import page, section
from tests.support.wait import wait_until
from tuna.db import open_database

HEADING = "## A taste: a Python function, tuned"
DEADLINE_S = 120.0


def _example() -> tuple[str, str]:
    """The section's script and the line it says the script prints."""
    text = section("README.md", HEADING)
    code = re.search(r"```python\n(.*?)```", text, re.S)
    shown = re.search(r"It prints `([^`]+)`", text)
    assert code and shown, f"README.md {HEADING!r}: no Python block and 'It prints' line"
    return code.group(1), shown.group(1)


def _runs(db_file: Path) -> list[tuple[int, str, str]]:
    """(seq, point, finished) of every run recorded (not a trial claimed and still being
    measured), read without Tuna (no schema upgrade)."""
    if not db_file.exists():
        return []
    conn = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(
            "SELECT seq, point, finished FROM search_run WHERE valid IS NOT NULL ORDER BY seq"
        ).fetchall()
    except sqlite3.OperationalError:  # not made yet: the script is still creating it
        return []
    finally:
        conn.close()


def _start(script: Path, data: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "TUNA_DB_URL"}
    env["TUNA_DATA_DIR"] = str(data)
    return subprocess.Popen(
        [sys.executable, script.name],
        cwd=script.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_at_a_terminal,
    )


def _as_at_a_terminal() -> None:
    """Ctrl-C as a user's foreground script has it: a test run started as a background job
    (``bin/test &``, ``nohup``) inherits SIGINT ignored, and Python then keeps it ignored, so
    the signal the test sends would never land (three starts ran to the end in such a CI run)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_the_python_example_is_the_first_after_the_quick_start() -> None:
    headings = re.findall(r"^## .*$", page("README.md"), re.M)
    assert headings[headings.index("## Two commands") + 1] == HEADING
    code, _ = _example()
    lines = [line for line in code.splitlines() if line.strip()]
    assert "tuna.tune(" in code and len(lines) <= 10, f"{len(lines)} lines:\n{code}"


def test_the_example_resumes_after_ctrl_c_and_shows_in_the_dashboard(tmp_path: Path) -> None:
    code, shown = _example()
    script = tmp_path / "demo.py"
    script.write_text(code)
    # A loaded machine can let the 3 s script end before the Ctrl-C lands: then it is run
    # again from scratch (a fresh data folder), up to three times, and must be cut mid-run once.
    missed: list[str] = []  # what each start that ran to its end looked like, for the failure
    for attempt in range(3):
        data = tmp_path / f"data{attempt}"
        db_file = data / "tuna.db"
        started = time.monotonic()
        first = _start(script, data)

        def stored(first: subprocess.Popen[str] = first, db_file: Path = db_file) -> bool:
            assert first.poll() is None, f"the script ended before any run: {first.communicate()}"
            return bool(_runs(db_file))

        wait_until(stored, "the script's first run", timeout=DEADLINE_S, interval=0.02)
        seen = time.monotonic() - started
        first.send_signal(signal.SIGINT)  # Ctrl-C, halfway: the objective sleeps 0.5 s a call
        out, err = first.communicate(timeout=DEADLINE_S)
        before = _runs(db_file)
        if len(before) == 6:  # every run was measured before the signal landed
            missed.append(
                f"start {attempt + 1}: first run seen at {seen:.2f} s, signal sent, script ended "
                f"at {time.monotonic() - started:.2f} s with {first.returncode}; runs finished "
                f"{[f for _, _, f in before]}; stderr {err[-300:]!r}"
            )
            continue
        assert first.returncode != 0 and "KeyboardInterrupt" in err, (first.returncode, out, err)
        assert 1 <= len(before) < 6, f"Ctrl-C did not land mid-run: {len(before)} runs stored"
        break
    else:
        raise AssertionError("three starts ran to the end despite Ctrl-C:\n" + "\n".join(missed))

    again = _start(script, data)
    out, err = again.communicate(timeout=DEADLINE_S)
    assert again.returncode == 0, err
    assert out.strip() == shown  # the README's line, from the resumed study
    after = _runs(db_file)
    assert after[: len(before)] == before  # the runs of the first start were kept, not redone
    assert [seq for seq, _, _ in after] == list(range(6))
    assert len({point for _, point, _ in after}) == 6  # no point measured twice

    db = open_database(f"sqlite:///{db_file}")
    try:
        with dashboard_client(db) as (client, _ro):
            listed = client.get("/searches")
            assert listed.status_code == 200
            rows = {c[1]: c for c in cells(listed.text, "searches")}
            assert rows["demo"][1:3] == ["demo", "done"], rows
    finally:
        db.dispose()
