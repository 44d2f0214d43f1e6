"""go_fish on this machine through several stages with one set of worker processes."""

from __future__ import annotations

import re

import pytest

from tests.support.seed import make_session
from tuna.catalog.importer import import_configs, read_lines
from tuna.db.enums import JobState
from tuna.errors import TunaError
from tuna.fleet.local import LocalWorkers
from tuna.fleet.phase import Progress, Task
from tuna.fleet.pool import run_local_stages
from tuna.jobs import job_counts
from tuna.jobs.load import load_jobs

LINES = "\n".join(
    f"MIOpenDriver conv -n 2 -c {c} -H 8 -W 8 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1" for c in (4, 8, 16)
)


def sessions(db, backend: str, n: int = 2, env: dict[str, str] | None = None) -> list[int]:
    import_configs(db, read_lines(LINES), tag="net")
    out = []
    for _ in range(n):
        sid = make_session(db, arch="cpu", num_cu=2, backend=backend, environment=env or {})
        load_jobs(db, sid, step="perf", tag="net", force=True)
        out.append(sid)
    return out


def test_every_process_compiles_and_one_per_owned_device_then_evaluates(db, tmp_path):
    a, b = sessions(db, "cpuconv")
    stages = [(a, Task.COMPILE), (a, Task.RUN_PERF), (b, Task.COMPILE), (b, Task.RUN_PERF)]
    pool = LocalWorkers(db, stages, workers=3, log_dir=tmp_path, db_url="sqlite://")
    # watched and worked compiles first: no evaluation while anything compiles
    assert pool.stages == [(a, Task.COMPILE), (b, Task.COMPILE), (a, Task.RUN_PERF),
                           (b, Task.RUN_PERF)]  # fmt: skip
    assert pool.plans[0] == pool.stages  # a cpuconv evaluation owns the machine: one evaluator
    assert pool.plans[1] == pool.plans[2] == [(a, Task.COMPILE), (b, Task.COMPILE)]
    argv = pool.argv(pool.plans[0])
    at = argv.index("worker")
    assert argv[at:] == [
        "worker", "-v", "--session", str(a), "--phase", "compile", "--burst",
        "--then", f"{b}:compile", "--then", f"{a}:eval", "--then", f"{b}:eval",
        "--step", "perf",
    ]  # fmt: skip
    # evaluations of two steps in one process: no --step (each session's jobs are its own step)
    mixed = [(a, Task.COMPILE), (a, Task.RUN_PERF), (b, Task.RUN_FIND)]
    assert "--step" not in pool.argv(mixed)
    assert pool.note() == (
        "3 local worker(s) compile, 1 of them then evaluate: a cpuconv evaluation owns the machine"
    )
    only_eval = LocalWorkers(db, [(a, Task.RUN_PERF)], workers=3, log_dir=tmp_path, db_url="x")
    assert only_eval.plans == [[(a, Task.RUN_PERF)]]
    assert only_eval.note().startswith("1 evaluation worker(s), not 3: a cpuconv evaluation")
    alone = LocalWorkers(db, [(a, Task.COMPILE)], workers=3, log_dir=tmp_path, db_url="x")
    assert alone.plans == [[(a, Task.COMPILE)]] * 3 and alone.note() == ""


def test_a_pool_takes_sessions_of_one_backend(db, tmp_path):
    [cpu] = sessions(db, "cpuconv", 1)
    noop = make_session(db, arch="cpu", num_cu=2, backend="noop")
    with pytest.raises(TunaError, match="one set of workers works sessions of one backend"):
        LocalWorkers(db, [(cpu, Task.COMPILE), (noop, Task.COMPILE)], workers=1,
                     log_dir=tmp_path, db_url="x")  # fmt: skip


def test_two_sessions_drain_through_four_stages_with_one_start(sqlite_url, tmp_path):
    from tuna.db import open_database

    db = open_database(sqlite_url)
    try:
        a, b = sessions(db, "noop")
        seen: list[tuple[int, Task]] = []
        reports = run_local_stages(
            db,
            [(a, Task.COMPILE), (b, Task.COMPILE), (a, Task.RUN_PERF), (b, Task.RUN_PERF)],
            workers=2,
            log_dir=tmp_path / "logs",
            db_url=sqlite_url,
            interval=0.2,
            on_stage=lambda s, t: seen.append((s, t)),
        )
        assert seen == [(a, Task.COMPILE), (b, Task.COMPILE), (a, Task.RUN_PERF),
                        (b, Task.RUN_PERF)]  # fmt: skip
        assert [(r.session, r.task, r.drained) for r in reports] == [(s, t, True) for s, t in seen]
        for s in (a, b):
            counts = job_counts(db, s).by_state
            assert counts[JobState.EVALUATED] > 0
            assert {st for st, n in counts.items() if n} <= {
                JobState.EVALUATED, JobState.NOT_APPLICABLE
            }  # fmt: skip
        # two processes in all, each logging once (the noop backend owns nothing: both evaluate)
        logs = sorted(p.name for p in (tmp_path / "logs").rglob("*.log"))
        assert logs == ["worker-0.log", "worker-1.log"]
        # Each stage was worked, and a process started once went on to later stages (which
        # process did which depends on who ran out of work first).
        texts = [next((tmp_path / "logs").rglob(name)).read_text() for name in logs]
        stages = [set(re.findall(r"(\w+) worker for session (\d+) starting", t)) for t in texts]
        assert set().union(*stages) == {
            ("compile", str(a)), ("compile", str(b)), ("eval", str(a)), ("eval", str(b))
        }, stages  # fmt: skip
        assert max(len(st) for st in stages) >= 2, stages
    finally:
        db.dispose()


def test_an_interrupt_stops_every_process_and_hands_the_jobs_back(sqlite_url, tmp_path):
    """Ctrl-C during the first stage: the launcher stops the processes of every stage (each
    finishes its current job), no job stays leased and nothing later is started."""
    from tuna.db import open_database

    db = open_database(sqlite_url)
    try:
        a, b = sessions(db, "noop", env={"NOOP_SLEEP_S": "0.3"})

        def interrupt(p: Progress) -> None:
            if p.counts.by_state[JobState.COMPILE_START] > 0:
                raise KeyboardInterrupt

        reports = run_local_stages(
            db,
            [(a, Task.COMPILE), (b, Task.COMPILE), (a, Task.RUN_PERF), (b, Task.RUN_PERF)],
            workers=2,
            log_dir=tmp_path / "logs",
            db_url=sqlite_url,
            interval=0.1,
            on_progress=interrupt,
        )
        [report] = reports
        assert report.interrupted and not report.drained
        assert len(report.exit_codes) == 2  # both processes stopped and reaped
        a_states = job_counts(db, a).by_state
        assert a_states[JobState.NEW] > 0  # handed back, not lost
        for s in (a, b):
            counts = job_counts(db, s).by_state
            assert counts[JobState.COMPILE_START] == counts[JobState.EVAL_START] == 0
            assert counts[JobState.EVALUATED] == 0
    finally:
        db.dispose()
