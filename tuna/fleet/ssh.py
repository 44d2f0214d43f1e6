"""SSH to worker machines: host keys checked, explicit timeouts, one connection per host.

* **Host keys**: a host must be in the known-hosts file (``TUNA_KNOWN_HOSTS``, default
  ``~/.ssh/known_hosts``). An unknown key is refused with its fingerprint and the command
  that trusts it; a changed key is refused outright. Nothing is trusted on first use.
* **Authentication**: the machine's key file, else the SSH agent and the usual keys.
  Tuna never stores or sends a password.
* **Timeouts**: connecting, authenticating and each command have their own limit
  (connecting and authenticating: ``TUNA_SSH_CONNECT_TIMEOUT`` seconds, default 10); a
  command that outlives its limit drops the connection (a cut network can leave a TCP
  connection looking alive for minutes), and the next command reconnects.
* **Reuse**: :class:`Connections` keeps one connection per host for the whole run, with
  keepalives, and is safe to use from several threads.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import paramiko

from tuna.config import seconds_setting
from tuna.fleet.errors import FleetError

# paramiko logs a failed handshake as ~20 lines of traceback from its transport thread (on
# stderr, through logging's last resort, when nothing else is set up). Every failure it logs
# also reaches us as an exception, which becomes one line naming the host: keep it quiet.
_paramiko_log = logging.getLogger("paramiko")
_paramiko_log.addHandler(logging.NullHandler())
_paramiko_log.propagate = False

DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_COMMAND_TIMEOUT = 120.0
KEEPALIVE_SECONDS = 15


@dataclass(frozen=True)
class Host:
    """Where and as whom to connect. ``name`` is what messages and log paths call it."""

    name: str
    address: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None

    @property
    def known_hosts_name(self) -> str:
        """The host's name in a known-hosts file (``[addr]:port`` off port 22)."""
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"

    def __str__(self) -> str:
        return self.name if self.name == self.address else f"{self.name} ({self.address})"


@dataclass(frozen=True)
class CommandResult:
    host: Host
    command: str
    exit_status: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    @property
    def error_line(self) -> str:
        """The line of a failed command's output that says why: the last one naming an
        error (docker ends with a "Run 'docker run --help'" hint after it), else the last
        one; empty if it printed nothing."""
        lines = [ln.strip() for ln in (self.stderr or self.stdout).splitlines() if ln.strip()]
        errors = [ln for ln in lines if "error" in ln.lower()]
        return (errors or lines or [""])[-1]


class SshError(FleetError):
    """Raised when a host cannot be reached, refuses us, or a command over SSH fails."""

    def __init__(self, host: Host, message: str) -> None:
        self.host = host
        super().__init__(f"{host}: {message}")


class UnknownHostKey(SshError):
    """Raised when the host's key is not in the known-hosts file: refused, with how to
    trust it."""


class ChangedHostKey(SshError):
    """Raised when the host presents another key than the known-hosts file has: refused."""


class CommandTimeout(SshError):
    """Raised when a command did not finish within its time limit (the connection is
    dropped)."""


def default_connect_timeout() -> float:
    """Seconds that connecting and authenticating may take (``TUNA_SSH_CONNECT_TIMEOUT``, 10)."""
    return seconds_setting("TUNA_SSH_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT)


def default_known_hosts() -> Path:
    given = os.environ.get("TUNA_KNOWN_HOSTS")
    return Path(given) if given else Path.home() / ".ssh" / "known_hosts"


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's ``SHA256:...`` fingerprint of a public key."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


class _Refuse(paramiko.MissingHostKeyPolicy):
    """Refuse a host missing from known-hosts, saying what its key is and how to trust it."""

    def __init__(self, host: Host, known_hosts: Path) -> None:
        self.host, self.known_hosts = host, known_hosts

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        raise UnknownHostKey(
            self.host,
            f"host key not known ({key.get_name()} {fingerprint(key)}) in {self.known_hosts}; "
            f"if that is the machine's key, trust it with `tuna machine trust {self.host.name}` "
            f"or `ssh-keyscan -p {self.host.port} {self.host.address} >> {self.known_hosts}`",
        )


class Connections:
    """One SSH connection per host, opened on first use and kept for the run."""

    def __init__(
        self,
        known_hosts: Path | None = None,
        *,
        connect_timeout: float | None = None,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
    ) -> None:
        self.known_hosts = known_hosts or default_known_hosts()
        self.connect_timeout = (
            default_connect_timeout() if connect_timeout is None else connect_timeout
        )
        self.command_timeout = command_timeout
        self._clients: dict[Host, paramiko.SSHClient] = {}
        self._locks: dict[Host, threading.Lock] = {}
        self._guard = threading.Lock()

    def __enter__(self) -> Connections:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _lock(self, host: Host) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(host, threading.Lock())

    def client(self, host: Host) -> paramiko.SSHClient:
        """The host's connection, (re)connecting when there is none or it died."""
        with self._lock(host):
            client = self._clients.get(host)
            transport = client.get_transport() if client else None
            if client and transport and transport.is_active():
                return client
            if client:
                client.close()
            client = self._connect(host)
            self._clients[host] = client
            return client

    def _connect(self, host: Host) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        if self.known_hosts.exists():
            client.load_host_keys(str(self.known_hosts))
        client.set_missing_host_key_policy(_Refuse(host, self.known_hosts))
        t = self.connect_timeout
        try:
            client.connect(
                host.address,
                port=host.port,
                username=host.user,
                key_filename=host.key_file,
                look_for_keys=host.key_file is None,
                allow_agent=host.key_file is None,
                timeout=t,
                banner_timeout=t,
                auth_timeout=t,
                channel_timeout=t,
            )
        except SshError:
            client.close()
            raise
        except paramiko.BadHostKeyException as e:
            client.close()
            raise ChangedHostKey(
                host,
                f"host key CHANGED: {self.known_hosts} has {e.expected_key.get_name()} "
                f"{fingerprint(e.expected_key)}, the host sent {fingerprint(e.key)}; refusing "
                "to connect. If the machine was reinstalled, remove the old key with "
                f"`ssh-keygen -R '{host.known_hosts_name}' -f {self.known_hosts}` and trust "
                "the new one",
            ) from e
        except paramiko.AuthenticationException as e:
            client.close()
            how = f"key {host.key_file}" if host.key_file else "the SSH agent or ~/.ssh keys"
            raise SshError(
                host, f"authentication as {host.user or 'the current user'} with {how} failed"
            ) from e
        except (OSError, paramiko.SSHException, EOFError) as e:
            transport = client.get_transport()
            spoke = bool(transport and transport.remote_version)
            client.close()
            raise SshError(host, _connect_failure(host, e, spoke=spoke, timeout=t)) from e
        transport = client.get_transport()
        if transport:
            transport.set_keepalive(KEEPALIVE_SECONDS)
        return client

    def drop(self, host: Host) -> None:
        """Close the host's connection (the next use reconnects)."""
        with self._lock(host):
            client = self._clients.pop(host, None)
        if client:
            client.close()

    def close(self) -> None:
        with self._guard:
            clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            c.close()

    def run(
        self,
        host: Host,
        command: str,
        *,
        timeout: float | None = None,
        stdin: bytes | None = None,
    ) -> CommandResult:
        """Run ``command`` on ``host``; raises :class:`CommandTimeout` after ``timeout`` s."""
        limit = self.command_timeout if timeout is None else timeout
        client = self.client(host)
        transport = client.get_transport()
        if transport is None:  # pragma: no cover - client() returned a live one
            raise SshError(host, "connection closed")
        try:
            chan = transport.open_session(timeout=min(limit, self.connect_timeout))
            chan.exec_command(command)
            if stdin is not None:
                chan.sendall(stdin)
            chan.shutdown_write()
            out, err = _collect(chan, time.monotonic() + limit)
        except _Expired:
            self.drop(host)
            raise CommandTimeout(
                host, f"`{_short(command)}` did not finish within {limit:g} s"
            ) from None
        except (OSError, paramiko.SSHException, EOFError) as e:
            self.drop(host)
            raise SshError(host, f"`{_short(command)}` failed: {e or type(e).__name__}") from e
        status = chan.recv_exit_status()
        chan.close()
        return CommandResult(
            host, command, status, out.decode(errors="replace"), err.decode(errors="replace")
        )

    def check(self, host: Host, command: str, *, timeout: float | None = None) -> str:
        """Run ``command``; its stdout, or :class:`SshError` with its stderr if it failed."""
        r = self.run(host, command, timeout=timeout)
        if not r.ok:
            detail = r.error_line
            raise SshError(
                host,
                f"`{_short(command)}` exited {r.exit_status}" + (f": {detail}" if detail else ""),
            )
        return r.stdout

    def put(self, host: Host, path: str, data: bytes, *, mode: int = 0o600) -> None:
        """Write ``data`` to ``path`` on ``host``, created with ``mode`` before any byte lands."""
        client = self.client(host)
        try:
            with client.open_sftp() as sftp:
                sftp.get_channel().settimeout(self.command_timeout)  # type: ignore[union-attr]
                with sftp.open(path, "wb") as f:
                    f.chmod(mode)
                    f.write(data)
        except (OSError, paramiko.SSHException, EOFError) as e:
            self.drop(host)
            raise SshError(host, f"cannot write {path}: {e or type(e).__name__}") from e


class _Expired(Exception):
    pass


def _collect(chan: paramiko.Channel, deadline: float) -> tuple[bytes, bytes]:
    """Read a command's stdout and stderr until it exits, or raise :class:`_Expired`."""
    out, err = bytearray(), bytearray()
    chan.settimeout(0.0)
    pause = 0.002
    while True:
        got = False
        while chan.recv_ready():
            out += chan.recv(65536)
            got = True
        while chan.recv_stderr_ready():
            err += chan.recv_stderr(65536)
            got = True
        if chan.exit_status_ready() and not chan.recv_ready() and not chan.recv_stderr_ready():
            return bytes(out), bytes(err)
        if time.monotonic() > deadline:
            chan.close()
            raise _Expired
        if chan.closed and not got:
            return bytes(out), bytes(err)
        pause = 0.002 if got else min(0.05, pause * 2)
        time.sleep(pause)


def _short(command: str, n: int = 60) -> str:
    return command if len(command) <= n else command[: n - 3] + "..."


def fetch_host_key(host: Host, timeout: float | None = None) -> paramiko.PKey:
    """The key ``host`` presents, fetched without authenticating (for ``machine trust``);
    ``timeout`` defaults to :func:`default_connect_timeout`."""
    if timeout is None:
        timeout = default_connect_timeout()
    try:
        sock = socket.create_connection((host.address, host.port), timeout=timeout)
    except OSError as e:
        raise SshError(host, _connect_failure(host, e, spoke=False, timeout=timeout)) from e
    transport = paramiko.Transport(sock)
    transport.banner_timeout = timeout
    try:
        transport.start_client(timeout=timeout)
        return transport.get_remote_server_key()
    except (OSError, paramiko.SSHException, EOFError) as e:
        spoke = bool(transport.remote_version)
        raise SshError(
            host, _connect_failure(host, e, spoke=spoke, timeout=timeout, tcp=True)
        ) from e
    finally:
        transport.close()


def _connect_failure(
    host: Host, e: BaseException, *, spoke: bool, timeout: float, tcp: bool = False
) -> str:
    """One line saying why connecting failed, without paramiko's internals."""
    if isinstance(e, paramiko.ssh_exception.NoValidConnectionsError):
        reasons = sorted({getattr(err, "strerror", None) or str(err) for err in e.errors.values()})
        return f"cannot connect to port {host.port}: {'; '.join(reasons)}"
    if isinstance(e, socket.timeout | TimeoutError) and not (tcp or spoke):
        return f"cannot connect to port {host.port}: no answer within {timeout:g} s"
    timed_out = isinstance(e, socket.timeout | TimeoutError)
    if isinstance(e, OSError) and not timed_out and not tcp and not spoke:
        return f"cannot connect to port {host.port}: {e.strerror or e}"
    if not spoke:
        return (
            f"port {host.port} accepted the connection but no SSH server answered "
            f"within {timeout:g} s"
        )
    return f"SSH with port {host.port} failed: {e or type(e).__name__}"


def trust_host_key(host: Host, key: paramiko.PKey, known_hosts: Path) -> None:
    """Append ``host``'s ``key`` to ``known_hosts`` (created 0600 if missing)."""
    known_hosts.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    line = f"{host.known_hosts_name} {key.get_name()} {key.get_base64()}\n"
    fd = os.open(known_hosts, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(line)
