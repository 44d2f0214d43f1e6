"""Every command documents itself with an example, and the documented commands still exist.

In the spirit of sqlite-utils' ``tests/test_docs.py``: walking the click tree finds a command
whose ``--help`` lacks an example, and every ``$ command ...`` line of the README and the docs
pages (tests/support/docs.py) must name a command that exists, with options it declares.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.support import docs
from tuna.cli import main

REPO = Path(__file__).resolve().parents[2]
README = "\n".join(p.read_text() for p in docs.pages())  # every page a user reads
SCRIPTS = {
    e.name: e.value for e in entry_points(group="console_scripts") if e.value.startswith("tuna.")
}


def _walk(
    cmd: click.Command, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name, sub in sorted(cmd.commands.items()):
            yield from _walk(sub, (*path, name))


COMMANDS = dict(_walk(main, ()))


def _help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(main, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=lambda p: " ".join(("tuna", *p)))
def test_every_commands_help_has_an_example(path: tuple[str, ...]) -> None:
    text = _help(path)
    heading = re.search(r"(?im)^\s*examples?:?\s*$", text)
    assert heading, f"`tuna {' '.join(path)} --help` has no Example(s) section:\n{text}"
    after = text[heading.end() :]
    # An example is a command line of this command: `tuna db upgrade`, `go_fish --session 1`.
    names = {" ".join(("tuna", *path))} | {s for s, t in SCRIPTS.items() if _script_path(t) == path}
    assert any(re.search(rf"(?m)^\s+(\S+=\S+\s+)*{re.escape(n)}\b", after) for n in names), (
        f"the examples of `tuna {' '.join(path)} --help` show none of {sorted(names)}:\n{text}"
    )


def _script_path(target: str) -> tuple[str, ...] | None:
    """The click path of a console script (``tuna.cli.go_fish:go_fish_main`` -> ``go_fish``)."""
    if target == "tuna.cli:main":
        return ()
    name = target.rsplit(":", 1)[1].removesuffix("_main")
    return (name,) if (name,) in COMMANDS else None


def _readme_commands() -> list[tuple[str, list[str]]]:
    """``$ ...`` lines of the README's code blocks (continuations joined), split like a shell."""
    out = []
    lines = README.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            text = line[2:]
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            words = shlex.split(text, comments=True)
            if words and (words[0] in SCRIPTS or words[0] in ("tuna", "bin/tuna")):
                out.append((text, words))
        i += 1
    return out


README_COMMANDS = _readme_commands()


def _resolve(words: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """The click path a README command line names and the rest of its words."""
    first, rest = words[0], words[1:]
    path: tuple[str, ...] = ()
    if first not in ("tuna", "bin/tuna"):
        found = _script_path(SCRIPTS[first])
        assert found is not None, f"console script {first} names no tuna command"
        path = found
    while rest and (*path, rest[0]) in COMMANDS:
        path, rest = (*path, rest[0]), rest[1:]
    return path, rest


def test_the_readme_shows_commands() -> None:
    assert len(README_COMMANDS) >= 20, "the README's `$ command` lines were not found"


@pytest.mark.parametrize(("text", "words"), README_COMMANDS, ids=[t for t, _ in README_COMMANDS])
def test_every_readme_command_exists_with_its_options(text: str, words: list[str]) -> None:
    path, rest = _resolve(words)
    assert path, f"README: `{text}` names no tuna command"
    cmd = COMMANDS[path]
    assert not isinstance(cmd, click.Group), f"README: `{text}` stops at a group"
    declared = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    used = {w.split("=", 1)[0] for w in rest if w.startswith("-") and w != "-"}
    assert used <= declared, f"README: `{text}` uses {sorted(used - declared)}, not options"
    _help(path)
