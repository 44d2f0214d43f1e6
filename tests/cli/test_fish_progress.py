"""What go_fish shows while a phase runs (tuna.cli.fish_progress), from made-up progress."""

from __future__ import annotations

from tuna.cli.fish_progress import _duration, progress_display, progress_line, progress_table
from tuna.db.enums import JobState
from tuna.fleet.phase import Progress, Task
from tuna.jobs.status import JobCounts


def _progress(**kw) -> Progress:
    counts = JobCounts(3, {JobState.NEW: 4, JobState.EVALUATED: 6, JobState.ERRORED: 0}, 0, [])
    return Progress(**{"counts": counts, "remaining": 4, "finished": 6, "elapsed_s": 3.0,
                       "workers_alive": 2, **kw})  # fmt: skip


def test_a_duration_reads_minutes_and_seconds_then_hours():
    assert [_duration(s) for s in (None, 0, 59.6, 61, 3600 * 2 + 5)] == [
        "?", "0:00", "1:00", "1:01", "2:00:05",
    ]  # fmt: skip


def test_the_progress_line_says_what_is_done_left_and_how_fast():
    line = progress_line(_progress(), Task.RUN_PERF)
    assert line.startswith("go_fish run_perf, session 3 [0:03]: new 4, evaluated 6; ")
    assert "6 done this run, 4 to go, 2.0 jobs/s, ETA 0:02, 2 worker(s)" in line
    search = progress_line(_progress(builds=1), Task.SEARCH)
    assert "1 build(s) and 3 run(s) to go" in search


def test_the_table_lists_each_state_and_its_caption_the_rate():
    table = progress_table(_progress(), Task.RUN_PERF)
    assert table.row_count == 3 and "2.0 jobs/s, ETA 0:02" in str(table.caption)


def test_off_a_terminal_progress_is_a_line_at_most_every_interval(capsys):
    live, show = progress_display(Task.RUN_PERF, every=10.0)
    with live:
        for elapsed in (0.0, 5.0, 10.0):
            show(_progress(elapsed_s=elapsed))
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("[")[1][:4] for line in lines] == ["0:00", "0:10"]
