"""Every command line the user is shown works: each command's --help examples and every
``$`` line of the console blocks of the README and the docs pages (tests/support/docs.py)
are parsed by the real commands (options, values, required options), and the CSV headers
they show are the real ones (tests/docs/test_console.py runs the blocks that are not
illustrative and compares all they print).

Parsing (click's ``make_context``) runs no command, so the test stays fast; the output the
pages show for CSV listings is checked by running them on a seeded SQLite database. A
line that is not Tuna's (``cat``, ``kill``, ``xdg-open``, ``mysql``...) is skipped by name.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

import click
import pytest

from tests.support import docs
from tuna.cli import main

STANDALONE = {"import_configs", "load_job", "load_jobs", "query_db", "export_db", "import_db",
              "merge_db", "update_golden", "go_fish"}  # fmt: skip


def _commands(
    group: click.Group = main, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, cmd in sorted(group.commands.items()):
        yield (*path, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))


def _examples(cmd: click.Command) -> list[str]:
    text = cmd.help or ""
    _, found, rest = text.partition("Examples:")
    if not found:
        return []
    lines: list[str] = []
    for line in rest.splitlines()[1:]:
        if not line.strip():
            if lines:
                break
            continue
        if lines and lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1] + line.strip()
        else:
            lines.append(line.strip())
    return lines


def _words(line: str) -> list[str] | None:
    """A Tuna command line's words after the program (None: not a Tuna command)."""
    words = shlex.split(line, comments=True)
    for stop in ("|", ">", "2>&1", "&&", ";", "&"):
        if stop in words:
            words = words[: words.index(stop)]
    while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
        words = words[1:]
    if not words:
        return None
    if words[0] == "tuna":
        return words[1:]
    if words[0] in STANDALONE:
        return words
    return None


def check(words: list[str]) -> None:
    """Parse ``words`` as the real command would, without running it."""
    cmd: click.Command = main
    ctx = click.Context(main, info_name="tuna")
    while isinstance(cmd, click.Group):
        name, words = words[0], words[1:]
        assert name in cmd.commands, f"no command {name!r}"
        cmd = cmd.commands[name]
        ctx = click.Context(cmd, info_name=name, parent=ctx)
    cmd.make_context(cmd.name, list(words), parent=ctx.parent)


EXAMPLES = [(" ".join(path), line) for path, cmd in _commands() for line in _examples(cmd)]


def test_the_examples_were_found():
    assert len(EXAMPLES) > 100
    assert len({c for c, _ in EXAMPLES}) > 40


def test_no_help_example_runs_its_lines_together():
    """A single backslash at a line's end inside a docstring joins the lines in Python itself,
    so --help printed three lines of an example as one (issue #28's ranges example): every
    line of an Examples block fits a terminal."""
    long = [
        f"tuna {' '.join(path)}: {line.strip()[:60]}..."
        for path, cmd in _commands()
        for line in (cmd.help or "").partition("Examples:")[2].split("\n\n")[0].splitlines()
        if len(line) > 110
    ]
    assert not long, "example lines run together (write \\\\ at a line's end):\n" + "\n".join(long)


@pytest.mark.parametrize(("command", "line"), EXAMPLES, ids=[line for _, line in EXAMPLES])
def test_every_help_example_is_a_valid_command_line(command, line):
    words = _words(line)
    assert words is not None, f"{command} --help: {line!r} is not a Tuna command line"
    try:
        check(words)
    except click.BadParameter as e:
        if "does not exist" not in e.format_message():  # the user's own file: not ours
            pytest.fail(f"{command} --help example {line!r}: {e.format_message()}")
    except click.ClickException as e:
        pytest.fail(f"{command} --help example {line!r}: {e.format_message()}")


BLOCKS = docs.console_blocks()  # README.md and docs/**/*.md
# Lines of other programs (cat, kill, export, a browser) are the reader's own, not Tuna's.
DOC_LINES = [
    (b.where, line, words)
    for b in BLOCKS
    for line, _ in b.steps()
    if (words := _words(line)) is not None
]


def test_the_docs_console_lines_were_found():
    assert len(DOC_LINES) > 50


@pytest.mark.parametrize(
    ("where", "line", "words"), DOC_LINES, ids=[f"{w} {line}" for w, line, _ in DOC_LINES]
)
def test_every_console_line_of_the_docs_is_a_valid_command_line(where, line, words):
    try:
        check(words)
    except click.BadParameter as e:
        if "does not exist" not in e.format_message():
            pytest.fail(f"{where}: {line!r}: {e.format_message()}")
    except click.ClickException as e:
        pytest.fail(f"{where}: {line!r}: {e.format_message()}")


# The listings whose CSV the seed below can produce.
SEEDED = ("$ tuna session list", "$ tuna jobs status", "$ tuna solvers list")


def test_the_documented_csv_headers_are_the_real_ones(runner, tmp_path):
    """Each `$ tuna ... --csv` line of the README and the docs is run on a database with a
    session and its jobs; the header line the page shows must be the one printed."""
    lines = tmp_path / "net.txt"
    lines.write_text("MIOpenDriver conv -n 2 -c 4 -H 8 -W 8 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1\n")
    for args in (
        ["import_configs", "-t", "net", "-f", str(lines)],
        ["session", "create", "--arch", "cpu", "--num-cu", "2", "--backend", "noop"],
        ["load_jobs", "-t", "net", "--session", "1", "--step", "perf"],
    ):
        assert runner.invoke(main, args).exit_code == 0
    checked = 0
    for block in BLOCKS:
        at, shown = block.where, block.text.splitlines()
        for i, line in enumerate(shown):
            if not (line.startswith(SEEDED) and "--csv" in line.split("#")[0]):
                continue  # needs data the seed does not make (a search, machines)
            if i + 1 >= len(shown) or shown[i + 1].startswith("$ "):
                continue  # no output shown
            words = _words(line[2:])
            assert words is not None
            words = [("1" if w.isdigit() and words[j - 1] in ("-s", "--session") else w)
                     for j, w in enumerate(words)]  # fmt: skip
            result = runner.invoke(main, words)
            assert result.exit_code == 0, f"{at}: {line}: {result.output}"
            assert result.output.splitlines()[0] == shown[i + 1], f"{at}: {line}"
            checked += 1
    assert checked >= 2
