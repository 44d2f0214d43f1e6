"""A Python function as a bench search's run: ``module:function``, imported and called.

``tuna search create --objective-fn mymod:measure --source DIR`` makes a bench search whose
run command is this module (``python -m tuna.backends.bench.function mymod:measure --stat
STAT``), run by the worker in a fresh copy of the shipped sources like any run command: it
imports ``mymod`` from there (or from what the worker's Python has installed), calls
``measure(config)`` with the run's merged config (read from ``$TUNA_CONFIG``) and prints
the stats as one JSON line. The function runs in a child process of the worker, so a
timeout or a crash in native code kills the child, not the worker. ``tuna.tune("mymod:f",
...)`` takes the same reference and calls it in-process.

What the function returns is read as ``tuna.tune``'s objective is
(:func:`tuna.searchers.function.stats_of`): a number is the stat ``STAT``; a dict is the
stats. An exception or another kind of value is an invalid run saying which (the child
exits 1 with that line on stderr). Its stdout is the run's output, as a benchmark's is.

A function of two arguments gets a :class:`LineTrial`: ``trial.report(step, value)``
prints the ``tuna:intermediate STEP VALUE`` line a command would, so the search's pruner
judges it on the worker and, when the run is hopeless, the worker kills this process:
``trial.should_prune()`` is always False here (the verdict arrives as the kill).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from tuna.searchers.errors import SearchError
from tuna.searchers.function import load_function, stats_of, takes_trial
from tuna.searchers.prune import INTERMEDIATE

MODULE = "tuna.backends.bench.function"


def run_command(ref: str, stat: str) -> str:
    """The run command of a search of ``ref``, with this interpreter (the worker's)."""
    words = [sys.executable, "-m", MODULE, ref, "--stat", stat]
    return shlex.join(words).replace("{", "{{").replace("}", "}}")  # a template's literal


class LineTrial:
    """A function's trial in a run's child: its reports are the run's intermediate lines."""

    def __init__(self, params: dict[str, object]) -> None:
        self.params = params
        self.intermediate: dict[int, float] = {}

    def report(self, step: int, value: float) -> None:
        """Print ``tuna:intermediate STEP VALUE`` (flushed: the worker judges it at once)."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise SearchError(f"trial.report: step {step!r}: give an integer >= 0")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SearchError(f"trial.report: value {value!r} at step {step}: give a number")
        self.intermediate[step] = float(value)
        print(f"{INTERMEDIATE} {step} {float(value)!r}", flush=True)

    def should_prune(self) -> bool:
        """False: a pruned run's process is killed by its worker, not asked to stop."""
        return False


def main(argv: list[str] | None = None) -> int:
    """One run: call the function on ``$TUNA_CONFIG``'s config, print its stats as JSON."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__)
    parser.add_argument("ref", help="module:function")
    parser.add_argument("--stat", default="value", help="the stat a returned number is")
    args = parser.parse_args(argv)
    where = os.environ.get("TUNA_CONFIG")
    try:
        function = load_function(args.ref, Path.cwd())
        if not where:
            raise SearchError(
                "TUNA_CONFIG is not set; a bench run sets it to the run's config file (JSON)"
            )
        config = json.loads(Path(where).read_text(encoding="utf-8"))
    except (SearchError, OSError, ValueError) as e:
        print(f"{args.ref}: {e}", file=sys.stderr)
        return 2
    try:
        out = function(config, LineTrial(config)) if takes_trial(function) else function(config)
    except Exception as e:  # the user's code: an invalid run saying why
        print(f"objective raised {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    stats = stats_of(out, args.stat)
    if isinstance(stats, str):
        print(f"objective {stats}", file=sys.stderr)
        return 1
    print(json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
