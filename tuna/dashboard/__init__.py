"""``tuna dashboard``: a read-only web app over Tuna's database.

Sits beside ``cli/`` at the top of the layers: reads through the services' query
functions, never writes (its connections are read-only, see :mod:`.readonly`), never
shows a password or a database URL with one, and needs no JavaScript build step (pages
are rendered on the server; there is no script). Needs the ``dashboard`` extra
(Starlette, Jinja2, uvicorn).
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import TYPE_CHECKING

from tuna.errors import MissingExtraError, TunaError

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from tuna.dashboard.app import DashboardSettings
    from tuna.db import Database

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8484


def require_extra() -> None:
    """Raise :class:`MissingExtraError` naming the extra when a dependency is missing."""
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        raise MissingExtraError(
            f"`tuna dashboard` needs {e.name}, which is not installed; "
            "install the dashboard extra: pip install 'tuna[dashboard]'"
        ) from e


def create_app(db: Database, settings: DashboardSettings | None = None) -> Starlette:
    require_extra()
    from tuna.dashboard.app import create_app as _create

    return _create(db, settings)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); a port in use is a clear :class:`TunaError`."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise TunaError(f"--host {host}: cannot resolve it ({e.strerror})") from e
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise TunaError(
                f"port {port} on {host} is in use (another dashboard?); "
                f"choose another with --port, e.g. --port {port + 1}"
            ) from e
        if e.errno == errno.EACCES:
            raise TunaError(
                f"port {port} on {host}: permission denied; use a port above 1023"
            ) from e
        raise TunaError(f"cannot listen on {host}:{port}: {e.strerror}") from e
    sock.set_inheritable(True)
    return sock


def serve(app: Starlette, sock: socket.socket) -> None:
    """Serve ``app`` on the bound socket until interrupted (Ctrl-C stops it cleanly)."""
    require_extra()
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "bind",
    "create_app",
    "is_loopback",
    "require_extra",
    "serve",
]
