"""The job queue's values: a job's phase, a claimed job, what a record or a reap did, and
which jobs an operator means (:class:`JobFilter`).

Plain values, no writes: :mod:`tuna.jobs.states` moves jobs, and the modules that write
result rows (:mod:`~tuna.jobs.results`, :mod:`~tuna.jobs.measurements`,
:mod:`~tuna.jobs.search_results`) take a :class:`ClaimedJob` from here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement

from tuna.db import tables
from tuna.db.enums import JobState, JobStep

S = JobState
Job = tables.job.c

DEFAULT_MAX_RETRIES = 3
DEFAULT_LEASE_SECONDS = 60.0


class Phase(str, enum.Enum):
    """The two halves of a job: compile (no device) and evaluate (on the device)."""

    COMPILE = "compile"
    EVAL = "eval"

    @property
    def ready(self) -> JobState:
        """The state a job waits in for this phase (claims read it; retries return to it)."""
        return S.NEW if self is Phase.COMPILE else S.COMPILED

    @property
    def running(self) -> JobState:
        """The state of a job held (leased) by a worker in this phase."""
        return S.COMPILE_START if self is Phase.COMPILE else S.EVAL_START

    @property
    def done(self) -> JobState:
        return S.COMPILED if self is Phase.COMPILE else S.EVALUATED

    @property
    def started_column(self) -> str:
        return "compile_start" if self is Phase.COMPILE else "eval_start"

    @property
    def ended_column(self) -> str:
        return "compile_end" if self is Phase.COMPILE else "eval_end"

    @classmethod
    def holding(cls, state: JobState) -> Phase | None:
        """The phase whose workers hold a job in ``state``, if any."""
        return {S.COMPILE_START: cls.COMPILE, S.EVAL_START: cls.EVAL}.get(state)


@dataclass(frozen=True)
class ClaimedJob:
    """A job a worker holds: its fence (``attempt``) and what the work is about.

    ``payload`` is what the compile phase left for the evaluate phase (eval claims only).
    """

    id: int
    attempt: int
    phase: Phase
    session: int
    config: int | None
    solver: int | None
    step: JobStep
    payload: str | None = None
    search_build: int | None = None  # a search's build job
    search_run: int | None = None  # a search's run job


@dataclass
class Recorded:
    """What :func:`~tuna.jobs.recording.record_outcomes` did: each recorded job's new state;
    the lost ones."""

    states: dict[int, JobState] = field(default_factory=dict)
    lost: list[int] = field(default_factory=list)

    def count(self, state: JobState) -> int:
        return sum(1 for s in self.states.values() if s is state)


@dataclass(frozen=True)
class Reaped:
    """Jobs whose lease had expired: returned to their stable state, or errored."""

    returned: list[int] = field(default_factory=list)
    errored: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.returned) + len(self.errored)


@dataclass(frozen=True)
class JobFilter:
    """Which jobs an operator transition applies to. Unset fields match everything.

    ``reason`` matches a substring of ``job.reason``; ``states`` defaults per operation.
    """

    session: int | None = None
    states: tuple[JobState, ...] = ()
    label: str | None = None
    reason: str | None = None

    def where(self) -> list[ColumnElement[bool]]:
        conds: list[ColumnElement[bool]] = []
        if self.session is not None:
            conds.append(Job.session == self.session)
        if self.label is not None:
            conds.append(Job.label == self.label)
        if self.reason:
            conds.append(Job.reason.contains(self.reason, autoescape=True))
        return conds


def stands_for(m: Any, than: Any) -> bool:
    """Whether measurement ``m`` stands for its candidate rather than ``than`` (None: none
    yet; both anything with ``valid`` and ``time_ms``): the fastest valid one (a timing
    disturbed makes a candidate slower, never faster), else the latest."""
    if than is None:
        return True
    if m.valid and m.time_ms is not None:
        return not (than.valid and than.time_ms is not None) or m.time_ms < than.time_ms
    return not than.valid
