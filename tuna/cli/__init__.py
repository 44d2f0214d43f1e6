"""The ``tuna`` command and the names users already type (``import_configs``, ``query_db``)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import click

from tuna import __version__
from tuna.cli.base import TunaGroup, verbose_option

# Each command's module is imported only when that command runs (or when --help lists
# them): a worker process started by go_fish needs no paramiko, Alembic or rich tables.
COMMANDS = {
    "quickstart": "tuna.cli.quickstart:quickstart",
    "import_configs": "tuna.cli.catalog:import_configs_cmd",
    "query_db": "tuna.cli.catalog:query_db_cmd",
    "db": "tuna.cli.db:db_group",
    "session": "tuna.cli.session:session_group",
    "solvers": "tuna.cli.solvers:solvers_group",
    "applicability": "tuna.cli.solvers:applicability_group",
    "load_jobs": "tuna.cli.load:load_jobs_cmd",
    "load_job": "tuna.cli.load:load_job_cmd",  # MITuna's name, hidden from the list
    "machine": "tuna.cli.machine:machine_group",
    "go_fish": "tuna.cli.go_fish:go_fish_cmd",
    "worker": "tuna.cli.worker:worker_cmd",
    "jobs": "tuna.cli.jobs:jobs_group",
    "export_db": "tuna.cli.results:export_db_cmd",
    "import_db": "tuna.cli.results:import_db_cmd",
    "merge_db": "tuna.cli.results:merge_db_cmd",
    "update_golden": "tuna.cli.results:update_golden_cmd",
    "report": "tuna.cli.report:report_cmd",
    "dashboard": "tuna.cli.dashboard:dashboard_cmd",
    "history": "tuna.cli.history:history_group",
    "best": "tuna.cli.history:best_cmd",
    "search": "tuna.cli.search:search_group",
}


class _LazyCommands(dict[str, click.Command]):
    """``Group.commands`` that imports a command's module when the command is looked up,
    and every one of them when the whole table is walked (``--help``, tests)."""

    def _load(self, name: str) -> click.Command:
        module, _, attr = COMMANDS[name].partition(":")
        cmd: click.Command = getattr(importlib.import_module(module), attr)
        super().__setitem__(name, cmd)
        return cmd

    def _load_all(self) -> None:
        for name in COMMANDS:
            if not super().__contains__(name):
                self._load(name)

    def __missing__(self, name: str) -> click.Command:
        if name in COMMANDS:
            return self._load(name)
        raise KeyError(name)

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self._load_all()
        return super().__iter__()

    def __len__(self) -> int:
        self._load_all()
        return super().__len__()

    def keys(self) -> Any:
        self._load_all()
        return super().keys()

    def values(self) -> Any:
        self._load_all()
        return super().values()

    def items(self) -> Any:
        self._load_all()
        return super().items()


class LazyTunaGroup(TunaGroup):
    """A group whose subcommands are imported on first use (click's lazy-group recipe)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _LazyCommands(self.commands)


@click.group(cls=LazyTunaGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
