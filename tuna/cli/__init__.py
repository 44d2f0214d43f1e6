"""The ``tuna`` command and the names users already type (``import_configs``, ``query_db``)."""

from __future__ import annotations

import click

from tuna import __version__
from tuna.cli.base import TunaGroup, verbose_option
from tuna.cli.catalog import import_configs_cmd, query_db_cmd
from tuna.cli.db import db_group
from tuna.cli.go_fish import go_fish_cmd
from tuna.cli.jobs import jobs_group
from tuna.cli.load import load_jobs_cmd
from tuna.cli.machine import machine_group
from tuna.cli.quickstart import quickstart
from tuna.cli.report import report_cmd
from tuna.cli.results import export_db_cmd, import_db_cmd, merge_db_cmd, update_golden_cmd
from tuna.cli.session import session_group
from tuna.cli.solvers import applicability_group, solvers_group
from tuna.cli.worker import worker_cmd


@click.group(cls=TunaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tuna")
@verbose_option
def main() -> None:
    """Tuna: plan, dispatch, recover and export kernel tuning work.

    The database comes from TUNA_DB_URL (or TUNA_DB_HOSTNAME, TUNA_DB_NAME,
    TUNA_DB_USER_NAME, TUNA_DB_USER_PASSWORD); with none set, an embedded SQLite
    database in your data directory.

    \b
    Examples:
      tuna quickstart
      tuna import_configs -t resnet50 -f resnet50.txt
      tuna query_db -f resnet50.txt
      tuna db upgrade
    """


main.add_command(quickstart)
main.add_command(import_configs_cmd)
main.add_command(query_db_cmd)
main.add_command(db_group)
main.add_command(session_group)
main.add_command(solvers_group)
main.add_command(applicability_group)
main.add_command(load_jobs_cmd)
main.add_command(machine_group)
main.add_command(go_fish_cmd)
main.add_command(worker_cmd)
main.add_command(jobs_group)
main.add_command(export_db_cmd)
main.add_command(import_db_cmd)
main.add_command(merge_db_cmd)
main.add_command(update_golden_cmd)
main.add_command(report_cmd)
