"""What a claimed job needs, from the database: its problem, solver, session and kernels.

Workers are stateless: a :class:`WorkLoader` turns a batch of claimed jobs into
:class:`~tuna.backends.base.JobWork` with a handful of queries per batch. Configs, solver
names and the session never change under a worker, so they are cached for its lifetime.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from sqlalchemy import ColumnElement, FromClause, Row, or_, select

from tuna.backends.base import JobWork, KernelBinary, Measurement, SessionInfo
from tuna.catalog.records import conv_problem
from tuna.db import Database, tables
from tuna.db.blobs import unpack_kernel
from tuna.errors import TunaError
from tuna.jobs.measurements import measured_before, measured_by_jobs
from tuna.jobs.values import ClaimedJob, Phase
from tuna.problems.conv import ConvProblem

_MAX_CACHED_PROBLEMS = 50_000


class WorkLoader:
    """Builds the :class:`JobWork` of claimed jobs of one session."""

    def __init__(self, db: Database, session: SessionInfo) -> None:
        self.db = db
        self.session = session
        self._problems: dict[int, ConvProblem | str] = {}
        self._solvers: dict[int, str] = {}
        self._backend_solvers_read = False

    def load(
        self, jobs: Sequence[ClaimedJob], *, platform: int | None = None
    ) -> dict[int, JobWork | str]:
        """job id -> its work, or the reason it cannot be built (e.g. an invalid config).

        Evaluate-phase work carries what was measured before for its (config, solver) in
        the session on ``platform`` (the worker's), which a resumed job does not repeat; a
        strategy's round, what its own job measured before (a lost attempt's progress).
        """
        self._fetch_problems(
            {j.config for j in jobs if j.config is not None} - self._problems.keys()
        )
        self._fetch_solvers({j.solver for j in jobs if j.solver is not None} - self._solvers.keys())
        evals = [j.id for j in jobs if j.phase is Phase.EVAL]
        kernels = self._fetch_kernels(evals) if evals else {}
        measured: dict[tuple[int, int], tuple[Measurement, ...]] = {}
        pairs = {
            (j.config, j.solver)
            for j in jobs
            if j.phase is Phase.EVAL and j.config is not None and j.solver is not None
        }
        rounds = self._fetch_rounds({j.search_build for j in jobs if j.search_build is not None})
        # A strategy's round times what its driver left to it (history's measurements were
        # taken as measured, unless --remeasure): only its own saved progress is not redone.
        own_rounds = [
            j.id
            for j in jobs
            if j.phase is Phase.EVAL
            and j.search_build is not None
            and j.search_build in rounds
            and not rounds[j.search_build]["final"]
        ]
        by_job: dict[int, tuple[Measurement, ...]] = {}
        if pairs and platform is not None:
            with self.db.transaction() as conn:
                measured = measured_before(conn, self.session.id, platform, pairs)
                by_job = measured_by_jobs(conn, own_rounds) if own_rounds else {}
        out: dict[int, JobWork | str] = {}
        for j in jobs:
            if j.config is None or j.solver is None:
                out[j.id] = f"job {j.id} names no config and solver"
                continue
            problem = self._problems.get(j.config, f"config {j.config} does not exist")
            solver = self._solvers.get(j.solver)
            if isinstance(problem, str):
                out[j.id] = problem
            elif solver is None:
                out[j.id] = f"solver {j.solver} does not exist"
            else:
                out[j.id] = JobWork(
                    job_id=j.id,
                    attempt=j.attempt,
                    phase=j.phase.value,
                    session=self.session,
                    config_id=j.config,
                    problem=problem,
                    solver=solver,
                    step=j.step.value,
                    kernels=tuple(kernels.get(j.id, ())),
                    payload=j.payload,
                    measured=(
                        by_job.get(j.id, ())
                        if j.id in own_rounds
                        else measured.get((j.config, j.solver), ())
                    ),
                )
                chosen = rounds.get(j.search_build) if j.search_build is not None else None
                work = out[j.id]
                if chosen is not None and isinstance(work, JobWork):  # a strategy's round
                    out[j.id] = dataclasses.replace(
                        work,
                        candidates=tuple(chosen.get("candidates") or ()),
                        strategy=chosen.get("strategy"),
                        budget=chosen.get("budget"),
                        choose=bool(chosen.get("final")),
                    )
        return out

    def with_round_solvers(self, jobs: Sequence[ClaimedJob]) -> list[ClaimedJob]:
        """``jobs`` with the solver of each strategy round's job filled in (its round's:
        :func:`tuna.jobs.load.insert_round_jobs`)."""
        builds = {j.search_build for j in jobs if j.config is not None and j.solver is None}
        builds.discard(None)
        if not builds:
            return list(jobs)
        rounds = self._fetch_rounds({b for b in builds if b is not None})
        out = []
        for j in jobs:
            solver = rounds.get(j.search_build or 0, {}).get("solver")
            if j.config is not None and j.solver is None and solver is not None:
                j = dataclasses.replace(j, solver=int(solver))
            out.append(j)
        return out

    def _fetch_rounds(self, build_ids: set[int]) -> dict[int, dict[str, Any]]:
        """By search_build id, a strategy round's (or final job's) ``candidates``, whether it
        is the ``final`` one, its ``strategy``, ``budget`` (most measurements) and ``solver``
        id (the search's)."""
        if not build_ids:
            return {}
        out: dict[int, dict[str, Any]] = {}
        build, search, solver = tables.search_build.c, tables.search.c, tables.solver.c
        with self.db.transaction() as conn:
            rows = conn.execute(
                select(build.id, build.params, search.spec, search.budget)
                .join(tables.search, search.id == build.search)
                .where(build.id.in_(sorted(build_ids)))
            ).all()
            names = {str((spec or {}).get("solver")) for _, _, spec, _ in rows}
            solvers = dict(
                conn.execute(
                    select(solver.name, solver.id).where(
                        solver.name.in_(sorted(names)), solver.backend == self.session.backend
                    )
                ).all()
            )
        for bid, params, spec, budget in rows:
            params, spec = dict(params or {}), dict(spec or {})
            out[bid] = {
                "candidates": list(params.get("candidates") or ()),
                "final": bool(params.get("final")),
                "strategy": spec.get("strategy"),
                "budget": budget,
                "solver": solvers.get(str(spec.get("solver"))),
            }
        return out

    def _fetch_problems(self, config_ids: set[int]) -> None:
        if not config_ids:
            return
        if len(self._problems) > _MAX_CACHED_PROBLEMS:
            self._problems.clear()
        cc, x, w = tables.conv_config, tables.tensor.alias("x"), tables.tensor.alias("w")
        with self.db.transaction() as conn:
            rows = conn.execute(
                select(cc, x, w)
                .join(x, cc.c.input_tensor == x.c.id)
                .join(w, cc.c.weight_tensor == w.c.id)
                .where(cc.c.id.in_(config_ids))
            ).all()
        for row in rows:
            cfg = _part(row, cc)
            try:
                self._problems[cfg.id] = conv_problem(cfg, _part(row, x), _part(row, w))
            except TunaError as e:
                self._problems[cfg.id] = f"config {cfg.id} is not a valid problem: {e}"

    def _fetch_solvers(self, solver_ids: set[int]) -> None:
        """Names of ``solver_ids``; the first time, of every solver of the session's backend
        too (a few hundred rows at most), so that a worker new to a session does not spend a
        query on each solver its first jobs name."""
        if not solver_ids:
            return
        solver = tables.solver.c
        wanted: ColumnElement[bool] = solver.id.in_(solver_ids)
        if not self._backend_solvers_read:
            wanted = or_(wanted, solver.backend == self.session.backend)
        with self.db.transaction() as conn:
            for sid, name in conn.execute(select(solver.id, solver.name).where(wanted)):
                self._solvers[sid] = name
        self._backend_solvers_read = True

    def _fetch_kernels(self, job_ids: list[int]) -> dict[int, list[KernelBinary]]:
        found: dict[int, list[KernelBinary]] = defaultdict(list)
        link, kernel = tables.job_kernel.c, tables.kernel_cache.c
        with self.db.transaction() as conn:
            for job, name, args, blob, size in conn.execute(
                select(
                    link.job,
                    kernel.kernel_name,
                    kernel.kernel_args,
                    kernel.blob,
                    kernel.uncompressed_size,
                )
                .join(tables.kernel_cache, kernel.id == link.kernel)
                .where(link.job.in_(job_ids))
                .order_by(link.id)
            ):
                found[job].append(KernelBinary(name, args, unpack_kernel(blob, size)))
        return found


def _part(row: Row[Any], table: FromClause) -> SimpleNamespace:
    """``table``'s columns of a joined row, as attributes (what :func:`conv_problem` reads)."""
    return SimpleNamespace(**{c.key: row._mapping[c] for c in table.c})
