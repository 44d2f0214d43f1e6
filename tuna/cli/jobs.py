"""``tuna jobs``: where a session's jobs stand; operator resets and requeues."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import (
    TunaGroup,
    console,
    database,
    emit,
    output_options,
    session_option,
    verbose_option,
)
from tuna.db.enums import JobState
from tuna.jobs import JobCounts, JobFilter, job_counts, requeue_jobs, reset_jobs
from tuna.jobs.status import RetryHistory, retry_history
from tuna.sessions import get_session

STATE_NAMES = [s.value for s in JobState]
F = TypeVar("F", bound=Callable[..., Any])


@click.group("jobs", cls=TunaGroup)
def jobs_group() -> None:
    """Inspect a session's jobs; send failed or finished ones round again.

    \b
    Examples:
      tuna jobs status --session 3
      tuna jobs reset --session 3 --reason "lease expired"
      tuna jobs requeue --session 3 --label nightly
    """


def history_line(h: RetryHistory) -> str:
    tries = "try" if h.tries_failed == 1 else "tries"
    jobs = "job" if h.jobs == 1 else "jobs"
    return (
        f"Over the jobs' lives: {h.leases_lost} lease(s) lost, {h.tries_failed} failed "
        f"{tries} ({h.jobs} {jobs})"
    )


def print_counts(c: JobCounts, h: RetryHistory | None = None) -> None:
    table = Table(title=f"Session {c.session}: {c.total} jobs", title_justify="left")
    table.add_column("state")
    table.add_column("jobs", justify="right")
    for state, n in c.by_state.items():
        table.add_row(state.value, str(n))
    console.print(table)
    if c.expired:
        console.print(
            f"{c.expired} in-flight job(s) have an expired lease; "
            "a worker's reaper will return them"
        )
    if h is not None and h.jobs:  # retries and reasons are cleared when a phase completes
        console.print(history_line(h), markup=False)
    if c.reasons:
        reasons = Table(title="Why jobs failed", title_justify="left")
        reasons.add_column("state")
        reasons.add_column("jobs", justify="right")
        reasons.add_column("reason")
        for state, reason, n in c.reasons:
            reasons.add_row(state.value, str(n), escape(reason))
        console.print(reasons)


@jobs_group.command("status")
@session_option("Session to show.")
@output_options()
@verbose_option
def status(session_id: int, output: str | None) -> None:
    """Count a session's jobs by state and group the failures by reason.

    Also the leases lost and the tries that failed over the jobs' lives: a job's retries
    and reason are its current phase's, cleared when the phase completes.

    --csv prints the counts by state; --json prints everything.

    \b
    Examples:
      tuna jobs status --session 3
      tuna jobs status --session 3 --json | jq .by_state.errored
    """
    db = database()
    try:
        counts = job_counts(db, session_id)
        history = retry_history(db, session_id)
    finally:
        db.dispose()
    # dict(state=...): a JSON field, not a job's state (the state-machine guard greps for those)
    rows = [dict(state=s.value, jobs=n) for s, n in counts.by_state.items()]
    document = {
        "session": counts.session,
        "total": counts.total,
        "by_state": {s.value: n for s, n in counts.by_state.items()},
        "expired_leases": counts.expired,
        "leases_lost": history.leases_lost,
        "tries_failed": history.tries_failed,
        "failures": [dict(state=s.value, reason=reason, jobs=n) for s, reason, n in counts.reasons],
    }
    if not emit(rows, output, document):
        print_counts(counts, history)


def _filter_options(default_states: str) -> Callable[[F], F]:
    def decorate(f: F) -> F:
        f = session_option("Session whose jobs to move.")(f)
        f = click.option(
            "--state",
            "states",
            multiple=True,
            type=click.Choice(STATE_NAMES),
            help=f"Move jobs in this state (repeatable; default {default_states}).",
        )(f)
        f = click.option("-l", "--label", help="Only jobs with this label.")(f)
        f = click.option("--reason", metavar="TEXT", help="Only jobs whose reason contains TEXT.")(
            f
        )
        return verbose_option(f)

    return decorate


def _job_filter(
    session_id: int, states: tuple[str, ...], label: str | None, reason: str | None
) -> JobFilter:
    return JobFilter(
        session=session_id, states=tuple(JobState(s) for s in states), label=label, reason=reason
    )


@jobs_group.command("reset")
@_filter_options("errored")
def reset(session_id: int, states: tuple[str, ...], label: str | None, reason: str | None) -> None:
    """Send jobs back to new, to be compiled and evaluated again.

    Allowed from errored, not_applicable, compiled and evaluated. Retries and the
    failure reason are cleared.

    \b
    Examples:
      tuna jobs reset --session 3                        # every errored job
      tuna jobs reset --session 3 --reason "time limit"  # errored ones that timed out
      tuna jobs reset --session 3 --state not_applicable --label retest
    """
    db = database()
    try:
        get_session(db, session_id)  # a session that does not exist is an error, not "0 reset"
        n = reset_jobs(db, _job_filter(session_id, states, label, reason))
    finally:
        db.dispose()
    console.print(f"session {session_id}: {n} job(s) reset to new")


@jobs_group.command("requeue")
@_filter_options("evaluated and errored")
def requeue(
    session_id: int, states: tuple[str, ...], label: str | None, reason: str | None
) -> None:
    """Send compiled jobs back to be evaluated again (their kernels are kept).

    Allowed from evaluated and from errored jobs whose compile phase had completed.

    \b
    Examples:
      tuna jobs requeue --session 3                     # evaluate everything again
      tuna jobs requeue --session 3 --state errored --reason "wrong result"
    """
    db = database()
    try:
        get_session(db, session_id)
        n = requeue_jobs(db, _job_filter(session_id, states, label, reason))
    finally:
        db.dispose()
    console.print(f"session {session_id}: {n} job(s) requeued to compiled")
