"""The transition table and the one write path (tuna.jobs.states)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from tests.support.seed import (
    ALL_NOOP_SOLVERS,
    force_state,
    job_row,
    seed,
)
from tuna.db.enums import JobState, JobStep
from tuna.jobs import (
    TRANSITIONS,
    IllegalTransition,
    compare_and_set,
)
from tuna.jobs.states import entered

S = JobState
ALL_PAIRS = list(itertools.product(JobState, JobState))


@pytest.mark.parametrize(
    ("frm", "to"), ALL_PAIRS, ids=[f"{a.value}->{b.value}" for a, b in ALL_PAIRS]
)
def test_every_state_pair_is_allowed_or_refused(lite, frm, to):
    job = seed(lite, configs=1, solvers=["NoopDirect"]).jobs[0]
    force_state(lite, job, frm.value)
    with lite.session() as s:
        if (frm, to) in TRANSITIONS:
            assert compare_and_set(s, [job], from_state=frm, to_state=to) == 1
        else:
            with pytest.raises(IllegalTransition, match=f"{frm.value} -> {to.value}"):
                compare_and_set(s, [job], from_state=frm, to_state=to)
    assert job_row(lite, job).state is (to if (frm, to) in TRANSITIONS else frm)


def test_the_table_is_the_documented_machine():
    # Stable states are only left by a claim or an operator; running states only by a worker.
    for (frm, to), event in TRANSITIONS.items():
        if frm in (S.COMPILE_START, S.EVAL_START):
            assert event in ("complete", "retry", "give_up", "not_applicable")
        elif to in (S.COMPILE_START, S.EVAL_START):
            assert event == "claim"
        else:
            assert event in ("reset", "requeue")
    assert {to for (frm, to) in TRANSITIONS if frm is S.NEW} == {S.COMPILE_START}
    assert {to for (frm, to) in TRANSITIONS if frm is S.COMPILE_START} == {
        S.COMPILED,
        S.EVALUATED,  # a search's build: compile-phase work only
        S.NEW,
        S.ERRORED,
        S.NOT_APPLICABLE,
    }
    assert {to for (frm, to) in TRANSITIONS if frm is S.EVAL_START} == {
        S.EVALUATED,
        S.COMPILED,
        S.ERRORED,
        S.NOT_APPLICABLE,
    }


def test_a_wrong_from_state_changes_nothing(lite):
    job = seed(lite, configs=1, solvers=["NoopDirect"]).jobs[0]
    with lite.session() as s:
        assert compare_and_set(s, [job], from_state=S.COMPILED, to_state=S.EVAL_START) == 0
    assert job_row(lite, job).state is S.NEW


TUNA = Path(__file__).resolve().parents[2] / "tuna"


def lines_outside(module: str, pattern: str, unless: str = "\0") -> list[str]:
    """``file:line`` of every line of tuna/ outside ``module`` that matches ``pattern``
    (and does not hold ``unless``)."""
    found = re.compile(pattern)
    return [
        f"{p.relative_to(TUNA)}:{n}"
        for p in TUNA.rglob("*.py")
        if p != TUNA / module
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if found.search(line) and unless not in line
    ]


def test_nothing_outside_the_state_machine_assigns_job_state():
    # A line that names another table's state (a search's, in its JSON listing) says so
    # with a trailing ``# not job.state``. A new job's state is the machine's too
    # (states.entered), also where tuna.jobs.load inserts it.
    assigns = r"\.state\s*=[^=]|values\([^)]*\bstate\s*=|[\"']state[\"']\s*:"
    assert lines_outside("jobs/states.py", assigns, unless="# not job.state") == []


def test_seeded_noop_jobs_cover_every_solver(lite):
    sd = seed(lite, configs=2, solvers=ALL_NOOP_SOLVERS)
    assert len(sd.jobs) == 8


def test_nothing_outside_load_creates_jobs():
    inserts = r"insert\((tables\.)?[jJ]ob\b|insert_missing\w*\(\w+, Job\b|\bJob\(\w+="
    assert lines_outside("jobs/load.py", inserts) == []


@pytest.mark.parametrize("step", list(JobStep))
def test_a_new_job_enters_new_or_a_run_job_compiled(step):
    assert entered(step) == {"state": S.COMPILED if step is JobStep.RUN else S.NEW}
