"""Where a session's jobs are (tuna.jobs.status)."""

from __future__ import annotations

from tests.support.seed import (
    expire_leases,
    seed,
)
from tuna.backends import CompileOutcome
from tuna.db.enums import JobState
from tuna.jobs import (
    Phase,
    claim_jobs,
    job_counts,
    record_outcome,
)
from tuna.jobs.status import per_second, seconds_left

S = JobState


def test_job_counts_by_state_with_failure_reasons(db):
    sd = seed(db, configs=4, solvers=["NoopDirect"])
    for _ in range(2):
        [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
        record_outcome(db, "w", job, CompileOutcome.failed("x"), max_retries=0)
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    record_outcome(db, "w", job, CompileOutcome.inapplicable("not 1x1"))
    claim_jobs(db, sd.session, Phase.COMPILE, owner="w")
    expire_leases(db)
    c = job_counts(db, sd.session)
    assert c.total == 4 and c.expired == 1
    assert {k: v for k, v in c.by_state.items() if v} == {
        S.ERRORED: 2,
        S.NOT_APPLICABLE: 1,
        S.COMPILE_START: 1,
    }
    assert c.reasons == [
        (S.ERRORED, "x (gave up after 1 try)", 2),
        (S.NOT_APPLICABLE, "not 1x1", 1),
    ]


def test_lost_leases_and_failed_tries_outlive_the_phase_lifetime(db):
    """A completed phase clears ``retries`` and ``reason``; the job's lifetime counts of lost
    leases and failed tries stay, for `tuna jobs status`."""
    from tuna.jobs import reap_expired
    from tuna.jobs.status import retry_history

    sd = seed(db, configs=2, solvers=["NoopDirect"])
    first = claim_jobs(db, sd.session, Phase.COMPILE, owner="w1", limit=2)
    expire_leases(db)
    assert len(reap_expired(db).returned) == 2  # both leases lost once
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w2")
    record_outcome(db, "w2", job, CompileOutcome.failed("cc crashed"))  # a failed try
    for _ in range(2):
        [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w3")
        record_outcome(db, "w3", job, CompileOutcome(payload="{}"))
    c = job_counts(db, sd.session)
    assert c.by_state[S.COMPILED] == 2 and len(first) == 2
    history = retry_history(db, sd.session)
    assert (history.leases_lost, history.tries_failed, history.jobs) == (2, 1, 2)


def test_one_rate_and_eta_for_every_progress_line():
    assert per_second(30, 60.0) == 0.5 and per_second(30, 0.0) == 0.0
    assert seconds_left(10, 0.5) == 20.0
    assert seconds_left(10, 0.0) is None
    assert seconds_left(0, 0.5) == 0.0
