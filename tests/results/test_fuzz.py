"""Random damage to the real lines the repo carries must be refused with a ``TunaError`` and
change nothing, or go through: never an uncaught exception (issue #12).

A seeded mutator (so a failure names a seed that reproduces it) damages real MIOpenDriver
lines, fed to ``import_configs`` and ``query_db``, and real find-db records, fed to
``import_db``, on SQLite and MariaDB. The mutations are the kinds that found crashes: values
past a C int, a BIGINT and 4,300 digits; keys and names past their columns; cut-short lines;
separators and case changes in the wrong places.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.support.data import DATA, MIOPEN_DATA
from tests.support.seed import make_session
from tuna.catalog.importer import import_configs
from tuna.catalog.query import query_configs
from tuna.db import Database
from tuna.db.models import (
    BnConfig,
    ConfigTag,
    ConvConfig,
    FindDb,
    PerfDb,
    Solver,
    Tensor,
    TuningSession,
)
from tuna.errors import TunaError
from tuna.results.importdb import import_db_files, read_db_file

ROUNDS = 25  # per test and dialect: a few seconds each
BATCH = 4  # lines per import

DRIVER_LINES = [
    line.strip()
    for path in sorted((DATA / "driver").glob("*.txt"))
    for line in path.read_text().splitlines()
    if line.strip()
]
FIND_LINES = [
    line
    for path in sorted(MIOPEN_DATA.glob("*.txt"))
    for line in path.read_text().splitlines()
    if line.strip()
]
NUMBERS = ["2147483647", "2147483648", "-2147483649", "9223372036854775808",
           "18446744073709551616", "9" * 5000, "0", "-1", "00", "1e999", "nan", ""]  # fmt: skip
JUNK = [";", ":", "=", ",", "-", "x", " ", "\t", "é", "\x00", "MIOpenDriver", "conv", "-t"]


def mutate(line: str, rng: random.Random) -> str:
    """One to three random kinds of damage."""
    for _ in range(rng.randint(1, 3)):
        tokens = line.split(" ") if " " in line else _fields(line)
        kind = rng.randrange(9)
        i = rng.randrange(len(tokens))
        if kind == 0:  # a number past a bound
            line = _numbers_replaced(line, rng)
        elif kind == 1:  # cut short
            line = line[: rng.randrange(len(line) + 1)]
        elif kind == 2:  # cut the front
            line = line[rng.randrange(len(line) + 1) :]
        elif kind == 3:  # a token dropped
            line = _join(line, tokens[:i] + tokens[i + 1 :])
        elif kind == 4:  # a token repeated
            line = _join(line, tokens[: i + 1] + tokens[i:])
        elif kind == 5:  # junk inserted
            at = rng.randrange(len(line) + 1)
            line = line[:at] + rng.choice(JUNK) + line[at:]
        elif kind == 6:  # a very long name or token
            line = _join(
                line, tokens[:i] + [tokens[i] * rng.choice([2, 30, 300])] + tokens[i + 1 :]
            )
        elif kind == 7:  # case swapped
            line = line.swapcase() if rng.random() < 0.3 else line.lower()
        else:  # a trailing flag with no value
            line = line + " " + rng.choice(["-t", "-F", "-n", "--pad_h", "-Z"])
    return line


def _fields(line: str) -> list[str]:
    return line.replace("=", "=\n").replace(";", ";\n").replace(",", ",\n").split("\n")


def _join(line: str, tokens: list[str]) -> str:
    return " ".join(tokens) if " " in line else "".join(tokens)


def _numbers_replaced(line: str, rng: random.Random) -> str:
    out, i = [], 0
    while i < len(line):
        if line[i].isdigit() and rng.random() < 0.15:
            j = i
            while j < len(line) and line[j].isdigit():
                j += 1
            out.append(rng.choice(NUMBERS))
            i = j
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def snapshot(db: Database) -> dict[str, int]:
    with db.session() as s:
        return {
            m.__table__.name: s.scalar(select(func.count()).select_from(m)) or 0
            for m in (TuningSession, Tensor, ConvConfig, BnConfig, ConfigTag, Solver, FindDb,
                      PerfDb)
        }  # fmt: skip


def refused_changes_nothing(db: Database, call: Callable[[], object], what: str) -> bool:
    """True if ``call`` went through; False if it was refused (having changed nothing). Any
    other exception fails the test, naming what was fed."""
    before = snapshot(db)
    try:
        call()
    except TunaError:
        assert snapshot(db) == before, f"a refused input changed the database: {what!r}"
        return False
    except Exception as e:
        raise AssertionError(f"uncaught {type(e).__name__} on {what!r}: {e}") from e
    return True


@pytest.mark.parametrize("seed", [12])
def test_damaged_driver_lines_are_refused_or_imported(db: Database, seed: int) -> None:
    rng = random.Random(seed)
    went = refused = 0
    for _ in range(ROUNDS):
        lines = [mutate(rng.choice(DRIVER_LINES), rng) for _ in range(BATCH)]
        numbered = list(enumerate(lines, start=1))
        tag = rng.choice(["net", "t" * 129, None])
        for skip in (False, True):
            ok = refused_changes_nothing(
                db,
                lambda: import_configs(db, numbered, tag=tag, skip_bad=skip),  # noqa: B023
                f"seed {seed}: import_configs {lines} tag={tag!r} skip_bad={skip}",
            )
            went, refused = went + ok, refused + (not ok)
        refused_changes_nothing(
            db,
            lambda: query_configs(db, numbered),  # noqa: B023
            f"seed {seed}: query_db {lines}",
        )
    assert went and refused  # the mutator makes both kinds, or it tests little


@pytest.mark.parametrize("seed", [12])
def test_damaged_find_db_records_are_refused_or_imported(
    db: Database, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    sid = make_session(db, backend="miopen")
    went = refused = 0
    for n in range(ROUNDS):
        lines = [mutate(rng.choice(FIND_LINES), rng) for _ in range(BATCH)]
        path = tmp_path / f"gfx90a68.{n}.HIP.fdb.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")
        what = f"seed {seed}: import_db {lines}"
        try:
            parsed = read_db_file(path)
        except TunaError:
            refused += 1
            continue
        except Exception as e:
            raise AssertionError(f"uncaught {type(e).__name__} reading {what!r}: {e}") from e
        for skip in (False, True):
            ok = refused_changes_nothing(
                db,
                lambda: import_db_files(db, sid, [parsed], skip_bad=skip),  # noqa: B023
                f"{what} skip_bad={skip}",
            )
            went, refused = went + ok, refused + (not ok)
    assert went and refused
