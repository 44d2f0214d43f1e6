from __future__ import annotations

import re

import pytest

from tuna.cli import main
from tuna.fleet.quickstart import sample_lines


def test_quickstart_tunes_the_sample_end_to_end(runner, monkeypatch):
    """The README's first command, small: real kernels compiled and timed (cpuconv).

    One quick start on a database that already holds half the sample under the quick start's
    tag and a session (as after an earlier quick start, or a user's own import): it must add
    only the layers it lacks, number its sessions after the one there, and tune all four.
    (A second full quick start proved the re-run's "0 new" at twice the cost.)"""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # as on a terminal: box-drawn tables
    monkeypatch.setenv("NO_COLOR", "1")
    lines = [line for _, line in sample_lines()]
    for line in lines[:2]:
        pre = runner.invoke(main, ["import_configs", "-t", "quickstart", "-d", line])
        assert pre.exit_code == 0, pre.output
    pre = runner.invoke(main, ["session", "create", "--arch", "x", "--num-cu", "1",
                               "--backend", "noop", "-l", "earlier"])  # fmt: skip
    assert pre.exit_code == 0, pre.output
    result = runner.invoke(main, ["quickstart", "-w", "2", "--candidates", "3"])
    assert result.exit_code == 0, result.output
    out = result.stdout  # stderr holds the live progress table (its 'errored' row too)
    assert "4 problems tagged 'quickstart' (2 new); sessions 2 (tuned) and 3" in out
    for line in (
        "session 2 compile: compiled",
        "session 2 run_perf: evaluated",
        "session 3 compile: compiled",
        "session 3 run_find: evaluated",
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


@pytest.mark.parametrize(("spread", "said"), [(1.1, False), (2.0, True)])
def test_unstable_timings_are_said_next_to_the_figure(runner, monkeypatch, spread, said):
    """Issue #24: the geomean swung 8.8x-17.0x between runs with no word about it."""
    from types import SimpleNamespace

    import tuna.cli.quickstart as command
    from tuna.fleet.quickstart import QuickstartResult, QuickstartRow

    row = QuickstartRow("k", "CpuIm2colGemm", "1,1", 1.0, 8.0, 4.0)
    canned = QuickstartResult(SimpleNamespace(configs=1, inserted=1), 2, 3, [], [row], spread)  # type: ignore[arg-type]
    monkeypatch.setattr(command, "run_quickstart", lambda *a, **kw: canned)
    result = runner.invoke(main, ["quickstart", "-w", "1"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith("geometric mean"))
    assert line.startswith("geometric mean speed-up of tuning over default parameters: 4.00x")
    assert ("(timings unstable: a winner's repeated runs spread 2.00x" in line) is said


def test_the_figure_is_printed_with_the_range_of_its_turns(runner, monkeypatch):
    """Issue #30: the spread is shown beside the figure: the geomean of the problems' slowest
    re-timing turns and of their fastest (a turn's speed-up: default over tuned timing)."""
    from types import SimpleNamespace

    import tuna.cli.quickstart as command
    from tuna.fleet.quickstart import QuickstartResult, QuickstartRow

    rows = [
        QuickstartRow("k1", "CpuIm2colGemm", "1,1", 1.0, 8.0, 3.9, (4.0, 3.0, 5.0)),
        QuickstartRow("k2", "CpuGemm1x1", "2,2", 1.0, 8.0, 3.9, (5.0, 4.0, 3.0)),
    ]
    canned = QuickstartResult(SimpleNamespace(configs=2, inserted=2), 2, 3, [], rows)  # type: ignore[arg-type]
    monkeypatch.setattr(command, "run_quickstart", lambda *a, **kw: canned)
    result = runner.invoke(main, ["quickstart", "-w", "1"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith("geometric mean"))
    assert line.startswith(
        "geometric mean speed-up of tuning over default parameters: 4.00x, 3.00x-5.00x over 3 "
        "turns (each problem's fastest solver against the same solver with its defaults, "
        "timed in turns beside it)"
    ), line
