"""``tuna db``: schema revisions of the database."""

from __future__ import annotations

from pathlib import Path

import click

from tuna.cli.base import TunaGroup, console
from tuna.config import load_settings
from tuna.db import Database, migrate
from tuna.errors import TunaError


@click.group("db", cls=TunaGroup)
def db_group() -> None:
    """Create, migrate and inspect the database schema.

    \b
    Examples:
      tuna db upgrade            # create or migrate the schema to this Tuna's revision
      tuna db current            # which revision the database is at
      tuna db schema -o schema.sql
    """


@db_group.command("upgrade")
def upgrade() -> None:
    """Migrate the database to the head revision (creates the tables on an empty one).

    \b
    Example:
      TUNA_DB_URL=mysql+pymysql://tuna:***@head:3306/tuna tuna db upgrade
    """
    db = Database(load_settings().db_url)
    try:
        with db.engine.connect() as conn:
            before = migrate.current_revision(conn)
            migrate.upgrade(conn)
            conn.commit()
            after = migrate.current_revision(conn)
    finally:
        db.dispose()
    if before == after:
        console.print(f"{db.url_masked}: already at revision {after}", markup=False)
    else:
        console.print(f"{db.url_masked}: upgraded {before or '(empty)'} -> {after}", markup=False)


@db_group.command("current")
def current() -> None:
    """Show the database's schema revision and the one this Tuna needs.

    \b
    Example:
      tuna db current
    """
    db = Database(load_settings().db_url)
    try:
        with db.engine.connect() as conn:
            rev = migrate.current_revision(conn)
    finally:
        db.dispose()
    head = migrate.head_revision()
    state = "up to date" if rev == head else "needs `tuna db upgrade`"
    console.print(
        f"{db.url_masked}: revision {rev or '(none)'}, head {head} ({state})", markup=False
    )


@db_group.command("schema")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the DDL to this file instead of stdout.",
)
@click.option(
    "--check",
    "check",
    is_flag=True,
    help="Fail if the file given with -o differs from the generated DDL.",
)
def schema(output: Path | None, check: bool) -> None:
    """Print the MySQL DDL of the head revision (what schema.sql holds).

    \b
    Examples:
      tuna db schema -o schema.sql          # regenerate schema.sql after a migration
      tuna db schema -o schema.sql --check  # CI: is schema.sql current?
    """
    ddl = migrate.schema_sql()
    if check:
        if output is None:
            raise TunaError("--check needs -o FILE to compare against")
        if not output.is_file() or output.read_text() != ddl:
            raise TunaError(f"{output} is stale; regenerate it with `tuna db schema -o {output}`")
        console.print(f"{output} is current", markup=False)
        return
    if output is None:
        click.echo(ddl, nl=False)
    else:
        output.write_text(ddl)
        console.print(f"wrote {output}")
