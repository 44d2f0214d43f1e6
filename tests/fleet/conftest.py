"""Fixtures of the cluster tier: worker hosts reached over SSH, each with its own Docker engine.

``bin/test-cluster up DIR`` makes the cluster (``bin/test`` does it and exports
``TUNA_TEST_CLUSTER_DIR``); these fixtures read ``DIR/cluster.json``. Without a cluster the
tests skip, unless ``TUNA_REQUIRE_CLUSTER=1`` (set by ``bin/test``), where they fail.

* ``cluster`` (session): the :class:`Cluster` — hosts, database URLs, image, SSH key and
  known_hosts — with ``cut``/``restore`` (a host off the network, its processes still
  running) and ``restart_db``.
* ``cluster_db``: the cluster's database (``cluster.db_url``), emptied and migrated to the
  head revision before each test, as a :class:`tuna.db.Database`.

Tests that use either fixture are marked ``cluster`` (``-m "not cluster"`` leaves them out).
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from tuna.db import Database, migrate, open_database
from tuna.db.engine import make_engine

TEST_CLUSTER = Path(__file__).resolve().parents[2] / "bin" / "test-cluster"


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

    def restart_db(self) -> None:
        """Stop the cluster's MariaDB and start it again (same data and port); returns once it
        answers. Every open connection is lost."""
        self._test_cluster("restart-db")

    def _test_cluster(self, *args: str) -> None:
        proc = subprocess.run(
            [str(TEST_CLUSTER), args[0], str(self.dir), *args[1:]],
            capture_output=True,
            text=True,
            timeout=120,
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


def _cluster_required() -> bool:
    return os.environ.get("TUNA_REQUIRE_CLUSTER", "").strip() == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "cluster" in fixtures or "cluster_db" in fixtures:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """The running test cluster; skips without one (fails when TUNA_REQUIRE_CLUSTER=1)."""
    given = os.environ.get("TUNA_TEST_CLUSTER_DIR", "").strip()
    if not given:
        message = (
            "cluster tier: set TUNA_TEST_CLUSTER_DIR (bin/test-cluster up DIR) or run bin/test"
        )
        if _cluster_required():
            pytest.fail(
                f"{message} (TUNA_REQUIRE_CLUSTER=1: cluster tests never skip)", pytrace=False
            )
        pytest.skip(message)
    path = Path(given) / "cluster.json"
    if not path.is_file():
        pytest.fail(
            f"cluster tier: {path} is missing (did `bin/test-cluster up {given}` finish?)",
            pytrace=False,
        )
    c = Cluster.load(path)
    yield c
    c.restore_all()  # a host a failed test left cut off


@pytest.fixture(scope="session")
def _cluster_admin_engine(cluster: Cluster) -> Iterator[Engine]:
    """Drops and recreates the cluster's database; connected to no database, so that it can."""
    url = make_url(cluster.db_url).set(database=None)
    engine = sa.create_engine(url, pool_pre_ping=True)  # pre-ping: restart_db drops connections
    yield engine
    engine.dispose()


def _recreate_database(engine: Engine, name: str) -> None:
    with engine.connect() as conn:
        # A host that was cut off, or a killed worker, may still hold locks: wait 10 s, not a day.
        conn.exec_driver_sql("SET SESSION lock_wait_timeout = 10")
        try:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
        except sa.exc.OperationalError:
            rows = conn.exec_driver_sql(
                "SELECT id FROM information_schema.processlist"
                " WHERE db = %s AND id <> CONNECTION_ID()",
                (name,),
            ).fetchall()
            for (conn_id,) in rows:
                conn.exec_driver_sql(f"KILL {int(conn_id)}")
            warnings.warn(
                f"database {name} was still in use by the previous test; "
                f"killed {len(rows)} connection(s)",
                stacklevel=1,
            )
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")
        conn.exec_driver_sql(
            f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
        )


@pytest.fixture
def cluster_db(cluster: Cluster, _cluster_admin_engine: Engine) -> Iterator[Database]:
    """The cluster's database (``cluster.db_url``; the hosts reach it at ``worker_db_url``),
    empty and at the head revision: dropped, recreated and migrated before each test, and left
    as the test leaves it (to look at after a failure)."""
    name = make_url(cluster.db_url).database
    assert name
    _recreate_database(_cluster_admin_engine, name)
    engine = make_engine(cluster.db_url)
    try:
        with engine.begin() as conn:
            migrate.upgrade(conn)
    finally:
        engine.dispose()
    database = open_database(cluster.db_url)
    yield database
    database.dispose()
