"""The pages a user reads: README.md and the docs site's Markdown (docs/**/*.md), read as text.

One home for where the documentation is, so that a test that checks what the pages show
(commands, their options, their output, a section's table or queries) reads every page, and
a section that moves from one page to another moves for the tests too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"


def pages() -> list[Path]:
    """README.md, then every page of the site (not the hooks that generate pages)."""
    return [README, *sorted(p for p in DOCS.rglob("*.md") if "_gen" not in p.parts)]


def page(name: str) -> str:
    """A page's text by its path under docs/ (``how-to/mituna.md``), or ``README.md``."""
    return (README if name == "README.md" else DOCS / name).read_text()


def section(name: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line, e.g. ``## Plain SQL``) of a page, up
    to the next heading of the same or a higher level."""
    text = page(name)
    level = len(heading) - len(heading.lstrip("#"))
    _, found, rest = text.partition(heading + "\n")
    assert found, f"{name}: no heading {heading!r}"
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    return rest[: end.start()] if end else rest


def where(path: Path, line: int) -> str:
    return f"{path.relative_to(REPO)}:{line}"


@dataclass(frozen=True)
class ConsoleBlock:
    """A ```` ```console ```` block: its ``$`` command lines with the output shown under each.

    ``illustrative`` is the reason given by a ``<!-- illustrative: REASON -->`` line right
    above the block (its output is a real run's that a test cannot repeat: timings, a
    cluster, a terminal); None: the test runs the block and its output must match.
    ``setup`` names what makes the data the block reads: ``module:function`` of the tests,
    called with the sandbox's database, from a ``<!-- console-setup: MODULE:FUNCTION -->``
    line above the block.
    """

    path: Path
    line: int
    text: str
    illustrative: str | None
    setup: str | None = None

    @property
    def where(self) -> str:
        return where(self.path, self.line)

    def steps(self) -> list[tuple[str, list[str]]]:
        """(command line, the output lines shown under it), continuation lines joined."""
        steps: list[tuple[str, list[str]]] = []
        for line in self.text.splitlines():
            if steps and not steps[-1][1] and steps[-1][0].endswith("\\"):
                steps[-1] = (steps[-1][0][:-1] + " " + line.strip(), [])
            elif line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
        return steps


_BLOCK = re.compile(
    r"(?:<!-- console-setup: (?P<setup>\S+) -->\n)?(?:<!-- illustrative: (?P<why>.*?) -->\n)?"
    r"```console\n(?P<body>.*?)```",
    re.S,
)


def console_blocks(paths: list[Path] | None = None) -> list[ConsoleBlock]:
    out = []
    for path in pages() if paths is None else paths:
        text = path.read_text()
        for m in _BLOCK.finditer(text):
            at = text.count("\n", 0, m.start("body"))
            block = ConsoleBlock(path, at, m.group("body"), m.group("why"), m.group("setup"))
            out.append(block)
    return out
