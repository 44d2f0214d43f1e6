"""Every console example of the README and the docs runs against the real commands and prints
what the page shows, unless the page marks it illustrative and says why (a real run's
timings, the test cluster, a terminal's tables): ``<!-- illustrative: REASON -->`` right
above the block.

Each page's checked blocks run in order in one sandbox (a fresh embedded database, a working
directory holding the inputs they name: the sample networks, tests/data/docs and a copy of
examples/), through click's runner, so a later block sees what an earlier one made. A ``...``
line of the shown output stands for any lines; the database's URL is compared as
``sqlite:///<db>``. A block that reads data no command of the page makes names the test
helper that makes it (``<!-- console-setup: module:function -->``, tests/support/docs.py).
"""

from __future__ import annotations

import importlib
import re
import shlex
import shutil
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.databases import copy_sqlite_template
from tests.support.docs import REPO, ConsoleBlock, console_blocks, pages
from tests.support.seed import open_test_db
from tuna.cli import main

STANDALONE = {"import_configs", "query_db", "load_jobs", "load_job", "export_db", "import_db",
              "merge_db", "update_golden", "go_fish"}  # fmt: skip
INPUTS = REPO / "tests" / "data" / "docs"
_URL = re.compile(r"sqlite:///\S*?tuna\.db")

BLOCKS = console_blocks()  # README.md and docs/**/*.md
CHECKED = [b for b in BLOCKS if b.illustrative is None]
PAGES = sorted({b.path for b in CHECKED})


def test_blocks_are_found_and_every_illustrative_one_says_why() -> None:
    assert len(BLOCKS) > 20
    assert len(CHECKED) >= 4
    for block in BLOCKS:
        assert block.illustrative is None or len(block.illustrative.strip()) > 10, block.where


def _words(line: str) -> list[str]:
    words = shlex.split(line, comments=True)
    if words and words[0] == "tuna":
        return words[1:]
    assert words and words[0] in STANDALONE, f"a checked block runs Tuna's commands only: {line}"
    return words


def _matches(shown: list[str], printed: list[str]) -> bool:
    pattern = "".join(
        r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line.rstrip()) + r"\n"
        for line in shown
    )
    text = "".join(line.rstrip() + "\n" for line in printed)
    return re.fullmatch(pattern, text) is not None


def _sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("TUNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")
    copy_sqlite_template(tmp_path / "data" / "tuna.db")
    work = tmp_path / "work"
    work.mkdir()
    samples = resources.files("tuna.catalog.samples")
    (work / "resnet50.txt").write_text(samples.joinpath("resnet50.txt").read_text())
    for source in INPUTS.iterdir():
        shutil.copy(source, work / source.name)
    shutil.copytree(REPO / "examples", work / "examples")
    monkeypatch.chdir(work)
    return CliRunner()


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_console_example_prints_what_the_page_shows(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _sandbox(tmp_path, monkeypatch)
    blocks: list[ConsoleBlock] = [b for b in CHECKED if b.path == path]
    for block in blocks:
        if block.setup:
            module, _, function = block.setup.partition(":")
            db = open_test_db(f"sqlite:///{tmp_path / 'data' / 'tuna.db'}")
            try:
                getattr(importlib.import_module(module), function)(db)
            finally:
                db.dispose()
        for line, shown in block.steps():
            result = runner.invoke(main, _words(line))
            printed = _URL.sub("sqlite:///<db>", result.output).splitlines()
            shown = [_URL.sub("sqlite:///<db>", s) for s in shown]
            assert _matches(shown, printed), (
                f"{block.where}: `{line}` printed (exit {result.exit_code}):\n"
                + "\n".join(printed)
                + "\n--- the page shows:\n"
                + "\n".join(shown)
            )


_TUNE = re.compile(
    r"```python\n((?:import \w+\n+)*import tuna\n[^`]*?tuna\.(?:tune|study)\([^`]*?)```\s*"
    r"It prints `([^`]+)`",
    re.S,
)
TUNE_EXAMPLES = [(p, m) for p in pages() for m in _TUNE.finditer(p.read_text())]


@pytest.mark.parametrize("path", sorted({p for p, _ in TUNE_EXAMPLES}), ids=str)
def test_every_tuna_tune_example_prints_what_the_page_says(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``tuna.tune`` example, run as a user would paste it (the default database in a data
    directory of its own), prints the line the page says it prints."""
    monkeypatch.setenv("TUNA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    for _, m in [(p, m) for p, m in TUNE_EXAMPLES if p == path]:
        exec(compile(m.group(1), str(path), "exec"), {})  # noqa: S102
        assert capsys.readouterr().out.strip() == m.group(2), f"{path}: {m.group(2)}"


def test_the_tuna_tune_and_tuna_study_examples_are_found() -> None:
    """The examples above are matched by a pattern: one that stopped matching would pass."""
    calls = [m.group(1) for _, m in TUNE_EXAMPLES]
    assert any("tuna.tune(" in c for c in calls) and any("tuna.study(" in c for c in calls)
