"""A command search's runs measured again on this machine, on other settings: the second
input set of ``tuna search validate`` for a search whose runs are shell commands.

A command search reads its inputs where its commands read anything: from the config, the
search's **settings** (``tuna search create params.json data=train.bin ...``, its ``base``)
beside the tuned parameters, placed in its commands as ``{data}``. Its second input set is
therefore the same commands with some settings given other values (``data=test.bin``):
:func:`command_inputs` checks them (each names a setting, not a tuned parameter, and one at
least differs from the tuning value) and :class:`Remeasure` measures a config with them by
the search's backend's own build and run (:meth:`~tuna.backends.base.Backend.build`,
:meth:`~tuna.backends.base.Backend.run`), as a worker would: the sources unpacked from the
artifact the search stored, one build per build tuple, each run on its build. It runs here,
in this process, not through the queue: it takes nothing a worker holds (``owns``), so a
timed benchmark is best validated on a quiet machine.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from tuna.backends import Backend, get_backend
from tuna.backends.artifact import unpack
from tuna.backends.base import SearchWork
from tuna.db import Database
from tuna.db.models import Artifact, Search
from tuna.searchers import Run, build_key
from tuna.searchers.errors import SearchError
from tuna.searchers.schedule import BuildKey
from tuna.searchers.space import ParameterSpace
from tuna.searches.create import IN_PROCESS, load_space
from tuna.searches.strategy import is_strategy

_EXAMPLE = "tuna search validate 7 --set data=test.bin"


@dataclass(frozen=True)
class CommandSearch:
    """What re-measuring a command search needs of its row."""

    id: int
    name: str
    backend: str
    spec: dict[str, Any]
    base: dict[str, Any]
    space: ParameterSpace


def command_search(db: Database, search: int) -> CommandSearch:
    """Search ``search`` as a command search, or one SearchError saying what to do instead:
    a ``tuna.tune`` study or a search whose runs call a Python function is validated by
    its function (``--objective-fn``); a strategy search has no second input set."""
    with db.session() as s:
        row = s.get(Search, search)
        if row is None:
            raise SearchError(f"search {search} does not exist; `tuna search list` shows them")
        spec, base, name = dict(row.spec), dict(row.base), row.name
        backend, space_file, space_text = row.backend, row.space_file, row.space_text
    who = f"search {search} ({name!r})"
    if is_strategy(spec):
        raise SearchError(
            f"{who} times a tunable solver's candidates on its one problem, so there is no "
            "second input set to measure them on; tune the other problem (load_jobs "
            "--strategy) and compare with `tuna best`"
        )
    if spec.get(IN_PROCESS) or spec.get("function"):
        raise SearchError(
            f"{who}: give --objective-fn MODULE:FUNCTION, a function of (params, trial) that "
            "measures a config on trial.inputs (its runs call a Python function, not a command)"
        )
    runs_on = get_backend(backend)
    space = load_space(space_file, space_text, runs_on.runtime_only(spec))
    return CommandSearch(search, name, backend, spec, base, space)


def command_inputs(search: CommandSearch, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` checked as the command search's second input set: each names one of
    its settings (not a tuned parameter), and one at least differs from its tuning value;
    else one SearchError that says what to give."""
    who = f"search {search.id} ({search.name!r})"
    if not search.base:
        raise SearchError(
            f"{who}: its commands read no setting besides the tuned parameters "
            f"({', '.join(search.space.names)}), so there is no second input set to give "
            "them; create the search with a setting for its inputs (params.json "
            "data=train.bin, and {data} in --run), then validate with --set data=test.bin"
        )
    known = ", ".join(sorted(search.base))
    if not settings:
        raise SearchError(
            f"{who} runs commands: give the second input set as other values of its "
            f"settings ({known}), e.g. {_EXAMPLE}"
        )
    for key in settings:
        if key in search.space.names:
            raise SearchError(
                f"--set {key}: {key!r} is a tuned parameter of {who}, which the front "
                f"chose; set one of its settings instead ({known})"
            )
        if key not in search.base:
            raise SearchError(
                f"--set {key}: {who} has no setting {key!r}; its settings are {known}"
            )
    if all(search.base[k] == v or str(search.base[k]) == str(v) for k, v in settings.items()):
        raise SearchError(
            f"{who}: {_pairs(settings)} is what it was tuned on; validation measures the "
            f"front on a second input set: give another value, e.g. {_EXAMPLE}"
        )
    return dict(settings)


@dataclass
class Remeasure:
    """Measures configs of ``search`` with ``settings`` over them (a context manager:
    the scratch directory, builds included, goes on exit)."""

    db: Database
    search: CommandSearch
    settings: dict[str, Any]
    scratch: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="tuna-validate-")))
    _builds: dict[BuildKey, Path | str] = field(default_factory=dict)
    _sources: Path | None = None
    _count: int = 0

    def __enter__(self) -> Remeasure:
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    @property
    def backend(self) -> Backend:
        return get_backend(self.search.backend)

    def __call__(self, config: Mapping[str, Any]) -> Run:
        """``config`` (a run's stored config) with the settings over it, built (once per
        build tuple) and run: its Run, invalid with the reason when either failed."""
        merged = {**config, **self.settings}
        built: Path | str | None = None
        if self.backend.needs_build(self.search.spec):
            key = build_key(self.search.space, merged)
            if key not in self._builds:
                self._builds[key] = self._build(merged)
            built = self._builds[key]
            if isinstance(built, str):
                return Run.invalid(merged, f"not run: {built}")
        self._count += 1
        out = self.backend.run(self._work("run", merged, built))
        if not out.ok:
            return Run.invalid(merged, out.failure or "failed")
        if not out.valid:
            return Run(merged, dict(out.stats), valid=False, reason=out.failure or "invalid")
        return Run(merged, dict(out.stats))

    def _build(self, config: Mapping[str, Any]) -> Path | str:
        """The build's directory, or why it did not build."""
        self._count += 1
        out = self.backend.build(self._work("build", config, self._unpacked_sources()))
        if not out.built or out.artifact is None:
            return out.failure or "build failed"
        return unpack(out.artifact, self.scratch / f"build-{len(self._builds)}")

    def _unpacked_sources(self) -> Path | None:
        """The search's sources as stored (its ``source_artifact``), unpacked once."""
        digest = self.search.spec.get("source_artifact")
        if not digest:
            return None
        if self._sources is None:
            with self.db.session() as s:
                blob = s.scalar(select(Artifact.blob).where(Artifact.digest == digest))
            if blob is None:
                raise SearchError(
                    f"search {self.search.id}: its sources (artifact {str(digest)[:12]}) are "
                    "not in the database; create the search again"
                )
            self._sources = unpack(blob, self.scratch / "sources")
        return self._sources

    def _work(self, step: str, config: Mapping[str, Any], build_dir: Any) -> SearchWork:
        return SearchWork(
            job_id=self._count, attempt=1, step=step, search_id=self.search.id,
            spec=self.search.spec, config=dict(config), build_dir=build_dir,
            scratch=self.scratch,
        )  # fmt: skip


def _pairs(settings: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in settings.items())
