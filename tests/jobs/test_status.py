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
