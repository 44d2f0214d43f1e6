"""query_db: what the catalogue knows about driver lines or db keys.

For each problem: whether its config exists, its tags, its jobs (state, session, solver,
result) and its results (perf params, find times), and its db keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from tuna.catalog.parsing import BnEntry, ConvEntry, key_entry, parse_line
from tuna.db import Database
from tuna.db.models import (
    BnConfig,
    BnConfigTag,
    ConfigTag,
    ConvConfig,
    FindDb,
    Job,
    KeyOnlyRecord,
    PerfDb,
    Solver,
)
from tuna.errors import DbKeyError, DriverLineError, TunaError
from tuna.problems.driver import line_kind
from tuna.problems.keys import (
    find_db_key,
    is_key_form,
    parse_find_db_key,
    parse_perf_db_key,
    parse_text_db_line,
    perf_db_key,
)


@dataclass(frozen=True)
class JobRow:
    id: int
    session: int
    solver: str
    step: str
    state: str
    attempt: int
    retries: int
    note: str | None  # the result, or the reason it failed


@dataclass(frozen=True)
class PerfRow:
    session: int
    solver: str
    params: str


@dataclass(frozen=True)
class FindRow:
    session: int
    solver: str
    time_ms: float
    workspace: int
    algorithm: str


@dataclass
class ConfigReport:
    """One problem asked about, and what the catalogue holds for it."""

    line_no: int
    kind: str  # "conv" or "bnorm"
    key: str
    perf_key: str | None
    driver: str | None  # None: no MIOpenDriver line gives the problem (a db key's only)
    config_id: int | None = None
    tags: list[str] = field(default_factory=list)
    jobs: list[JobRow] = field(default_factory=list)
    perf: list[PerfRow] = field(default_factory=list)
    find: list[FindRow] = field(default_factory=list)
    # A key MIOpen wrote that is no problem: no config, its records kept by key alone
    # (import_db's key-only records, whose entries are ``find``), and why it is no problem.
    key_only: bool = False
    key_only_reason: str | None = None

    @property
    def exists(self) -> bool:
        return self.config_id is not None or (self.key_only and bool(self.find))


@dataclass(frozen=True)
class KeyOnlyEntry:
    """A queried key of MIOpen's form that is no problem (see ``is_key_form``)."""

    key: str
    reason: str
    line_no: int


def is_db_key_text(text: str) -> bool:
    """Whether a query is a db key (or a whole db record ``KEY=...``) and not a driver line:
    a key has no white space, a driver line has some (spaces or tabs) between its words,
    unless it is a bare base arg (``conv``), which the driver grammar reads."""
    if len(text.split("=", 1)[0].split()) != 1:
        return False
    try:
        line_kind(text)
    except DriverLineError:
        return True
    return False


def _key_entry(text: str, line_no: int) -> ConvEntry | KeyOnlyEntry:
    """A db key (or a whole db record ``KEY=...``) as a catalogue entry."""
    key = text.split("=", 1)[0].strip()
    errors = []
    for parse in (parse_find_db_key, parse_perf_db_key):
        try:
            problem = parse(key)
        except DbKeyError as e:
            errors.append(str(e))
            continue
        return key_entry(problem, line_no)
    if is_key_form(key):
        return KeyOnlyEntry(key, errors[0], line_no)
    raise DriverLineError(
        f"{key!r} is neither a MIOpenDriver line nor a find-db or perf-db key ({errors[0]})"
    )


def resolve(items: Sequence[tuple[int, str]]) -> list[ConvEntry | BnEntry | KeyOnlyEntry]:
    """Driver lines or db keys -> catalogue entries, one or more per item, in order.

    A driver line is read as import_configs reads it (``parse_line``). Every item that is
    not understood is reported at once.
    """
    entries: list[ConvEntry | BnEntry | KeyOnlyEntry] = []
    bad: list[DriverLineError] = []
    for no, text in items:
        try:
            if is_db_key_text(text):
                entries.append(_key_entry(text, no))
                continue
            kind = line_kind(text)
            if kind not in ("conv", "bnorm"):
                raise DriverLineError(f"{kind!r} problems are not in the catalogue")
            entries.extend(parse_line(text, line_no=no, kind=kind))
        except DriverLineError as e:
            bad.append(e.at_line(no, text))
        except TunaError as e:
            bad.append(DriverLineError(str(e), line_no=no, line=text))
    if bad:
        listing = "\n".join(f"  {e}" for e in bad)
        raise TunaError(f"{len(bad)} query line(s) not understood:\n{listing}")
    return entries


def query_configs(db: Database, items: Sequence[tuple[int, str]]) -> list[ConfigReport]:
    entries = resolve(items)
    reports: list[ConfigReport] = []
    with db.session() as session:
        for e in entries:
            if isinstance(e, KeyOnlyEntry):
                reports.append(_key_only_report(session, e))
                continue
            if isinstance(e, BnEntry):
                report = ConfigReport(e.line_no, "bnorm", e.key, None, e.driver)
                bn = session.scalars(select(BnConfig).where(BnConfig.bn_key == e.key)).first()
                if bn is not None:
                    report.config_id = bn.id
                    report.driver = bn.driver
                    report.tags = list(
                        session.scalars(
                            select(BnConfigTag.tag)
                            .where(BnConfigTag.config == bn.id)
                            .order_by(BnConfigTag.tag)
                        )
                    )
                reports.append(report)
                continue
            report = ConfigReport(e.line_no, "conv", e.key, perf_db_key(e.problem), e.driver)
            cfg = session.scalars(select(ConvConfig).where(ConvConfig.fdb_key == e.key)).first()
            if cfg is not None:
                report.config_id = cfg.id
                report.driver = cfg.driver or None
                report.tags = list(
                    session.scalars(
                        select(ConfigTag.tag)
                        .where(ConfigTag.config == cfg.id)
                        .order_by(ConfigTag.tag)
                    )
                )
                report.jobs = [
                    JobRow(
                        j.id,
                        j.session,
                        name,
                        j.step.value,
                        j.state.value,
                        j.attempt,
                        j.retries,
                        j.reason or j.result,
                    )
                    for j, name in session.execute(
                        select(Job, Solver.name)
                        .join(Solver, Solver.id == Job.solver)
                        .where(Job.config == cfg.id)
                        .order_by(Job.session, Job.id)
                    )
                ]
                report.perf = [
                    PerfRow(p.session, name, p.params)
                    for p, name in session.execute(
                        select(PerfDb, Solver.name)
                        .join(Solver, Solver.id == PerfDb.solver)
                        .where(PerfDb.config == cfg.id)
                        .order_by(PerfDb.session, Solver.name)
                    )
                ]
                report.find = [
                    FindRow(f.session, name, f.time_ms, f.workspace, f.algorithm)
                    for f, name in session.execute(
                        select(FindDb, Solver.name)
                        .join(Solver, Solver.id == FindDb.solver)
                        .where(FindDb.config == cfg.id)
                        .order_by(FindDb.session, FindDb.time_ms)
                    )
                ]
            reports.append(report)
    return reports


def _key_only_report(session: Session, e: KeyOnlyEntry) -> ConfigReport:
    report = ConfigReport(e.line_no, "conv", e.key, None, None, key_only=True,
                          key_only_reason=e.reason)  # fmt: skip
    q = (
        select(KeyOnlyRecord.session, KeyOnlyRecord.entries)
        .where(KeyOnlyRecord.fdb_key == e.key)
        .order_by(KeyOnlyRecord.session)
    )
    for sid, text in session.execute(q):
        # v2.0 entries, checked when they were imported: solver:time,workspace,algorithm
        for solver, values in parse_text_db_line(f"{e.key}={text}")[1]:
            time_ms, workspace, algorithm = values.split(",")
            report.find.append(FindRow(sid, solver, float(time_ms), int(workspace), algorithm))
    return report


__all__ = [
    "KeyOnlyEntry",
    "is_db_key_text",
    "ConfigReport",
    "FindRow",
    "JobRow",
    "PerfRow",
    "find_db_key",
    "query_configs",
    "resolve",
]
