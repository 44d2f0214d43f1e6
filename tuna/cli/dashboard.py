"""``tuna dashboard``: a read-only web app showing sessions, machines and results."""

from __future__ import annotations

import threading
from pathlib import Path

import click

from tuna.cli.base import TunaCommand, console, err_console
from tuna.config import load_settings, log_dir
from tuna.dashboard import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    bind,
    create_app,
    is_loopback,
    require_extra,
    serve,
)


@click.command("dashboard", cls=TunaCommand)
@click.option(
    "--host",
    default=DEFAULT_HOST,
    show_default=True,
    help="Address to listen on (loopback by default: only this machine).",
)
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on.",
)
@click.option(
    "--refresh",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Seconds between a page's reloads (0: never).",
)
@click.option(
    "--reports",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="A directory of `tuna report` outputs to link and serve (only the files they wrote).",
)
@click.option(
    "--logs",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where go_fish wrote worker logs; a job's page shows its lines from them "
    "[default: TUNA_LOG_DIR, else <data dir>/logs, as go_fish].",
)
@click.option(
    "--login",
    "login_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Ask for a login: a file of `user:password` lines (HTTP basic auth) or tokens.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="Another host name it is reached by (it answers only its own names and IPs).",
)
def dashboard_cmd(
    host: str, port: int, refresh: int, reports: Path | None, logs: Path | None,
    login_file: Path | None, allowed_hosts: tuple[str, ...],
) -> None:  # fmt: skip
    """Serve a read-only dashboard: sessions with progress, machines, failures, results.

    It connects read-only and never writes; pages refresh themselves. For a MySQL
    database, give it a user with SELECT grants only (docs/how-to/see.md, "tuna dashboard").
    Ctrl-C stops it.

    \b
    Examples:
      tuna dashboard                      # http://127.0.0.1:8484/
      tuna dashboard --port 9000 --reports ./reports
      tuna dashboard --logs /data/tuna/logs  # where go_fish --log-dir wrote them
      tuna dashboard --host 0.0.0.0 --login ~/.tuna/dashboard-users --allowed-host head.lab
      TUNA_DB_URL=mysql+pymysql://tuna_ro:***@head/tuna tuna dashboard
    """  # fmt: skip
    require_extra()  # before anything imports Starlette
    from tuna.dashboard.app import DashboardSettings
    from tuna.dashboard.guard import Login
    from tuna.dashboard.readonly import open_readonly

    login = Login.read(login_file) if login_file else None
    db = open_readonly(load_settings().db_url)
    try:
        settings = DashboardSettings(refresh_s=refresh, reports=reports, host=host,
                                     allowed_hosts=allowed_hosts, login=login,
                                     logs=logs or log_dir())  # fmt: skip
        app = create_app(db, settings)
        sock = bind(host, port)
        shown = f"[{host}]" if ":" in host else host
        console.print(f"dashboard of {db.url_masked} on http://{shown}:{port}/ (read-only; "
                      "Ctrl-C stops it)", markup=False)  # fmt: skip
        if not is_loopback(host) and login is None:
            err_console.print(f"note: listening on {host}: anyone who can reach this port can "
                              "read the database's sessions and results (--login FILE asks "
                              "for a password)", markup=False)  # fmt: skip
        threading.Thread(target=app.state.warm, name="dashboard-warm", daemon=True).start()
        serve(app, sock)
    finally:
        db.dispose()
