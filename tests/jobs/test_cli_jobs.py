"""``tuna jobs``: status, reset, requeue (the commands live in tuna/cli/jobs.py)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.support.seed import expire_leases, job_row, open_test_db, seed
from tuna.backends import CompileOutcome, EvalOutcome, FindResult
from tuna.cli import main
from tuna.db.enums import JobState
from tuna.jobs import Phase, claim_jobs, record_outcome

S = JobState


@pytest.fixture
def setup(sqlite_url, monkeypatch):
    monkeypatch.setenv("TUNA_DB_URL", sqlite_url)
    monkeypatch.setenv("COLUMNS", "100")
    # Terminal rendering (box-drawn tables); piped output is tested in tests/cli.
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    # NO_COLOR drops colours; TERM=dumb drops styles too (the title's italics).
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "dumb")
    db = open_test_db(sqlite_url)
    sd = seed(db, configs=4, solvers=["NoopDirect"])
    jobs = claim_jobs(db, sd.session, Phase.COMPILE, owner="w", limit=4)
    record_outcome(db, "w", jobs[0], CompileOutcome.failed("cc: [bad] 100% broken"), max_retries=0)
    record_outcome(db, "w", jobs[1], CompileOutcome.inapplicable("filter is not 1x1"))
    record_outcome(db, "w", jobs[2], CompileOutcome())
    [ev] = claim_jobs(db, sd.session, Phase.EVAL, owner="w")
    record_outcome(db, "w", ev, EvalOutcome(find=FindResult(1.0, 0, "direct")))
    yield db, sd
    db.dispose()


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_status_counts_jobs_by_state_and_failures_by_reason(setup):
    db, sd = setup
    expire_leases(db)
    result = invoke("jobs", "status", "--session", str(sd.session))
    assert result.exit_code == 0, result.output
    assert [line.rstrip() for line in result.output.splitlines()] == [
        f"Session {sd.session}: 4 jobs",
        "┏━━━━━━━━━━━━━━━━┳━━━━━━┓",
        "┃ state          ┃ jobs ┃",
        "┡━━━━━━━━━━━━━━━━╇━━━━━━┩",
        "│ new            │    0 │",
        "│ compile_start  │    1 │",
        "│ compiled       │    0 │",
        "│ eval_start     │    0 │",
        "│ evaluated      │    1 │",
        "│ errored        │    1 │",
        "│ not_applicable │    1 │",
        "└────────────────┴──────┘",
        "1 in-flight job(s) have an expired lease; a worker's reaper will return them",
        "Over the jobs' lives: 0 lease(s) lost, 1 failed try (1 job)",
        "Why jobs failed",
        "┏━━━━━━━━━━━━━━━━┳━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓",
        "┃ state          ┃ jobs ┃ reason                                      ┃",
        "┡━━━━━━━━━━━━━━━━╇━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩",
        "│ errored        │    1 │ cc: [bad] 100% broken (gave up after 1 try) │",
        "│ not_applicable │    1 │ filter is not 1x1                           │",
        "└────────────────┴──────┴─────────────────────────────────────────────┘",
    ]


def test_status_shows_lost_leases_after_the_phase_completed(setup):
    """A completed phase clears a job's retries and reason; the lost leases still show."""
    from tuna.jobs import reap_expired

    db, sd = setup
    expire_leases(db)
    assert len(reap_expired(db).returned) == 1  # the job left in compile_start
    [job] = claim_jobs(db, sd.session, Phase.COMPILE, owner="w2")
    record_outcome(db, "w2", job, CompileOutcome())
    assert job_row(db, job.id).retries == 0
    result = invoke("jobs", "status", "--session", str(sd.session))
    assert "Over the jobs' lives: 1 lease(s) lost, 1 failed try (2 jobs)" in result.output
    result = invoke("jobs", "status", "--session", str(sd.session), "--json")
    assert '"leases_lost": 1' in result.output and '"tries_failed": 1' in result.output


def test_status_of_an_unknown_session_is_an_error(setup):
    result = invoke("jobs", "status", "--session", "99")
    assert result.exit_code == 1
    assert (
        result.output
        == "Error: session 99 does not exist; `tuna session list` shows the sessions\n"
    )


def test_reset_moves_errored_jobs_matching_a_reason(setup):
    db, sd = setup
    result = invoke("jobs", "reset", "--session", str(sd.session), "--reason", "100%")
    assert (result.exit_code, result.output) == (
        0,
        f"session {sd.session}: 1 job(s) reset to new\n",
    )
    assert job_row(db, sd.jobs[0]).state is S.NEW
    again = invoke("jobs", "reset", "--session", str(sd.session), "--state", "not_applicable")
    assert again.output == f"session {sd.session}: 1 job(s) reset to new\n"


def test_reset_refuses_in_flight_jobs(setup):
    db, sd = setup
    result = invoke("jobs", "reset", "--session", str(sd.session), "--state", "compile_start")
    assert result.exit_code == 1
    assert result.output == (
        "Error: job state compile_start -> new is not allowed by reset; from compile_start a "
        "job may go by reset to: nothing\n"
    )
    assert job_row(db, sd.jobs[3]).state is S.COMPILE_START


def test_requeue_sends_evaluated_jobs_back_to_compiled(setup):
    db, sd = setup
    result = invoke("jobs", "requeue", "--session", str(sd.session))
    assert (result.exit_code, result.output) == (
        0,
        f"session {sd.session}: 1 job(s) requeued to compiled\n",
    )
    assert job_row(db, sd.jobs[2]).state is S.COMPILED


@pytest.mark.parametrize("command", ["status", "reset", "requeue"])
def test_every_command_has_help_with_an_example(command):
    result = invoke("jobs", command, "--help")
    assert result.exit_code == 0
    assert "Example" in result.output and f"tuna jobs {command} --session 3" in result.output
