"""MkDocs hooks: the reference pages that are generated, so they cannot drift.

- ``<!-- generated: cli -->`` becomes every command's ``--help``, taken from the click
  commands themselves (``tuna.cli.main``, the names users type included);
- ``<!-- generated: schema -->`` becomes every table of ``tuna/db/tables.py`` (the one
  definition the migrations are checked against): columns, types as MySQL spells them,
  keys, indexes, and the source's comments on each table and column;
- ``<!-- generated: docstring MODULE -->`` becomes that module's docstring (a backend's
  settings);
- ``<!-- include: bench/search.md#Figures -->`` becomes that section of the file, as it is
  today (the benchmarks' figures stay in bench/, quoted where they explain something);
- ``<!-- include-header: docker/compose.head.yml -->`` becomes that file's leading comment
  block (how to use it, kept in the file);
- ``<!-- generated: bench -->`` becomes the list of ``bench/*.md``, each of which is added to
  the site as a page of its own, under a Benchmarks tab (``bench/`` stays their one home).

mkdocs.yml names this file under ``hooks:``; it is excluded from the pages (``_gen/``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

REPO = Path(__file__).resolve().parents[2]
WIDTH = 100


# --- commands --------------------------------------------------------------------------------


def _walk(cmd: click.Command, path: tuple[str, ...], parent: click.Context | None):
    ctx = click.Context(
        cmd, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH
    )
    yield path, cmd, ctx
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.list_commands(ctx)):
            sub = cmd.get_command(ctx, name)
            if sub is not None:
                yield from _walk(sub, (*path, name), ctx)


def cli_markdown() -> str:
    from tuna.cli import main

    out = []
    for path, cmd, ctx in _walk(main, ("tuna",), None):
        name = " ".join(path)
        hidden = " (MITuna's name)" if getattr(cmd, "hidden", False) else ""
        out.append(f"## `{name}`{hidden}\n")
        out.append("```text\n" + cmd.get_help(ctx).rstrip() + "\n```\n")
    return "\n".join(out)


# --- schema ----------------------------------------------------------------------------------

_TABLE = re.compile(r"^(\w+) = Table\(")
_COLUMN = re.compile(r'^\s+Column\("(\w+)"')


def _comments() -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """The comments of tuna/db/tables.py: above each table, and above or beside each column."""
    tables: dict[str, str] = {}
    columns: dict[tuple[str, str], str] = {}
    pending: list[str] = []
    current = None
    for line in (REPO / "tuna" / "db" / "tables.py").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("#").strip())
            continue
        if m := _TABLE.match(line):
            current = m.group(1)
            tables[current] = " ".join(pending)
        elif current and (m := _COLUMN.match(line)):
            beside = line.split("  # ", 1)[1].strip() if "  # " in line else ""
            columns[(current, m.group(1))] = " ".join([*pending, beside]).strip()
        elif not stripped:
            current = None if line == "" and current is None else current
        pending = []
    return tables, columns


def schema_markdown() -> str:
    from sqlalchemy.dialects import mysql

    from tuna.db.tables import metadata

    dialect = mysql.dialect()
    table_notes, column_notes = _comments()
    out = []
    for table in sorted(metadata.sorted_tables, key=lambda t: t.name):
        out.append(f"### `{table.name}`\n")
        if table_notes.get(table.name):
            out.append(table_notes[table.name] + "\n")
        out.append("| column | type | null | default | references | notes |")
        out.append("| --- | --- | --- | --- | --- | --- |")
        for col in table.columns:
            kind = col.type.compile(dialect=dialect)
            pk = " (primary key)" if col.primary_key else ""
            default = ""
            if col.server_default is not None:
                default = str(getattr(col.server_default, "arg", col.server_default))
            refs = ", ".join(f"`{fk.target_fullname}`" for fk in col.foreign_keys)
            note = column_notes.get((table.name, col.name), "").replace("|", "\\|")
            null = "yes" if col.nullable else "no"
            out.append(f"| `{col.name}`{pk} | {kind} | {null} | {default} | {refs} | {note} |")
        keys = []
        for c in sorted(table.constraints, key=lambda c: str(c.name)):
            if c.__class__.__name__ == "UniqueConstraint":
                keys.append(f"unique `{c.name}` ({', '.join(col.name for col in c.columns)})")
        for ix in sorted(table.indexes, key=lambda i: str(i.name)):
            what = "unique index" if ix.unique else "index"
            cols = ", ".join(getattr(e, "name", str(e)) for e in ix.expressions)
            keys.append(f"{what} `{ix.name}` ({cols})")
        if keys:
            out.append("\nKeys: " + "; ".join(keys) + ".")
        out.append("")
    return "\n".join(out)


# --- benchmarks ------------------------------------------------------------------------------


def _bench_pages() -> list[Path]:
    return sorted((REPO / "bench").glob("*.md"))


def bench_markdown() -> str:
    out = []
    for page in _bench_pages():
        out.append(f"- [`bench/{page.name}`](../bench/{page.name}): {_title(page)}")
    return "\n".join(out) + "\n"


def docstring_markdown(module: str) -> str:
    """A module's docstring, as written (a settings table in RST stays readable as text)."""
    import importlib
    import inspect

    return "```text\n" + inspect.cleandoc(importlib.import_module(module).__doc__ or "") + "\n```\n"


def include_markdown(spec: str, page: Any) -> str:
    """A section of a repo file (``bench/search.md#Figures``: its ``## Figures``, down to the
    next heading of that level), its relative links made relative to the including page."""
    path, _, heading = spec.partition("#")
    text = (REPO / path).read_text()
    start = re.search(rf"^(#+) {re.escape(heading)}\n", text, re.M)
    if start is None:
        raise ValueError(f"{page.file.src_uri}: {path} has no heading {heading!r}")
    level = len(start.group(1))
    rest = text[start.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.M)
    body = rest[: end.start()] if end else rest
    depth = page.file.src_uri.count("/")
    base = "../" * depth + str(Path(path).parent) + "/"
    return re.sub(r"\]\((?!https?:|/|#)([^)]+)\)", lambda m: f"]({base}{m.group(1)})", body)


def header_markdown(path: str) -> str:
    """A repo file's leading comment block (how to use the file, kept in the file itself)."""
    lines = []
    for line in (REPO / path).read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[2:] if line.startswith("# ") else line[1:])
    return "```text\n" + "\n".join(lines).strip() + "\n```\n"


GENERATED = {"cli": cli_markdown, "schema": schema_markdown, "bench": bench_markdown}


def on_config(config: Any) -> Any:
    """The benchmark pages get a tab of their own, whatever bench/ holds today."""
    pages = [{_title(p): f"bench/{p.name}"} for p in _bench_pages()]
    config["nav"].append({"Benchmarks": pages})
    return config


def _title(page: Path) -> str:
    return page.read_text().splitlines()[0].lstrip("# ").strip()


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for page in _bench_pages():
        files.append(File.generated(config, f"bench/{page.name}", content=page.read_text()))
    for image in sorted((REPO / "bench").glob("*.png")):
        files.append(File.generated(config, f"bench/{image.name}", content=image.read_bytes()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def expand(m: re.Match[str]) -> str:
        if m.group(1) == "docstring":
            return docstring_markdown(m.group(2))
        return GENERATED[m.group(1)]()

    markdown = re.sub(
        r"<!-- include: (\S+) -->", lambda m: include_markdown(m.group(1), page), markdown
    )
    markdown = re.sub(
        r"<!-- include-header: (\S+) -->", lambda m: header_markdown(m.group(1)), markdown
    )
    return re.sub(r"<!-- generated: (\w+) ?([\w.]*) -->", expand, markdown)
