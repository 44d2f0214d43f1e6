"""Settings from the environment.

``TUNA_DB_URL`` names the database outright, or ``TUNA_DB_URL_FILE`` names a file that
holds it (how go_fish hands the URL to worker containers, never in argv or logs).
Otherwise the predecessor's variables (``TUNA_DB_USER_NAME``, ``TUNA_DB_USER_PASSWORD``,
``TUNA_DB_HOSTNAME``, ``TUNA_DB_NAME``) describe a MySQL server. With none of them set,
Tuna uses an embedded SQLite database in the user's data directory (``TUNA_DATA_DIR``
overrides where that is), created on first use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from tuna.errors import ConfigurationError

MYSQL_VARS = ("TUNA_DB_USER_NAME", "TUNA_DB_USER_PASSWORD", "TUNA_DB_HOSTNAME", "TUNA_DB_NAME")


@dataclass(frozen=True)
class Settings:
    db_url: URL
    source: str  # which setting chose the database, for messages

    @property
    def db_url_masked(self) -> str:
        return mask_url(self.db_url)


def mask_url(url: URL | str) -> str:
    """Render a database URL with its password hidden, for messages and logs."""
    if isinstance(url, str):
        try:
            url = make_url(url)
        except ArgumentError:
            return "<unparseable database URL>"
    return url.render_as_string(hide_password=True)


def data_dir(env: dict[str, str] | None = None) -> Path:
    """Where Tuna keeps its embedded database and other per-user files."""
    override = (os.environ if env is None else env).get("TUNA_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir("tuna", appauthor=False))


def log_dir(env: dict[str, str] | None = None) -> Path:
    """Where worker logs go: ``TUNA_LOG_DIR``, else ``<data dir>/logs``."""
    given = (os.environ if env is None else env).get("TUNA_LOG_DIR")
    return Path(given) if given else data_dir(env) / "logs"


def default_sqlite_url(env: dict[str, str] | None = None) -> URL:
    return make_url(f"sqlite:///{data_dir(env) / 'tuna.db'}")


def db_url_from(text: str, name: str) -> URL:
    """The database URL in variable ``name`` (a plain ``mysql://`` means PyMySQL)."""
    try:
        url = make_url(text)
    except ArgumentError as e:
        raise ConfigurationError(
            f"{name} is not a database URL; expected e.g. "
            "mysql+pymysql://user:password@host:3306/tuna or sqlite:////path/tuna.db"
        ) from e
    if url.drivername == "mysql":
        url = url.set(drivername="mysql+pymysql")
    return url


def load_settings(env: dict[str, str] | None = None) -> Settings:
    """Read the database settings from ``env`` (default: the process environment)."""
    env = dict(os.environ) if env is None else env
    if env.get("TUNA_DB_URL_FILE") and not env.get("TUNA_DB_URL"):
        path = Path(env["TUNA_DB_URL_FILE"])
        try:
            env = {**env, "TUNA_DB_URL": path.read_text().strip()}
        except OSError as e:
            raise ConfigurationError(
                f"TUNA_DB_URL_FILE={path}: cannot read it ({e.strerror}); it must hold the "
                "database URL on one line"
            ) from e
    if env.get("TUNA_DB_URL"):
        return Settings(db_url_from(env["TUNA_DB_URL"], "TUNA_DB_URL"), "TUNA_DB_URL")
    given = [v for v in MYSQL_VARS if env.get(v)]
    if given:
        missing = [
            v for v in ("TUNA_DB_HOSTNAME", "TUNA_DB_NAME", "TUNA_DB_USER_NAME") if not env.get(v)
        ]
        if missing:
            raise ConfigurationError(
                f"{', '.join(given)} set but {', '.join(missing)} not; set all of "
                f"{', '.join(MYSQL_VARS[:-1])} and {MYSQL_VARS[-1]}, or TUNA_DB_URL"
            )
        host, _, port = env["TUNA_DB_HOSTNAME"].partition(":")
        url = URL.create(
            "mysql+pymysql",
            username=env["TUNA_DB_USER_NAME"],
            password=env.get("TUNA_DB_USER_PASSWORD") or None,
            host=host,
            port=int(port) if port else None,
            database=env["TUNA_DB_NAME"],
        )
        return Settings(url, "TUNA_DB_* variables")
    return Settings(default_sqlite_url(env), "embedded default")
