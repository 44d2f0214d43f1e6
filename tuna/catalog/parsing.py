"""Driver lines -> catalogue entries: parsing, overrides and deduplication (no database).

A line becomes one entry per direction (and per batch size with ``-b``), keyed by MIOpen's
find-db key (conv) or Tuna's bn key (batch norm). Lines of other MIOpenDriver operations
(pool, lrn, ...) are counted and skipped; a bad line becomes a ``DriverLineError`` located at
its line number.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from tuna.errors import DriverLineError, TunaError
from tuna.problems.bnorm import BnProblem, bnorm_key, parse_bnorm_line
from tuna.problems.conv import ConvProblem, InvalidProblemError
from tuna.problems.driver import line_kind, parse_driver_line, to_driver_line
from tuna.problems.keys import find_db_key

COMMANDS = ("conv", "convfp16", "convbfp16", "convint8")
KEY_MAX = 255
"""The longest key the catalogue stores (``conv_config.fdb_key``, ``bn_config.bn_key``)."""
TAG_MAX = 128
"""The longest tag (``config_tag.tag``)."""


@dataclass(frozen=True)
class ConvEntry:
    """A conv problem for the catalogue; ``driver`` is None when no MIOpenDriver line gives it
    (a db key's INT8 types or "same" padding)."""

    key: str
    problem: ConvProblem
    driver: str | None
    line_no: int


def key_entry(problem: ConvProblem, line_no: int = 0, *, key: str | None = None) -> ConvEntry:
    """The entry of a problem read from a db key (``key``, its find-db key, when the caller
    has it already): its driver line where it has one."""
    try:
        driver: str | None = to_driver_line(problem)
    except InvalidProblemError:
        driver = None
    return ConvEntry(key or find_db_key(problem), problem, driver, line_no)


def check_tag(tag: str | None) -> None:
    """``TunaError`` for a tag the catalogue cannot store."""
    if tag is not None and not 0 < len(tag) <= TAG_MAX:
        raise TunaError(f"-t/--tag: a tag has 1 to {TAG_MAX} characters, not {len(tag)}")


@dataclass(frozen=True)
class BnEntry:
    key: str
    problem: BnProblem
    driver: str
    line_no: int


Entry = ConvEntry | BnEntry


def read_lines(text: str) -> list[tuple[int, str]]:
    """Number the lines of ``text`` from 1, dropping blank lines and ``#`` comments."""
    out = []
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append((no, line))
    return out


def parse_line(
    line: str,
    *,
    batches: Sequence[int] | None = None,
    command: str | None = None,
    line_no: int = 0,
    kind: str | None = None,
    warnings: list[str] | None = None,
) -> list[Entry]:
    """The catalogue entries one conv or batch-norm driver line describes (after overrides).

    ``kind`` is the line's :func:`line_kind` when the caller knows it already; what the
    parser dropped from the line is said in ``warnings``, if given. ``DriverLineError`` for
    a key longer than the catalogue stores.
    """
    if (kind or line_kind(line)) == "bnorm":
        bn = parse_bnorm_line(line)
        bns = [bn] if not batches else [bn.with_batchsize(n) for n in batches]
        return [
            BnEntry(bnorm_key(p), p, line if p == bn else p.to_driver_line(), line_no) for p in bns
        ]
    entries: list[Entry] = []
    for parsed in parse_driver_line(line, warnings):
        variants = [parsed]
        if command:
            variants = [p.with_command(command) for p in variants]
        if batches:
            variants = [p.with_batchsize(n) for p in variants for n in batches]
        for p in variants:
            driver = line if p == parsed else to_driver_line(p)
            key = find_db_key(p)
            if len(key) > KEY_MAX:
                raise DriverLineError(
                    f"its find-db key has {len(key)} characters; the catalogue stores keys of "
                    f"up to {KEY_MAX}"
                )
            entries.append(ConvEntry(key, p, driver, line_no))
    return entries


@contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector (nests; restores what it found).

    An import allocates hundreds of thousands of long-lived objects and no cycles: the
    collector's full passes over them cost ~15% of a large import and find nothing.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


class LineParser:
    """Parses numbered lines in as many calls as the caller likes, keeping the state that
    spans them: keys seen (the first occurrence of a key wins), bad lines, skipped lines."""

    def __init__(self, *, batches: Sequence[int] | None = None, command: str | None = None) -> None:
        if command is not None and command not in COMMANDS:
            raise TunaError(f"-c/--command: {command!r} is not one of {', '.join(COMMANDS)}")
        self.batches = batches
        self.command = command
        self.entries: dict[str, Entry] = {}
        self.bad: list[DriverLineError] = []
        self.skipped: dict[str, int] = {}
        self.warnings: list[str] = []  # "line N: what was dropped from it"

    def feed(self, lines: Iterable[tuple[int, str]]) -> list[Entry]:
        """Parse more lines; returns the entries whose keys were not seen before."""
        new: list[Entry] = []
        with without_cyclic_gc():
            for no, line in lines:
                try:
                    kind = line_kind(line)
                    if kind not in ("conv", "bnorm"):
                        self.skipped[kind] = self.skipped.get(kind, 0) + 1
                        continue
                    said: list[str] = []
                    found = parse_line(
                        line,
                        batches=self.batches,
                        command=self.command,
                        line_no=no,
                        kind=kind,
                        warnings=said,
                    )
                    if said:
                        self.warnings += [f"line {no}: {w}" for w in said]
                except DriverLineError as e:
                    self.bad.append(e.at_line(no, line))
                    continue
                except TunaError as e:
                    self.bad.append(DriverLineError(str(e), line_no=no, line=line))
                    continue
                for entry in found:
                    if entry.key not in self.entries:
                        self.entries[entry.key] = entry
                        new.append(entry)
        return new


@dataclass
class Parsed:
    """Numbered lines, parsed: entries (first occurrence of each key wins), one error per bad
    line, and the count of lines of other operations (pool, lrn, ...) that Tuna does not tune."""

    entries: list[Entry]
    bad: list[DriverLineError]
    skipped: dict[str, int]


def parse_lines(
    lines: Iterable[tuple[int, str]],
    *,
    batches: Sequence[int] | None = None,
    command: str | None = None,
) -> Parsed:
    parser = LineParser(batches=batches, command=command)
    parser.feed(lines)
    return Parsed(list(parser.entries.values()), parser.bad, parser.skipped)
