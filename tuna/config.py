"""Settings from the environment.

``TUNA_DB_URL`` names the database outright, or ``TUNA_DB_URL_FILE`` names a file that
holds it (how go_fish hands the URL to worker containers, never in argv or logs).
Otherwise the predecessor's variables (``TUNA_DB_USER_NAME``, ``TUNA_DB_USER_PASSWORD``,
``TUNA_DB_HOSTNAME``, ``TUNA_DB_NAME``) describe a MySQL server. With none of them set,
Tuna uses an embedded SQLite database in the user's data directory (``TUNA_DATA_DIR``
overrides where that is), created on first use.
"""

from __future__ import annotations

import math
import os
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from tuna.errors import ConfigurationError

# The most workers go_fish starts on one machine (-w): more is a typo, and the plans of
# ten million of them alone took a gigabyte before anything started.
MAX_WORKERS = 1024

MYSQL_VARS = ("TUNA_DB_USER_NAME", "TUNA_DB_USER_PASSWORD", "TUNA_DB_HOSTNAME", "TUNA_DB_NAME")


@dataclass(frozen=True)
class Settings:
    db_url: URL
    source: str  # which setting chose the database, for messages

    @property
    def db_url_masked(self) -> str:
        return mask_url(self.db_url)


# scheme://user:password@host...: the password runs to the *last* "@" before the host, so a
# password holding "@" (or ":" or "/") is read whole; the host part holds no "@" or "/".
_USERINFO = re.compile(
    r"^(?P<scheme>[A-Za-z][\w+.-]*://)(?P<user>[^:@/]*):(?P<password>.*)@(?P<rest>[^@/]*(?:/.*)?)$"
)
_PORT = re.compile(r"^[^:/?]*:(?P<port>[^/?]*)")


def _parse_url(text: str) -> URL:
    """``make_url``, except that a password holding "@" is read whole.

    Raises :class:`ValueError` (naming the port, never the password) or ``ArgumentError``.
    """
    m = _USERINFO.match(text.strip())
    if m and "@" in m["password"]:
        password = urllib.parse.quote(m["password"], safe="")
        text = f"{m['scheme']}{m['user']}:{password}@{m['rest']}"
    host_part = text.split("@")[-1].split("://")[-1] if "://" in text else ""
    port = None if host_part.startswith("[") else _PORT.match(host_part)  # [IPv6]: left to make_url
    if port and port["port"] and not port["port"].isdigit():
        raise ValueError(f"port {port['port']!r} is not a number")
    try:
        return make_url(text)
    except ValueError as e:  # never echo the text: it holds the password
        raise ValueError("it is not a well-formed URL") from e


def mask_url(url: URL | str) -> str:
    """Render a database URL with its password hidden, for messages and logs.

    Any text works, well-formed or not: what cannot be read as a URL is not shown at all.
    """
    if isinstance(url, str):
        try:
            url = _parse_url(url)
        except (ArgumentError, ValueError):
            return "<unparseable database URL>"
    return url.render_as_string(hide_password=True)


def data_dir(env: dict[str, str] | None = None) -> Path:
    """Where Tuna keeps its embedded database and other per-user files."""
    override = (os.environ if env is None else env).get("TUNA_DATA_DIR")
    if override:
        return Path(override)
    import platformdirs  # here: a worker given its database URL never needs it

    return Path(platformdirs.user_data_dir("tuna", appauthor=False))


def log_dir(env: dict[str, str] | None = None) -> Path:
    """Where worker logs go: ``TUNA_LOG_DIR``, else ``<data dir>/logs``."""
    given = (os.environ if env is None else env).get("TUNA_LOG_DIR")
    return Path(given) if given else data_dir(env) / "logs"


def default_sqlite_url(env: dict[str, str] | None = None) -> URL:
    return make_url(f"sqlite:///{data_dir(env) / 'tuna.db'}")


def db_url_from(text: str, name: str) -> URL:
    """The database URL in variable ``name`` (a plain ``mysql://`` means PyMySQL)."""
    example = "mysql+pymysql://user:password@host:3306/tuna or sqlite:////path/tuna.db"
    try:
        url = _parse_url(text)
    except ArgumentError as e:
        raise ConfigurationError(f"{name} is not a database URL; expected e.g. {example}") from e
    except ValueError as e:
        raise ConfigurationError(f"{name}: {e}; expected e.g. {example}") from e
    if url.get_backend_name() != "sqlite" and not url.host:
        raise ConfigurationError(f"{name} names no database host; expected e.g. {example}")
    if url.drivername == "mysql":
        url = url.set(drivername="mysql+pymysql")
    return url


def _check_sqlite_dir(url: URL, name: str) -> None:
    """A SQLite file named outright must go in a directory that exists: only the default
    data directory is created on its own (a typo must not make an empty database)."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return
    parent = Path(url.database).parent
    if not parent.is_dir():
        raise ConfigurationError(
            f"{name}: the directory {parent} does not exist; create it, or leave {name} unset "
            "for the embedded database in your data directory"
        )


def seconds_setting(name: str, default: float, env: dict[str, str] | None = None) -> float:
    """A time setting in seconds from the environment (``name``; ``default`` when unset or
    empty); anything but a number above 0 is refused with what to give instead."""
    given = (os.environ if env is None else env).get(name, "").strip()
    if not given:
        return default
    try:
        seconds = float(given)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds < math.inf):
        raise ConfigurationError(
            f"{name}={given!r}: expected a number of seconds above 0, e.g. {default:g}"
        )
    return seconds


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
        url = db_url_from(env["TUNA_DB_URL"], "TUNA_DB_URL")
        _check_sqlite_dir(url, "TUNA_DB_URL")
        return Settings(url, "TUNA_DB_URL")
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
        if port and not port.isdigit():
            raise ConfigurationError(
                f"TUNA_DB_HOSTNAME: port {port!r} is not a number; write host or host:port, "
                "e.g. head:3306"
            )
        url = URL.create(
            "mysql+pymysql",
            username=env["TUNA_DB_USER_NAME"],
            password=env.get("TUNA_DB_USER_PASSWORD") or None,
            host=host,
            port=int(port) if port else None,
            database=env["TUNA_DB_NAME"],
        )
        return Settings(url, "TUNA_DB_* variables")
    folder = data_dir(env)
    if folder.exists() and not folder.is_dir():
        raise ConfigurationError(
            f"TUNA_DATA_DIR={folder} is a file, not a folder; name a folder (it is made if "
            "missing) or unset TUNA_DATA_DIR for your user's data folder"
        )
    return Settings(default_sqlite_url(env), "embedded default")
