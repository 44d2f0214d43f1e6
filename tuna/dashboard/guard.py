"""What makes the dashboard safe to share: a Host check, security headers, an optional login.

- **Host check** (DNS rebinding): a page on ``evil.example`` whose name is re-pointed at
  127.0.0.1 can make a browser send its requests to a dashboard on loopback, with
  ``Host: evil.example``. Only the names the dashboard is known by are answered
  (``localhost``, this machine's names, ``--allowed-host``); an IP literal is always
  answered, since a browser that sends one loaded the page from that address itself.
- **Headers**: a Content-Security-Policy that lets a page load nothing from elsewhere
  (scripts only from the dashboard itself, no inline script), ``X-Frame-Options: DENY``
  and ``frame-ancestors 'none'`` (no clickjacking), ``nosniff``, no referrer.
- **Login** (``--login FILE``, for ``--host 0.0.0.0``): HTTP basic auth with the
  ``user:password`` lines of the file, or a bearer token (a line without a colon; a
  browser gives it as the password, with any user name). ``/healthz`` stays open.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tuna.errors import TunaError

CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]
OPEN_PATHS = ("/healthz",)
"""Answered without a login (a load balancer's probe); they show nothing."""


@dataclass(frozen=True)
class Login:
    """Who may read the dashboard: ``user:password`` pairs and bare tokens."""

    users: tuple[tuple[str, str], ...] = ()
    tokens: tuple[str, ...] = ()

    @classmethod
    def read(cls, path: Path) -> Login:
        """The credentials in ``path``: one per line, ``user:password`` or a token; ``#``
        starts a comment line."""
        try:
            lines = path.read_text().splitlines()
        except OSError as e:
            raise TunaError(f"--login {path}: cannot read it ({e.strerror})") from e
        users, tokens = [], []
        for line in (ln.strip() for ln in lines):
            if not line or line.startswith("#"):
                continue
            user, sep, password = line.partition(":")
            if sep:
                if not user or not password:
                    raise TunaError(f"--login {path}: a line has an empty user or password")
                users.append((user, password))
            else:
                tokens.append(line)
        if not users and not tokens:
            raise TunaError(
                f"--login {path}: no credentials in it; write `user:password` or a token, "
                "one per line"
            )
        return cls(tuple(users), tuple(tokens))

    def accepts(self, authorization: str | None) -> bool:
        if not authorization:
            return False
        scheme, _, value = authorization.partition(" ")
        scheme, value = scheme.lower(), value.strip()
        if scheme == "bearer":
            return _any_equal(value, self.tokens)
        if scheme != "basic":
            return False
        try:
            user, sep, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        if not sep:
            return False
        matched = _any_equal(f"{user}:{password}", [f"{u}:{p}" for u, p in self.users])
        return _any_equal(password, self.tokens) or matched


def _any_equal(given: str, secrets: Iterable[str]) -> bool:
    ok = False
    for s in secrets:  # every one compared, in constant time: no early exit to time
        ok |= hmac.compare_digest(given.encode(), s.encode())
    return ok


def known_names(host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names a dashboard listening on ``host`` answers to (lower case)."""
    names = {"localhost", socket.gethostname(), socket.getfqdn(), host, *extra}
    return frozenset(n.lower().rstrip(".") for n in names if n)


def host_allowed(header: str | None, names: frozenset[str]) -> bool:
    """Whether a request's ``Host`` header names this dashboard (see the module's doc)."""
    if not header:
        return False
    host = header.strip().lower()
    if host.startswith("["):  # [v6]:port
        host = host[1 : host.find("]")] if "]" in host else ""
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return host.rstrip(".") in names


class Guard:
    """ASGI middleware: the Host check, the login, and the security headers on every reply."""

    def __init__(self, app: ASGIApp, names: frozenset[str], login: Login | None = None) -> None:
        self.app = app
        self.names = names
        self.login = login

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        if not host_allowed(headers.get("host"), self.names):
            reply = PlainTextResponse(
                "unknown Host header; start the dashboard with --allowed-host NAME to be "
                "reached by that name\n",
                400,
            )
            await reply(scope, receive, secured)
            return
        if (
            self.login is not None
            and scope["path"] not in OPEN_PATHS
            and not self.login.accepts(headers.get("authorization"))
        ):
            reply = PlainTextResponse(
                "log in: this dashboard was started with --login\n",
                401,
                headers={"WWW-Authenticate": 'Basic realm="tuna dashboard", charset="UTF-8"'},
            )
            await reply(scope, receive, secured)
            return
        await self.app(scope, receive, secured)
