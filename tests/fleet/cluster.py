"""The test cluster as ``bin/test-cluster up DIR`` describes it in ``DIR/cluster.json``.

:class:`Cluster` holds the hosts, database URLs, image, SSH key and known_hosts, with
``cut``/``restore`` (a host off the network, its processes still running) and ``restart_db``.
The fixtures that hand it to tests are in ``tests/fleet/conftest.py``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

TEST_CLUSTER = Path(__file__).resolve().parents[2] / "bin" / "test-cluster"
#: What ``bin/test-cluster cuda-image`` builds (its CUDA_IMAGE).
CUDA_IMAGE = "tuna-worker-cuda:ci"


@dataclass(frozen=True)
class ClusterHost:
    """One worker host: a network namespace with its own sshd and Docker engine."""

    name: str  # its hostname, e.g. tuna-w1
    address: str  # reachable from the head (and the other hosts) only by this IP: no DNS
    port: int
    user: str
    netns: str
    veth: str  # the head's end of its link; cut/restore flip it
    docker_sock: str  # its engine, from the head (in an SSH session, plain `docker` is the same)


@dataclass(frozen=True)
class RemoteResult:
    exit_status: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Cluster:
    """What ``bin/test-cluster up`` made, as ``DIR/cluster.json`` describes it."""

    dir: Path
    head_ip: str
    hosts: tuple[ClusterHost, ...]
    db_url: str  # from the head (127.0.0.1), with the password
    worker_db_url: str  # from the hosts and their containers (the head's bridge address)
    worker_db_url_file: Path  # holds worker_db_url (mode 0600), for TUNA_DB_URL_FILE
    image: str  # the worker image, present in every host's engine
    key_file: Path  # the client's private key (ed25519, no passphrase), authorized on every host
    known_hosts: Path  # every host's key, by address
    slurm_conf: Path | None = None  # SLURM_CONF of the cluster's Slurm (a slurmd per host)
    _cut: set[str] = field(default_factory=set, repr=False, compare=False)

    @classmethod
    def load(cls, path: Path) -> Cluster:
        doc = json.loads(path.read_text())
        return cls(
            dir=Path(doc["dir"]),
            head_ip=doc["head_ip"],
            hosts=tuple(ClusterHost(**h) for h in doc["hosts"]),
            db_url=doc["db_url"],
            worker_db_url=doc["worker_db_url"],
            worker_db_url_file=Path(doc["worker_db_url_file"]),
            image=doc["image"],
            key_file=Path(doc["key_file"]),
            known_hosts=Path(doc["known_hosts"]),
            slurm_conf=Path(doc["slurm_conf"]) if doc.get("slurm_conf") else None,
        )

    def host(self, name: str) -> ClusterHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(f"no host {name!r} in the cluster ({', '.join(h.name for h in self.hosts)})")

    # --- faults ---------------------------------------------------------------------------------

    def cut(self, host_name: str) -> None:
        """Take the host off the network: nothing reaches it or leaves it; it keeps running."""
        self.host(host_name)
        self._cut.add(host_name)
        self._test_cluster("cut", host_name)

    def restore(self, host_name: str) -> None:
        """Put a cut host back on the network (open TCP connections resume)."""
        self.host(host_name)
        self._test_cluster("restore", host_name)
        self._cut.discard(host_name)

    def restore_all(self) -> None:
        for name in sorted(self._cut):
            self.restore(name)

    def restart_slurmctld(self) -> None:
        """Stop slurmctld and start it again; it recovers its queue from its saved state."""
        self._test_cluster("restart-slurmctld")

    def restart_db(self) -> None:
        """Stop the cluster's MariaDB and start it again (same data and port); returns once it
        answers. Every open connection is lost."""
        self._test_cluster("restart-db")

    def cuda_image(self) -> str:
        """Build the CUDA worker image (``bin/build_docker.sh --cuda``) from this checkout and
        load it into every host; its tag. The first build on a machine fetches NVIDIA's wheels
        and makes the layers every later one finds cached."""
        self._test_cluster("cuda-image", timeout=1200)
        return CUDA_IMAGE

    def _test_cluster(self, *args: str, timeout: float = 120) -> None:
        proc = subprocess.run(
            [str(TEST_CLUSTER), args[0], str(self.dir), *args[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if proc.returncode != 0:
            raise RuntimeError(
                f"bin/test-cluster {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}"
            )

    # --- reaching the hosts ---------------------------------------------------------------------

    def ssh(self, host_name: str, *, timeout: float = 10) -> paramiko.SSHClient:
        """A connected SSH client (known_hosts checked, unknown keys refused); close it after."""
        host = self.host(host_name)
        client = paramiko.SSHClient()
        client.load_host_keys(str(self.known_hosts))
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        client.connect(
            host.address,
            port=host.port,
            username=host.user,
            key_filename=str(self.key_file),
            look_for_keys=False,
            allow_agent=False,
            timeout=timeout,
            banner_timeout=timeout,
            auth_timeout=timeout,
        )
        return client

    def ssh_run(self, host_name: str, command: str, *, timeout: float = 120) -> RemoteResult:
        """Run a shell command on the host over SSH; its exit status and output."""
        with self.ssh(host_name) as client:
            _, stdout, stderr = client.exec_command(command, timeout=timeout)
            out = stdout.read().decode()
            err = stderr.read().decode()
            return RemoteResult(stdout.channel.recv_exit_status(), out, err)

    def netns_exec(
        self, host_name: str, argv: Sequence[str], *, timeout: float = 60, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run argv in the host's network namespace, bypassing SSH (still works when the host is
        cut off). It sees the machine's filesystem, not the host's /run: for the host's engine
        use ``docker -H unix://<docker_sock>``."""
        host = self.host(host_name)
        return subprocess.run(
            ["ip", "netns", "exec", host.netns, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
        )
