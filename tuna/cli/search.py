"""``tuna search``: benchmark searches over the job queue.

The group only; each side keeps its commands in its own module: :mod:`.search_drive`
(``create``, ``run``: the driver), :mod:`.search_view` (``list``, ``show``) and
:mod:`.search_validate` (``validate``: the front on a second input set).
"""

from __future__ import annotations

import click

from tuna.cli.base import TunaGroup
from tuna.cli.search_drive import create_cmd, run_cmd
from tuna.cli.search_validate import validate_cmd
from tuna.cli.search_view import list_cmd, show_cmd


@click.group("search", cls=TunaGroup)
def search_group() -> None:
    """Searches: a parameter space, a searcher and an objective, measured as jobs.

    A search takes a parameter file (JSON, or Python with META_ hooks), a base config the
    points override, a searcher, an objective, and the bench backend's build and run
    commands. `go_fish --search` (or any evaluation) drives it on the workers; `tuna search
    run` drives it alone while workers run elsewhere.

    \b
    Examples:
      tuna search create params.py -s 3 --name flags --run './bench {n}' \\
          --build 'cc -O2 -DTILE={tile} -o bench bench.c' --source . --objective gflops --maximize
      go_fish -s 3 --search --local -w 4
      tuna search run -s 3
      tuna search list -s 3
      tuna search show 4 --best
      tuna search validate 4 --objective-fn bench_fn:measure --png validation.png
    """


search_group.add_command(create_cmd)
search_group.add_command(run_cmd)
search_group.add_command(list_cmd)
search_group.add_command(show_cmd)
search_group.add_command(validate_cmd)
