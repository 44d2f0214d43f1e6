from __future__ import annotations

import re

from tuna.cli import main


def test_quickstart_tunes_the_sample_end_to_end(runner, monkeypatch):
    """The README's first command, small: real kernels compiled and timed (cpuconv)."""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # as on a terminal: box-drawn tables
    monkeypatch.setenv("NO_COLOR", "1")
    result = runner.invoke(main, ["quickstart", "-w", "2", "--candidates", "3"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "4 problems tagged 'quickstart' (4 new); sessions 1 (tuned) and 2" in out
    for line in (
        "session 1 compile: compiled",
        "session 1 run_perf: evaluated",
        "session 2 compile: compiled",
        "session 2 run_find: evaluated",
    ):
        assert line in out, line
    assert "errored" not in out
    rows = re.findall(r"│ (\S+-NCHW-FP32-F) +│ (Cpu\w+) +│ (\S+) +│ +([\d.]+) │ +([\d.]+)x │", out)
    assert [r[0] for r in rows] == [
        "1024-14-14-1x1-256-14-14-1-0x0-1x1-1x1-0-NCHW-FP32-F",
        "256-14-14-3x3-256-14-14-1-1x1-1x1-1x1-0-NCHW-FP32-F",
        "64-56-56-3x3-64-56-56-1-1x1-1x1-1x1-0-NCHW-FP32-F",
        "512-28-28-1x1-128-28-28-1-0x0-1x1-1x1-0-NCHW-FP32-F",
    ]
    for _key, _solver, _params, ms, vs_naive in rows:
        assert float(ms) > 0
        assert float(vs_naive) >= 1.0  # the fastest is never slower than the naive solver
    assert "geometric mean speed-up of tuning over default parameters" in out
    again = runner.invoke(main, ["quickstart", "-w", "2", "--candidates", "3"])
    assert again.exit_code == 0, again.output
    assert "(0 new); sessions 3 (tuned) and 4" in again.output
