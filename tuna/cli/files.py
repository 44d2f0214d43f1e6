"""Input files given on the command line, checked up front: a directory, a binary file or a
file that is not UTF-8 gets an ``Error:`` naming it, never a traceback or junk."""

from __future__ import annotations

import sys
from pathlib import Path

from tuna.errors import TunaError
from tuna.results.formats import SQLITE_MAGIC

DRIVER_LINES = "a file of MIOpenDriver lines"
_HEAD = 64 * 1024


def read_text_file(file: str, flag: str = "-f", what: str = DRIVER_LINES) -> str:
    """The text of ``file`` (``-`` reads stdin), which must be UTF-8 (ASCII is)."""
    if file == "-":
        return sys.stdin.read()
    path = Path(file)
    if path.is_dir():
        raise TunaError(f"{flag} {file}: is a directory; give {what}")
    if not path.is_file():
        raise TunaError(f"{flag} {file}: no such file")
    data = path.read_bytes()
    if b"\0" in data:
        raise TunaError(f"{flag} {file}: not a text file (it holds NUL bytes); give {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TunaError(
            f"{flag} {file}: line {line} is not UTF-8 text (byte 0x{data[e.start]:02x}); "
            "save it as UTF-8 or ASCII (MIOpenDriver lines are ASCII)"
        ) from e


def check_db_file(path: Path) -> None:
    """Refuse, before anything is parsed, what cannot be a text or SQLite find/perf db."""
    if path.is_dir():
        raise TunaError(f"{path}: is a directory; give MIOpen find or perf db files")
    if not path.is_file():
        return  # the reader says "no such file"
    with path.open("rb") as f:
        head = f.read(_HEAD)
    if head.startswith(SQLITE_MAGIC):
        return
    try:
        head.decode("utf-8")
        binary = b"\0" in head
    except UnicodeDecodeError as e:
        binary = e.start < len(head) - 3  # not just a character cut at the end of the head
    if binary:
        raise TunaError(
            f"{path}: not a text or SQLite find/perf db (it holds binary data); import_db reads "
            "*.fdb.txt, *.db.txt, *.pdb.txt text files and *.db, *.udb SQLite perf dbs"
        )
