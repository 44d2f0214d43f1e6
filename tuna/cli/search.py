"""``tuna search``: benchmark searches over the job queue."""

from __future__ import annotations

import click

from tuna.cli.base import TunaGroup
from tuna.cli.search_view import list_cmd, show_cmd


@click.group("search", cls=TunaGroup)
def search_group() -> None:
    """Searches: a parameter space, a searcher and an objective, measured as jobs.

    \b
    Examples:
      tuna search list -s 3
      tuna search show 4 --best
    """


search_group.add_command(list_cmd)
search_group.add_command(show_cmd)
