"""What a strategy search reads of the session's history: the measurements that count
for it, under its history rules (:func:`tuna.sessions.history.eligibility`, as
``load_jobs --min-trials`` and ``tuna history`` decide).

A candidate already measured in a session whose history counts for this one (its own
included) is not timed again: the driver fills its run from that measurement
(:func:`measured_in_history`: the fastest valid one, else the latest;
:func:`measured_runs`) and leaves it out of the round's job, so a round of candidates all
measured before needs no job at all.

The model's history is a query (:func:`strategy_history`): this problem's measurements and,
with ``transfer``, those of every other problem, that count for the session under its
history rules (compatible, unretired sessions, young enough, on matching platforms), as
they were when the search was created (the newest measurement, the sessions and platforms
that counted, the age cutoff: :func:`history_snapshot`, stored as ``spec["history"]``), so
that a resumed search reads the same history and its seeded strategy replays the same
rounds.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, func, select
from sqlalchemy.orm import Session as OrmSession

from tuna.backends import Backend, get_backend
from tuna.catalog.records import configs_with_tensors, conv_problem
from tuna.db import Database, tables
from tuna.db.clock import db_now
from tuna.db.models import ConvConfig, Measurement, Solver
from tuna.errors import TunaError
from tuna.jobs.values import stands_for
from tuna.library.effort import counting_measurements
from tuna.problems.conv import ConvProblem
from tuna.searchers.costmodel import HistoryEntry
from tuna.sessions.history import Eligibility, eligibility
from tuna.sessions.session import session_info, session_row

log = logging.getLogger(__name__)


def tunable_solvers(backend: Backend) -> list[str]:
    """The solvers of ``backend`` a strategy can search, sorted (none where it declares no
    spaces)."""
    if not backend.declares_spaces:
        return []
    return sorted(s.name for s in backend.solvers() if s.tunable)


def problems_of(s: OrmSession, config_ids: Sequence[int] | None) -> dict[int, ConvProblem]:
    """Config id -> its problem, for ``config_ids`` (None: every config); a config the
    backends cannot run is left out."""
    query = configs_with_tensors()
    if config_ids is not None:
        query = query.where(ConvConfig.id.in_(sorted(config_ids)))
    out: dict[int, ConvProblem] = {}
    for cfg, x, w in s.execute(query):
        try:
            out[cfg.id] = conv_problem(cfg, x, w)
        except TunaError:
            continue  # not a problem the backend can run: no history of it
    return out


def strategy_history(
    s: OrmSession,
    session_id: int,
    config: int,
    solver: str,
    *,
    transfer: bool,
    until: int | None,
    frozen: Mapping[str, Any] | None = None,
) -> list[HistoryEntry]:
    """The measurements a model learns from (see the module docstring): this problem's and,
    with ``transfer``, every other problem's, valid ones only, as (features, params, time).

    ``frozen`` (:func:`history_snapshot`) fixes which sessions, platforms and times count
    as they did when the search was created, so that a session retired or rows aged out
    since do not change what a resumed search replays."""
    info = session_info(session_row(s, session_id))
    history = eligibility(s, info)
    if frozen is not None:
        since = frozen.get("since")
        platforms = frozen.get("platforms")
        history = replace(
            history,
            sessions=tuple(int(x) for x in frozen.get("sessions") or ()),
            platforms=None if platforms is None else tuple(int(x) for x in platforms),
            since=dt.datetime.fromisoformat(since) if since else None,
        )
    solver_id = s.scalar(
        select(Solver.id).where(Solver.name == solver, Solver.backend == info.backend)
    )
    backend = get_backend(info.backend)
    if solver_id is None or solver not in tunable_solvers(backend):
        return []
    rows: dict[int, list[tuple[str, float]]] = defaultdict(list)
    found = counting_measurements(
        s, history, solver_id, None if transfer else [config], valid_only=True, until=until
    )
    for cfg, params, time_ms, _valid in found:
        if time_ms is not None and time_ms > 0:
            rows[cfg].append((params, float(time_ms)))
    problems = problems_of(s, [*rows, config])
    if config not in problems:
        return []
    names = backend.tuning_space(problems[config], solver).names
    out: list[HistoryEntry] = []
    for cfg, measured in rows.items():
        problem = problems.get(cfg)
        if problem is None:
            continue
        features = backend.problem_features(problem, solver)
        latest = dict(measured)  # one per candidate: the latest
        for params, t in latest.items():
            try:  # parse_params may read the shorter strings of before a space grew
                values = backend.parse_params(solver, params)
            except ValueError:
                continue
            if tuple(values) != names:
                continue
            out.append((features, dict(values), t))
    return out


def session_history(db: Database, session_id: int) -> Eligibility:
    """Which sessions' (and platforms') measurements count for the session now."""
    with db.session() as s:
        return eligibility(s, session_info(session_row(s, session_id)))


def measured_in_history(
    conn: Connection, history: Eligibility, config: int, solver: int, texts: Sequence[str]
) -> dict[str, Any]:
    """Candidate text -> the measurement that stands for it among those of (``config``,
    ``solver``) that count under ``history`` (the fastest valid, else the latest), as a
    row with ``session``, ``params``, ``time_ms``, ``valid``, ``reason`` and ``machine``;
    candidates no counting session measured are absent."""
    m = tables.measurement.c
    if not history.sessions or not texts:
        return {}
    found: dict[str, Any] = {}
    for row in conn.execute(
        select(m.session, m.params, m.time_ms, m.valid, m.reason, m.machine)
        .where(
            m.config == config,
            m.solver == solver,
            m.params.in_(sorted(set(texts))),
            *history.where(m.session, m.taken, m.platform),
        )
        .order_by(m.id)
    ):
        if stands_for(row, found.get(row.params)):
            found[row.params] = row
    return found


def measured_runs(
    conn: Connection,
    history: Eligibility,
    config: int,
    solver: int,
    texts: Mapping[int, str],
    stats: Mapping[int, Mapping[str, float]] | None = None,
) -> dict[int, dict[str, Any]]:
    """Run seq -> its ``search_run`` columns, ended, for each candidate of ``texts`` (seq ->
    candidate text) that a session whose ``history`` counts measured (the same columns
    each: one INSERT of them all); the others are absent. A valid run's stats hold the
    candidate's ``stats`` (seq -> stats computed from it) beside its time."""
    found = measured_in_history(conn, history, config, solver, list(texts.values()))
    if not found:
        return {}
    now = conn.execute(select(db_now())).scalar_one()
    out: dict[int, dict[str, Any]] = {}
    for seq, text in texts.items():
        m = found.get(text)
        if m is None:
            continue
        where = {"measured_in_session": int(m.session)}
        run: dict[str, Any] = {"build": None, "machine": m.machine, "finished": now}
        if m.valid and m.time_ms is not None:
            t = float(m.time_ms)
            known = {**(stats or {}).get(seq, {}), "time_ms": t, **where}
            run |= {"valid": True, "value": t, "stats": known, "reason": None}
        else:
            reason = f"{m.reason or 'invalid'} (measured in session {m.session})"
            run |= {"valid": False, "value": None, "stats": where, "reason": reason}
        out[seq] = run
    if out:
        log.info(
            "config %d, solver %d: %d of %d candidate(s) measured where history counts, not "
            "timed again (--remeasure times them)",
            config, solver, len(out), len(texts),
        )  # fmt: skip
    return out


def history_snapshot(s: OrmSession, session_id: int) -> dict[str, Any]:
    """What counts as history for the session now (its rules evaluated once): the newest
    measurement, the sessions and platforms that count and the ``max_age`` cutoff."""
    history = eligibility(s, session_info(session_row(s, session_id)))
    return {
        "until": int(s.scalar(select(func.max(Measurement.id))) or 0),
        "sessions": list(history.sessions),
        "platforms": None if history.platforms is None else list(history.platforms),
        "since": history.since.isoformat() if history.since is not None else None,
    }
