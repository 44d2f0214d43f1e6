"""A job's lines found in the worker logs go_fish keeps (files written as workers write them)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from tuna.fleet.joblog import LINES, job_log, log_pattern
from tuna.fleet.phase import worker_log

CREATED = dt.datetime(2026, 11, 27, 20, 0, 0)  # the database's clock: UTC, naive


def write(log_dir: Path, phase: str, session: int, worker: str, text: str, at: dt.datetime) -> Path:
    path = worker_log(log_dir, phase, "cpu", "head", session, "20261127-200000-abcdef", worker)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = at.replace(tzinfo=dt.timezone.utc).timestamp()
    os.utime(path, (stamp, stamp))
    return path


def line(second: int, message: str, level: str = "INFO") -> str:
    when = (CREATED + dt.timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S")
    return f"{when},123 {level} tuna.worker.hooks: {message}\n"


def test_a_jobs_lines_from_every_phases_log_in_time_order_with_its_traceback(tmp_path):
    compiled = write(tmp_path, "compile", 3, "worker-0",
                     line(1, "job 5: compile CpuGemm attempt 1 ok in 0.100 s")
                     + line(2, "job 55: compile CpuGemm attempt 1 ok in 0.100 s")
                     + line(3, "job 15: compile CpuGemm attempt 1 ok in 0.100 s"),
                     CREATED + dt.timedelta(seconds=3))  # fmt: skip
    evaluated = write(tmp_path, "eval", 3, "worker-1",
                      line(4, "job 5: backend cpuconv raised", "WARNING")
                      + "Traceback (most recent call last):\n"
                      + '  File "x.py", line 1, in <module>\n'
                      + "RuntimeError: job 6: not me\n"
                      + line(5, "job 5: eval CpuGemm attempt 2 ok in 0.200 s")
                      + line(6, "job 7: eval CpuGemm attempt 1 ok in 0.200 s"),
                      CREATED + dt.timedelta(seconds=6))  # fmt: skip
    found = job_log(tmp_path, 5, CREATED)
    assert found.lines == [
        line(1, "job 5: compile CpuGemm attempt 1 ok in 0.100 s").rstrip("\n"),
        line(4, "job 5: backend cpuconv raised", "WARNING").rstrip("\n"),
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "RuntimeError: job 6: not me",
        line(5, "job 5: eval CpuGemm attempt 2 ok in 0.200 s").rstrip("\n"),
    ]
    assert found.files == sorted([compiled, evaluated]) and found.complete
    assert job_log(tmp_path, 6, CREATED).lines == []  # only quoted inside a traceback
    assert job_log(tmp_path, 55, CREATED).lines == [
        line(2, "job 55: compile CpuGemm attempt 1 ok in 0.100 s").rstrip("\n")
    ]
    assert found.where == log_pattern(tmp_path) and "session-<S>" in found.where


def test_files_last_written_before_the_job_existed_are_not_read(tmp_path):
    write(
        tmp_path,
        "compile",
        1,
        "worker-0",
        line(1, "job 9: compile X attempt 1 ok in 1 s"),
        CREATED - dt.timedelta(days=2),
    )  # fmt: skip (a job 9 of another database, long ago)
    assert job_log(tmp_path, 9, CREATED).lines == []
    assert len(job_log(tmp_path, 9, None).lines) == 1  # no creation time: every file
    assert job_log(tmp_path / "nowhere", 9, None).lines == []


def test_the_newest_files_first_within_a_byte_budget_and_the_last_lines_only(tmp_path):
    many = "".join(line(i, f"job 4: eval X attempt {i} failed: again") for i in range(100))
    write(tmp_path, "eval", 2, "worker-0", many, CREATED + dt.timedelta(minutes=5))
    older = write(tmp_path, "eval", 2, "worker-1", line(0, "job 4: compile X attempt 1 ok"),
                  CREATED + dt.timedelta(minutes=1))  # fmt: skip
    found = job_log(tmp_path, 4, CREATED)
    assert len(found.lines) == LINES and found.lines[-1].endswith("attempt 99 failed: again")
    cut = job_log(tmp_path, 4, CREATED, max_bytes=len(many))
    assert older not in cut.files and not cut.complete
    tail = job_log(tmp_path, 4, CREATED, max_bytes=len(many) // 2)  # the end of the newest
    assert tail.lines[-1].endswith("attempt 99 failed: again") and not tail.complete


def test_the_jobs_machine_and_session_are_read_first(tmp_path):
    """With a budget for one file, the job's own machine's file is the one read, though
    another machine's is newer."""
    text = line(1, "job 8: eval X attempt 1 ok in 1 s")
    mine = worker_log(tmp_path, "eval", "cpu", "node-7:2222", 4, "r1", "eval-gpu0")
    other = worker_log(tmp_path, "eval", "cpu", "node-1", 4, "r1", "eval-gpu0")
    for path, at in ((mine, 10), (other, 20)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        stamp = (CREATED + dt.timedelta(seconds=at)).replace(tzinfo=dt.timezone.utc).timestamp()
        os.utime(path, (stamp, stamp))
    budget = len(text)
    assert job_log(tmp_path, 8, CREATED, max_bytes=budget).files == [other]  # newest first
    assert job_log(tmp_path, 8, CREATED, host="node-7", session=4, max_bytes=budget).files == [mine]
    # its machine's file had the line: the others are not read at all (any budget)
    assert job_log(tmp_path, 8, CREATED, host="node-7").files == [mine]
    assert job_log(tmp_path, 8, CREATED, host="node-3").files == sorted([mine, other])
