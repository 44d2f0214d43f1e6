"""The docs site builds with warnings as errors (mkdocs.yml's validation: a broken link, a
missing anchor, a page left out of the navigation, a docstring mkdocstrings cannot read), and
its reference pages cover what they claim to: every command and every table (both generated),
every variable Tuna reads."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click

from tests.support.docs import REPO, page
from tuna.cli import main
from tuna.db.tables import metadata


def _commands(group: click.Group, path: tuple[str, ...]) -> list[str]:
    out = []
    for name in sorted(group.commands):
        cmd = group.commands[name]
        out.append(" ".join((*path, name)))
        if isinstance(cmd, click.Group):
            out += _commands(cmd, (*path, name))
    return out


def test_the_site_builds_strict_and_generates_every_command_and_table(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    cli = (site / "reference" / "cli" / "index.html").read_text()
    for name in _commands(main, ("tuna",)):
        assert f"<code>{name}</code>" in cli, f"{name} is not on the generated command page"
    schema = (site / "reference" / "schema" / "index.html").read_text()
    for table in metadata.tables:
        assert f"<code>{table}</code>" in schema, f"table {table} is not on the schema page"
    api = (site / "reference" / "api" / "index.html").read_text()
    assert "tuna.library.open" in api, "the API page lost tuna.library's docstrings"
    for bench in sorted((REPO / "bench").glob("*.md")):
        built = site / "bench" / ("" if bench.stem == "README" else bench.stem) / "index.html"
        assert built.is_file(), f"bench/{bench.name} is not a page of the site"


# A variable Tuna reads: os.environ["X"], os.environ.get("X"), env.get("X"), getenv("X"), and
# the names a module lists as settings ("TUNA_..." in a tuple).
_READ = re.compile(r"""["'](TUNA_[A-Z][A-Z0-9_]*)["']""")
_NOT_SETTINGS = {"TUNA_DB_"}  # a prefix matched, not a variable


def test_every_variable_tuna_reads_is_on_the_configuration_page() -> None:
    documented = page("reference/configuration.md")
    read = {
        name
        for source in (REPO / "tuna").rglob("*.py")
        for name in _READ.findall(source.read_text())
        if name not in _NOT_SETTINGS
    }
    assert len(read) > 15
    missing = sorted(name for name in read if f"`{name}`" not in documented)
    assert not missing, f"not on docs/reference/configuration.md: {missing}"


def test_the_readmes_links_name_files_of_the_repo() -> None:
    """README.md is not a page of the site (mkdocs checks those): its links are checked here."""
    readme = page("README.md")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert local, "README.md links nowhere into the docs"
    missing = [link for link in local if not (REPO / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_the_readme_is_short() -> None:
    """What Tuna is, the two commands, a taste of each way in, links: the rest is in docs/."""
    lines = page("README.md").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move the detail into docs/"
