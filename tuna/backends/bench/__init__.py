"""The generic ``bench`` backend: any benchmark with a build and a run command.

The backend the job queue's searches run on (:class:`.backend.BenchBackend`, registered
as ``bench``), and what it calls: command templates over the merged config
(:mod:`.templates`), stats parsing (:mod:`.stats`), one build or run in a scratch directory
with a timeout (:mod:`.execute`), a Python function as the run (:mod:`.function`, ``tuna
search create --objective-fn``) — and a local runner (:mod:`.local`) for tests and examples.
"""

from __future__ import annotations

from tuna.backends.bench.execute import (
    BenchSpec,
    BuildResult,
    CommandResult,
    Executed,
    build,
    new_scratch,
    run,
    run_command,
)
from tuna.backends.bench.local import LocalBench, run_search
from tuna.backends.bench.stats import StatsFormat, parse_json, parse_lines, parse_regex
from tuna.backends.bench.templates import BenchError, CommandTemplate, TemplateError

__all__ = [
    "BenchError",
    "BenchSpec",
    "BuildResult",
    "CommandResult",
    "CommandTemplate",
    "Executed",
    "LocalBench",
    "StatsFormat",
    "TemplateError",
    "build",
    "new_scratch",
    "parse_json",
    "parse_lines",
    "parse_regex",
    "run",
    "run_command",
    "run_search",
]
