"""A real OpenSSH server on 127.0.0.1 for the SSH tests, in a temporary directory."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"


@dataclass(frozen=True)
class Sshd:
    port: int
    host_key: Path  # the server's private host key (its .pub is beside it)
    client_key: Path  # a key the server accepts for the current user
    known_hosts: Path  # holds the server's key under [127.0.0.1]:port
    dir: Path


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _missing(why: str) -> None:
    if os.environ.get("TUNA_REQUIRE_CLUSTER") == "1":
        pytest.fail(f"{why} (TUNA_REQUIRE_CLUSTER=1: bin/test installs it)")
    pytest.skip(f"{why}; bin/test installs openssh-server")


@pytest.fixture(scope="module", name="sshd")
def sshd_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    if not Path(SSHD).exists() or shutil.which("ssh-keygen") is None:
        _missing("no OpenSSH server here")
    if os.geteuid() != 0:
        _missing("the SSH tests start sshd, which needs root")
    d = tmp_path_factory.mktemp("sshd")
    os.chmod(d, 0o700)
    _keygen(d / "host_ed25519")
    _keygen(d / "client_ed25519")
    shutil.copy(d / "client_ed25519.pub", d / "authorized_keys")
    port = _free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_ed25519\n"
        f"PidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "Subsystem sftp internal-sftp\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    pub = (d / "host_ed25519.pub").read_text().split()
    (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}\n")
    with (d / "sshd.log").open("wb") as out:
        proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"sshd did not start: {(d / 'sshd.log').read_text()}"
                    ) from None
                time.sleep(0.05)
        yield Sshd(port, d / "host_ed25519", d / "client_ed25519", d / "known_hosts", d)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(name="mute_port")
def mute_port_fixture() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word (no SSH banner)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield int(listener.getsockname()[1])
    stop.set()
    t.join()
    for c in accepted:
        c.close()
    listener.close()
