"""The quick start: the whole pipeline on this machine with the built-in CPU backend.

Imports a few resnet50 layers, creates two sessions for this CPU — one tunes (perf step:
every candidate of each tunable solver) and one measures the untuned defaults (find step:
each tunable solver's default parameters) — compiles both with ``workers`` local workers
and evaluates them with one (a cpuconv timing owns the machine: two at once would disturb
each other), all with one set of worker processes (:mod:`tuna.fleet.pool`), and reads the
answer back from the find db: per problem, the fastest solver and how it compares with
the naive solver and with its own default parameters.

The speed-up over the defaults is taken from timings side by side: the tuned session's job
re-times its finalists and the solver's default parameters in the same turns
(:mod:`tuna.backends.finalists`), so each turn gives a ratio of two timings seconds apart;
a problem's speed-up is the median of its turns', and the figure's spread is the geometric
mean of each problem's slowest turn and of each one's fastest. (Its two halves once came
from the two sessions, timed minutes apart, and the figure moved 8.8x-17.0x between
back-to-back runs: issue #30.)
"""

from __future__ import annotations

import dataclasses
import os
import platform
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from sqlalchemy import select

from tuna.backends.base import UNSTABLE_SPREAD
from tuna.catalog.importer import ImportReport, import_configs
from tuna.catalog.parsing import read_lines
from tuna.db import Database
from tuna.db.models import ConfigTag, ConvConfig, FindDb, Measurement, Solver
from tuna.fleet.local import FishReport, Progress, Task
from tuna.fleet.pool import run_local_stages
from tuna.jobs.load import load_jobs
from tuna.library.stability import timing_spreads
from tuna.results.insight import geomean
from tuna.sessions import SessionSpec, create_session

TAG = "quickstart"
NAIVE = "CpuDirectNaive"


@dataclass(frozen=True)
class QuickstartRow:
    key: str
    solver: str  # the fastest
    params: str | None
    time_ms: float
    naive_ms: float | None
    default_ms: float | None  # the fastest solver with its default parameters
    turns: tuple[float, ...] = ()
    """The speed-up over the defaults in each re-timing turn (the two timed side by side)."""

    @property
    def vs_naive(self) -> float | None:
        return self.naive_ms / self.time_ms if self.naive_ms else None

    @property
    def vs_default(self) -> float | None:
        """The median of the turns' speed-ups; without turns, default over tuned time."""
        if self.turns:
            return statistics.median(self.turns)
        return self.default_ms / self.time_ms if self.default_ms else None


@dataclass
class QuickstartResult:
    imported: ImportReport
    tuned_session: int
    default_session: int
    runs: list[FishReport]
    rows: list[QuickstartRow]
    spread: float = 1.0
    """How far apart a stored winner's repeated timings were (slowest over fastest, the
    worst layer of either session): above ``UNSTABLE_SPREAD`` the figures are unstable."""

    @property
    def unstable(self) -> bool:
        return self.spread > UNSTABLE_SPREAD

    @property
    def speed_up(self) -> float | None:
        """The geometric mean over the problems of tuned over default parameters."""
        return geomean([r.vs_default for r in self.rows if r.vs_default])

    @property
    def spread_of_turns(self) -> tuple[float, float, int] | None:
        """(low, high, turns): the geometric mean of every problem's slowest turn and of
        every one's fastest, between which :attr:`speed_up` lies; None unless every compared
        problem was timed in two turns or more."""
        compared = [r for r in self.rows if r.vs_default]
        if not compared or any(len(r.turns) < 2 for r in compared):
            return None
        low = geomean([min(r.turns) for r in compared])
        high = geomean([max(r.turns) for r in compared])
        assert low is not None and high is not None
        return low, high, min(len(r.turns) for r in compared)


def sample_lines() -> list[tuple[int, str]]:
    text = resources.files("tuna.catalog.samples").joinpath("quickstart.txt").read_text()
    return read_lines(text)


def run_quickstart(
    db: Database,
    db_url: str,
    *,
    workers: int,
    log_dir: Path,
    candidates: int = 24,
    on_stage: Callable[[str], None] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> QuickstartResult:
    """Tune the sample layers end to end and compare tuned, default and naive times."""
    lines = sample_lines()
    imported = import_configs(db, lines, tag=TAG, source="quickstart sample")
    env = {"CPUCONV_MAX_CANDIDATES": str(candidates)}
    arch = f"cpu-{platform.machine() or 'unknown'}"
    cores = os.cpu_count() or 1
    tuned = create_session(
        db,
        SessionSpec(
            arch=arch, num_cu=cores, backend="cpuconv", label="quickstart: tuned", environment=env
        ),
    )
    default = create_session(
        db,
        SessionSpec(
            arch=arch,
            num_cu=cores,
            backend="cpuconv",
            label="quickstart: defaults",
            environment=env,
        ),
    )
    # force: the quick start shows the pipeline, even where an earlier run did the work
    load_jobs(db, tuned.id, step="perf", tag=TAG, force=True)
    # The defaults of the tunable solvers (a layer's winner is one; the naive time is the
    # tuned session's).
    load_jobs(db, default.id, step="find", tag=TAG, only_tunable=True, force=True)
    names = {tuned.id: "tuned", default.id: "defaults"}

    def stage(session: int, task: Task) -> None:
        if on_stage:
            on_stage(f"session {session} ({names[session]}): {task.value}")

    # One set of workers for all four stages: both sessions compile side by side, then one
    # worker (an evaluation owns the machine) evaluates both.
    runs = run_local_stages(
        db,
        [
            (tuned.id, Task.COMPILE),
            (default.id, Task.COMPILE),
            (tuned.id, Task.RUN_PERF),
            (default.id, Task.RUN_FIND),
        ],
        workers=workers,
        log_dir=log_dir,
        db_url=db_url,
        interval=0.25,
        on_stage=stage,
        on_progress=on_progress,
    )
    rows = compare(db, tuned.id, default.id)
    spread = timing_spread(db, [tuned.id, default.id])
    return QuickstartResult(imported, tuned.id, default.id, runs, rows, spread)


def timing_spread(db: Database, sessions: list[int]) -> float:
    """The largest spread (slowest over fastest valid time) of the timings of a stored
    winner (a find row's params, timed first and in the re-timing turns) in ``sessions``
    (:mod:`tuna.library.stability`)."""
    f = FindDb
    with db.session() as s:
        winners = [
            ((r.session, r.config, r.solver, r.params or ""), float(r.time_ms))
            for r in s.execute(
                select(f.session, f.config, f.solver, f.params, f.time_ms).where(
                    f.session.in_(sessions)
                )
            )
        ]
        spreads = timing_spreads(s, winners)
    return max((x.ratio for x in spreads.values()), default=1.0)


def compare(db: Database, tuned: int, default: int) -> list[QuickstartRow]:
    """Per quick-start config: the fastest solver of ``tuned`` against naive and defaults."""
    with db.session() as s:
        found = s.execute(
            select(ConvConfig.fdb_key, FindDb.session, Solver.name, FindDb.time_ms, FindDb.params)
            .join(FindDb, FindDb.config == ConvConfig.id)
            .join(Solver, Solver.id == FindDb.solver)
            .join(ConfigTag, ConfigTag.config == ConvConfig.id)
            .where(ConfigTag.tag == TAG, FindDb.session.in_([tuned, default]))
            .order_by(ConvConfig.id)
        ).all()
    times: dict[tuple[str, int, str], tuple[float, str | None]] = {
        (key, sess, solver): (t, params) for key, sess, solver, t, params in found
    }
    rows = []
    for key in dict.fromkeys(k for k, *_ in found):
        mine = {sv: v for (k, sess, sv), v in times.items() if k == key and sess == tuned}
        if not mine:
            continue
        best = min(mine, key=lambda sv: mine[sv][0])
        naive = mine.get(NAIVE) or times.get((key, default, NAIVE))
        dflt = times.get((key, default, best))
        row = QuickstartRow(
            key, best, mine[best][1], mine[best][0], naive[0] if naive else None, None
        )
        if dflt is not None:
            row = side_by_side(db, tuned, row, dflt[1] or "", fallback_ms=dflt[0])
        rows.append(row)
    return rows


def side_by_side(
    db: Database, session: int, row: QuickstartRow, default: str, *, fallback_ms: float
) -> QuickstartRow:
    """``row`` with its default parameters' time from ``session``, where its winner's job
    timed them (their fastest valid timing) and the speed-up of each re-timing turn: the
    timings of each after its first (the job's first pass), paired from the end. Without
    such timings, ``fallback_ms`` (the defaults session's find row)."""
    tuned = row.params or ""
    m = Measurement
    with db.session() as s:
        found = s.execute(
            select(m.params, m.time_ms)
            .join(ConvConfig, ConvConfig.id == m.config)
            .join(Solver, Solver.id == m.solver)
            .where(
                m.session == session,
                ConvConfig.fdb_key == row.key,
                Solver.name == row.solver,
                m.params.in_([tuned, default]),
                m.valid,
            )
            .order_by(m.id)
        ).all()
    timings: dict[str, list[float]] = {tuned: [], default: []}
    for params, t in found:
        if t is not None:
            timings[params].append(float(t))
    if not timings[default]:
        return dataclasses.replace(row, default_ms=fallback_ms)
    mine, theirs = timings[tuned][1:], timings[default][1:]
    n = min(len(mine), len(theirs))
    pairs = zip(mine[len(mine) - n :], theirs[len(theirs) - n :], strict=True)
    turns = tuple(d / t for t, d in pairs)
    return dataclasses.replace(row, default_ms=min(timings[default]), turns=turns)
