"""A search's build and run jobs in the worker: what they need from the database (spec,
config and the build) and which backend call and outcome type are theirs.

A run of a search with a pruner gets a :class:`~tuna.jobs.pruning.RunReports` as its
``report``: its intermediate values are stored as it prints them and judged by the pruner.

A run's build artifact is fetched once per worker and digest and kept unpacked in an
:class:`ArtifactCache` (a private directory of the worker, removed when it stops), so a
worker running many runs of one build fetches and unpacks it once. Searches never change
under a worker (their spec, base and builds are written once), so they are cached too.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select

from tuna.backends.artifact import unpack
from tuna.backends.base import Backend, BuildOutcome, RunOutcome, SearchWork
from tuna.db import Database, tables
from tuna.jobs.pruning import RunReports
from tuna.jobs.values import ClaimedJob, Phase
from tuna.searchers.pareto import Goal
from tuna.searchers.prune import Pruner, pruner_from_json

log = logging.getLogger(__name__)

# The tables' columns, named as the ORM classes: statements here are Core (tuna.db.tables),
# so a worker never imports the ORM.
Artifact = tables.artifact.c
Search = tables.search.c
SearchBuild = tables.search_build.c
SearchRun = tables.search_run.c

DEFAULT_CACHED_BUILDS = 16


def is_search_job(job: ClaimedJob) -> bool:
    """A search's build or run job (a strategy's round, a config's perf job with a
    ``search_build``, is a plain job of the session's backend: not one)."""
    return job.config is None and bool(job.search_build or job.search_run)


def search_step(
    backend: Backend, phase: Phase
) -> Callable[[SearchWork], BuildOutcome | RunOutcome]:
    """The search backend's call for ``phase``: a build (compile phase) or a run."""
    return backend.build if phase is Phase.COMPILE else backend.run


def search_outcome_type(phase: Phase) -> type[BuildOutcome] | type[RunOutcome]:
    """What a search job of ``phase`` returns (a failure of it, too)."""
    return BuildOutcome if phase is Phase.COMPILE else RunOutcome


class ArtifactCache:
    """Unpacked build artifacts by digest, the ``keep`` most recently used."""

    def __init__(self, root: Path | None = None, keep: int = DEFAULT_CACHED_BUILDS) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tuna-artifacts-", dir=root))
        self.keep = keep
        self._dirs: OrderedDict[str, Path] = OrderedDict()
        self.fetched = 0  # artifacts fetched from the database (the rest were cached)

    def get(self, digest: str) -> Path | None:
        path = self._dirs.get(digest)
        if path is not None:
            self._dirs.move_to_end(digest)
        return path

    def put(self, digest: str, blob: bytes) -> Path:
        path = unpack(blob, self.root / digest)
        self._dirs[digest] = path
        self.fetched += 1
        while len(self._dirs) > self.keep:
            _, old = self._dirs.popitem(last=False)
            shutil.rmtree(old, ignore_errors=True)
        return path

    def digests(self) -> list[str]:
        return list(self._dirs)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        self._dirs.clear()


class SearchLoader:
    """Builds the :class:`SearchWork` of claimed build and run jobs."""

    def __init__(self, db: Database, cache: ArtifactCache | None = None) -> None:
        self.db = db
        self.cache = cache or ArtifactCache()
        self._searches: dict[int, tuple[dict[str, Any], dict[str, Any], str]] = {}
        self._pruners: dict[int, tuple[Pruner, str]] = {}  # search -> its pruner and goal
        self._builds: dict[str, set[int]] = {}  # digest -> the search builds it was fetched for

    def held_builds(self) -> list[int]:
        """The search builds whose artifact is in the cache: the claim prefers their runs."""
        return [b for d in self.cache.digests() for b in self._builds.get(d, ())]

    def backend_of(self, search_id: int) -> str:
        return self._searches[search_id][2]

    def load(self, jobs: Sequence[ClaimedJob]) -> dict[int, SearchWork | str]:
        """job id -> its work, or why there is none."""
        out: dict[int, SearchWork | str] = {}
        builds = [j for j in jobs if j.search_build is not None]
        runs = [j for j in jobs if j.search_run is not None]
        with self.db.transaction() as conn:
            build_rows = {
                r.id: r
                for r in conn.execute(
                    select(SearchBuild.id, SearchBuild.search, SearchBuild.params).where(
                        SearchBuild.id.in_([j.search_build for j in builds])
                    )
                )
            }
            run_rows = {
                r.id: r
                for r in conn.execute(
                    select(
                        SearchRun.id,
                        SearchRun.search,
                        SearchRun.config,
                        SearchRun.build,
                        Artifact.digest,
                    )
                    .outerjoin(tables.search_build, SearchBuild.id == SearchRun.build)
                    .outerjoin(tables.artifact, Artifact.id == SearchBuild.artifact)
                    .where(SearchRun.id.in_([j.search_run for j in runs]))
                )
            }
            wanted = {r.search for r in [*build_rows.values(), *run_rows.values()]}
            missing = wanted - self._searches.keys()
            if missing:
                for sid, spec, base, backend, pruner, objective in conn.execute(
                    select(
                        Search.id,
                        Search.spec,
                        Search.base,
                        Search.backend,
                        Search.pruner,
                        Search.objective,
                    ).where(Search.id.in_(missing))
                ):
                    self._searches[sid] = (dict(spec), dict(base), backend)
                    found = pruner_from_json(pruner)
                    if found is not None:
                        goal = str((objective or {}).get("goal") or "min")
                        self._pruners[sid] = (found, goal)
            digests = {r.digest for r in run_rows.values() if r.digest is not None}
            for r in run_rows.values():
                if r.digest is not None:
                    self._builds.setdefault(r.digest, set()).add(r.build)
            sources = {
                b.id: self._searches[b.search][0].get("source_artifact")
                for b in build_rows.values()
            }
            digests |= {d for d in sources.values() if d}
            fetch = [d for d in digests if self.cache.get(d) is None]
            broken: dict[str, str] = {}
            for digest, blob in conn.execute(
                select(Artifact.digest, Artifact.blob).where(Artifact.digest.in_(fetch))
            ):
                try:
                    self.cache.put(digest, blob)
                except Exception as e:  # a job's failure (retried), not the worker's
                    log.warning("artifact %s: cannot unpack", digest[:12], exc_info=True)
                    broken[digest] = f"{type(e).__name__}: {e}"
        for j in builds:
            row = build_rows.get(j.search_build)
            if row is None:
                out[j.id] = f"search build {j.search_build} does not exist"
                continue
            spec, base, _ = self._searches[row.search]
            source = sources.get(row.id)
            source_dir = self.cache.get(source) if source else None
            if source and source_dir is None:
                why = broken.get(source, "missing")
                out[j.id] = f"the sources {source[:12]} of search {row.search}: {why}"
                continue
            out[j.id] = SearchWork(
                job_id=j.id,
                attempt=j.attempt,
                step="build",
                search_id=row.search,
                spec=spec,
                config={**base, **row.params},
                build_dir=source_dir,
            )
        for j in runs:
            run = run_rows.get(j.search_run)
            if run is None:
                out[j.id] = f"search run {j.search_run} does not exist"
                continue
            spec, _, _ = self._searches[run.search]
            build_dir = self.cache.get(run.digest) if run.digest is not None else None
            if run.digest is not None and build_dir is None:
                why = broken.get(run.digest, "missing")
                out[j.id] = f"the artifact {run.digest[:12]} of run {j.search_run}: {why}"
                continue
            pruning = self._pruners.get(run.search)
            out[j.id] = SearchWork(
                job_id=j.id,
                attempt=j.attempt,
                step="run",
                search_id=run.search,
                spec=spec,
                config=dict(run.config),
                build_dir=build_dir,
                report=None
                if pruning is None
                else RunReports(self.db, run.search, run.id, pruning[0], _goal(pruning[1])),
            )
        return out


def _goal(goal: str) -> Goal:
    return "max" if goal == "max" else "min"
