"""Creating jobs: the one module that inserts rows into ``job``.

:func:`load_jobs` queues one job per (config, applicable solver) of a session, never
duplicated. Applicability comes from the rows ``tuna applicability update`` stored for the
session where a config has them, otherwise from the session's backend; a backend whose
library alone can tell (``LibraryQueries``: MIOpen through fin) needs stored rows, and a
config without them is reported, not queued. A (session, config, solver, step) that is
already queued is left alone. Unless forced, work is skipped that another session already
finished (an evaluated job) where that session's history counts under the session's rules
(by default: the same fingerprint; never a retired session; see :mod:`tuna.sessions.rules`),
and with ``min_trials``, pairs that already hold that many measurements that count; the
report says how much was skipped and why, and which rule kept other sessions' work from
counting.

A search's jobs are inserted in their caller's transaction: its builds and a strategy's
rounds by the driver (:func:`insert_build_jobs`, :func:`insert_round_jobs`), the run jobs
of a stored build by the worker that records it (:func:`insert_run_jobs`). Each enters
the state the state machine names (:func:`tuna.jobs.states.entered`). Those are Core
statements a worker runs, so the ORM and the session services are imported inside
:func:`load_jobs` and its helpers: a worker never imports the ORM (issue #14).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, exists, insert, select

from tuna.backends import Backend, LibraryQueries, get_backend
from tuna.backends.base import SolverInfo
from tuna.catalog.records import configs_with_tensors, conv_problem
from tuna.db import Database, tables
from tuna.db.bulk import chunks, insert_missing
from tuna.db.enums import JobState, JobStep
from tuna.errors import NotFoundError, TunaError
from tuna.jobs.states import entered
from tuna.problems.conv import ConvProblem

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from tuna.sessions.history import Eligibility


@dataclass
class LoadReport:
    configs: int = 0
    candidates: int = 0  # (config, solver) pairs considered
    inserted: int = 0
    already_queued: int = 0
    done_elsewhere: dict[int, int] = field(default_factory=dict)  # session -> jobs skipped
    not_applicable: Counter[str] = field(default_factory=Counter)  # reason -> pairs
    by_solver: Counter[str] = field(default_factory=Counter)  # jobs inserted per solver
    rules: str = ""  # the session's history rules, as a person reads them
    # Queued although another session of the target did the work: rule -> pairs.
    not_counted: Counter[str] = field(default_factory=Counter)
    min_trials: int | None = None
    tuned_enough: int = 0  # pairs skipped: at least min_trials measurements already


def load_jobs(
    db: Database,
    session_id: int,
    *,
    step: str,
    tag: str | None = None,
    all_configs: bool = False,
    solvers: Sequence[str] | None = None,
    only_tunable: bool = False,
    label: str | None = None,
    priority: int = 0,
    force: bool = False,
    min_trials: int | None = None,
) -> LoadReport:
    """Queue jobs for the configs tagged ``tag`` (or all) and the applicable solvers."""
    if (tag is None) == (not all_configs):
        raise TunaError("give exactly one of -t TAG or --all_configs")
    try:
        job_step = JobStep(step)
    except ValueError as e:
        raise TunaError(f"--step {step!r}: use perf, find or kernel") from e
    if min_trials is not None and min_trials < 1:
        raise TunaError(f"--min-trials {min_trials}: give at least 1 (or leave it out)")
    from tuna.db.models import Job
    from tuna.sessions import session_info, session_row, sync_solvers
    from tuna.sessions.applicability import stored_applicability
    from tuna.sessions.history import eligibility

    report = LoadReport()
    with db.session() as session:
        sess = session_row(session, session_id)
        backend = get_backend(sess.backend)
        solver_ids = sync_solvers(session, sess.backend)
        library = isinstance(backend, LibraryQueries)
        if library:  # the solver table holds what the library build reported
            infos = _stored_solvers(session, sess.backend)
        else:
            infos = {s.name: s for s in backend.solvers()}
        chosen = list(solvers) if solvers else sorted(infos)
        unknown = [s for s in chosen if s not in infos]
        if unknown:
            raise TunaError(
                f"solver(s) {', '.join(unknown)} unknown to backend {sess.backend!r}; "
                f"known: {', '.join(sorted(infos))}"
            )
        if only_tunable:
            chosen = [s for s in chosen if infos[s].tunable]

        history = eligibility(session, session_info(sess), include_target=False)
        report.rules = history.rules.describe()
        configs, tuned = _configs_to_weigh(
            session, report, tag, history, min_trials if not force else None, chosen, solver_ids
        )
        stored = stored_applicability(session, sess.id, [cfg.id for cfg, _x, _w in configs])
        wanted: list[tuple[int, int]] = []
        for cfg, xt, wt in configs:
            problem = conv_problem(cfg, xt, wt)
            for name in chosen:
                report.candidates += 1
                if (cfg.id, solver_ids[name]) in tuned:
                    report.tuned_enough += 1
                    continue
                reason = _applicability(
                    backend, library, stored.get(cfg.id), problem, solver_ids[name], name, sess.id
                )
                if reason is None:
                    wanted.append((cfg.id, solver_ids[name]))
                else:
                    report.not_applicable[reason] += 1

        config_ids = sorted({c for c, _ in wanted})
        # (config, solver): never NULL here, where jobs are picked by config.
        queued: set[tuple[int | None, int | None]] = set()
        done: dict[tuple[int | None, int | None], int] = {}
        # Sessions of the same target whose work does not count: reported, never skipped.
        near = {
            sid: rule
            for sid, rule in history.excluded.items()
            if rule not in ("backend", "arch", "num_cu")
        }
        uncounted: dict[tuple[int | None, int | None], str] = {}
        for part in chunks(config_ids, 1000):
            for cfg_id, solver_id in session.execute(
                select(Job.config, Job.solver).where(
                    Job.session == sess.id, Job.step == job_step, Job.config.in_(part)
                )
            ):
                queued.add((cfg_id, solver_id))
            if force:
                continue
            for cfg_id, solver_id, other, ended in session.execute(
                select(Job.config, Job.solver, Job.session, Job.eval_end).where(
                    Job.session.in_([*history.sessions, *near]),
                    Job.step == job_step,
                    Job.state == JobState.EVALUATED,
                    Job.config.in_(part),
                )
            ):
                if history.counts(other, ended):
                    done[(cfg_id, solver_id)] = other
                else:
                    uncounted[(cfg_id, solver_id)] = near.get(other, "max_age")
        names = {v: k for k, v in solver_ids.items()}
        rows = []
        for pair in wanted:
            if pair in queued:
                report.already_queued += 1
            elif pair in done:
                report.done_elsewhere[done[pair]] = report.done_elsewhere.get(done[pair], 0) + 1
            else:
                if pair in uncounted:
                    report.not_counted[uncounted[pair]] += 1
                rows.append(
                    {
                        "session": sess.id,
                        "config": pair[0],
                        "solver": pair[1],
                        "step": job_step.value,
                        "label": label,
                        "priority": priority,
                    }
                )
                report.by_solver[names[pair[1]]] += 1
        insert_missing(session, Job, rows)  # state: the column's default, "new"
        report.inserted = len(rows)
    return report


def _configs_to_weigh(
    session: OrmSession,
    report: LoadReport,
    tag: str | None,
    history: Eligibility,
    min_trials: int | None,
    chosen: Sequence[str],
    solver_ids: dict[str, int],
) -> tuple[list[Any], dict[tuple[int, int], int]]:
    """(config, x, w) of the configs whose pairs need a look, and the pairs tuned enough.

    With ``min_trials``, the effort is counted first (one query over the effort counts,
    ``measurement_effort``, not the measurement rows) and a config whose every chosen
    solver is tuned enough is not even loaded: what is tuned costs one count, not a problem
    rebuilt per pair.
    """
    from tuna.db.models import ConfigTag, ConvConfig
    from tuna.library.effort import tuned_enough

    if min_trials is None:
        configs = list(session.execute(configs_with_tensors(tag)).all())
        if tag is not None and not configs:
            raise NotFoundError(f"no config is tagged {tag!r}; import_configs -t {tag} -f FILE")
        report.configs = len(configs)
        return configs, {}
    ids = select(ConvConfig.id)
    if tag is not None:
        ids = ids.join(ConfigTag, ConfigTag.config == ConvConfig.id).where(ConfigTag.tag == tag)
    all_ids = list(session.scalars(ids))
    if tag is not None and not all_ids:
        raise NotFoundError(f"no config is tagged {tag!r}; import_configs -t {tag} -f FILE")
    report.configs, report.min_trials = len(all_ids), min_trials
    tuned = tuned_enough(session, history, min_trials, all_ids)
    wanted = [solver_ids[name] for name in chosen]
    open_ids = [c for c in all_ids if any((c, sid) not in tuned for sid in wanted)]
    skipped = len(all_ids) - len(open_ids)
    report.candidates += skipped * len(wanted)
    report.tuned_enough += skipped * len(wanted)
    rows: list[Any] = []
    for part in chunks(sorted(open_ids), 1000):
        rows += session.execute(configs_with_tensors(tag).where(ConvConfig.id.in_(part))).all()
    return rows, tuned


def _stored_solvers(session: OrmSession, backend: str) -> dict[str, SolverInfo]:
    from tuna.db.models import Solver

    rows = session.execute(
        select(Solver.name, Solver.tunable, Solver.numeric_id, Solver.algorithm).where(
            Solver.backend == backend, Solver.valid.is_(True)
        )
    )
    return {name: SolverInfo(name, bool(tunable), nid, alg) for name, tunable, nid, alg in rows}


def _applicability(
    backend: Backend,
    library: bool,
    stored: dict[int, tuple[bool, str | None]] | None,
    problem: ConvProblem,
    solver_id: int,
    name: str,
    session_id: int,
) -> str | None:
    """None when ``name`` applies to the config, otherwise why not: the stored answer when
    the config has rows, else the backend's (a library backend needs rows)."""
    if stored is None:
        if library:
            return (
                f"no stored applicability for the config: run `tuna applicability update "
                f"--session {session_id}`"
            )
        return backend.applicability(problem, name)
    found = stored.get(solver_id)
    if found is None:
        return (
            f"no stored applicability for the solver: run `tuna applicability update "
            f"--session {session_id}` again"
        )
    applicable, reason = found
    return None if applicable else (reason or "not applicable (stored)")


@functools.cache
def _insert_job() -> Any:
    return insert(tables.job)


def _new_job(step: JobStep) -> dict[str, Any]:
    """A new job's step and the state it enters (the state machine's)."""
    return {"step": step, **entered(step)}


def runs_awaiting(conn: Connection, build_ids: Sequence[int]) -> list[tuple[int, int]]:
    """``(session, search_run id)`` of the unfinished runs of ``build_ids`` that have no job
    yet, locked (a driver adding a run to one of these builds waits, then sees it built)."""
    if not build_ids:
        return []
    run = tables.search_run.c
    rows = conn.execute(
        select(tables.search.c.session, run.id)
        .join(tables.search, tables.search.c.id == run.search)
        .where(
            run.build.in_(sorted(build_ids)),
            run.valid.is_(None),
            ~exists().where(tables.job.c.search_run == run.id),
        )
        .order_by(run.build, run.seq)
        .with_for_update()
    ).all()
    return [(int(r[0]), int(r[1])) for r in rows]


def insert_run_jobs(conn: Connection, runs: Sequence[tuple[int, int]]) -> int:
    """Insert, ``compiled``, the run jobs of ``runs`` (``(session, search_run id)`` pairs):
    their build is stored, or they need none. Part of the caller's transaction."""
    if not runs:
        return 0
    rows = [
        {"session": session, "search_run": run, **_new_job(JobStep.RUN)} for session, run in runs
    ]
    conn.execute(_insert_job(), rows)
    return len(rows)


def insert_round_jobs(conn: Connection, rounds: Sequence[tuple[int, int, int]]) -> int:
    """Insert, ``new``, the perf jobs of a strategy's rounds (``(session, config,
    search_build id)``): each builds and times its round's candidates. Their solver is
    the round's (``search_build.params``, filled in by the worker that claims them), not a
    column: a (session, config, solver, step) has one job, and a search has many rounds.
    Part of the caller's transaction."""
    if not rounds:
        return 0
    rows = [
        {
            "session": session,
            "config": config,
            "search_build": build,
            **_new_job(JobStep.PERF),
        }
        for session, config, build in rounds
    ]
    conn.execute(_insert_job(), rows)
    return len(rows)


def insert_build_jobs(conn: Connection, builds: Sequence[tuple[int, int]]) -> int:
    """Insert, ``new``, the build jobs of ``builds`` (``(session, search_build id)``
    pairs). Part of the caller's transaction."""
    if not builds:
        return 0
    rows = [
        {"session": session, "search_build": build, **_new_job(JobStep.BUILD)}
        for session, build in builds
    ]
    conn.execute(_insert_job(), rows)
    return len(rows)
