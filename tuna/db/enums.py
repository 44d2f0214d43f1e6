"""Values stored as readable strings: job states and steps.

Which transitions between states are allowed is not decided here but in the job state
machine (``tuna.jobs.states``); this module only names the values.
"""

from __future__ import annotations

import enum


class JobState(str, enum.Enum):
    NEW = "new"
    COMPILE_START = "compile_start"
    COMPILED = "compiled"
    EVAL_START = "eval_start"
    EVALUATED = "evaluated"
    ERRORED = "errored"
    NOT_APPLICABLE = "not_applicable"


class JobStep(str, enum.Enum):
    PERF = "perf"
    FIND = "find"
    KERNEL = "kernel"
    BUILD = "build"  # a search's build (compile phase only)
    RUN = "run"  # a search's run (evaluate phase only)
