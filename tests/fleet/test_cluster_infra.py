"""The cluster tier's own infrastructure (``bin/test-cluster``): if these fail, the go_fish
tests that build on it would fail for reasons that have nothing to do with go_fish."""

from __future__ import annotations

import shlex
import socket
import sys

import paramiko
import pytest
import sqlalchemy as sa

from tests.fleet.cluster import Cluster
from tests.support.wait import wait_until
from tuna.db import Database, migrate

pytestmark = pytest.mark.cluster


def _connects(address: str, port: int, timeout: float = 2) -> bool:
    try:
        socket.create_connection((address, port), timeout=timeout).close()
    except OSError:
        return False
    return True


def _key_line(cluster: Cluster, address: str) -> str:
    for line in cluster.known_hosts.read_text().splitlines():
        if line.split()[0] == address:
            return line
    raise AssertionError(f"{address} is not in {cluster.known_hosts}")


def _connect(cluster: Cluster, address: str, known_hosts: str) -> None:
    client = paramiko.SSHClient()
    client.load_host_keys(known_hosts)
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    try:
        client.connect(
            address,
            username="root",
            key_filename=str(cluster.key_file),
            look_for_keys=False,
            allow_agent=False,
            timeout=10,
        )
    finally:
        client.close()


# --- SSH -----------------------------------------------------------------------------------------


def test_every_host_answers_ssh_as_itself_from_the_head(cluster: Cluster) -> None:
    assert cluster.hosts
    for host in cluster.hosts:
        r = cluster.ssh_run(host.name, 'hostname; echo "$SSH_CONNECTION"')
        assert r.exit_status == 0, r.stderr
        name, connection = r.stdout.splitlines()[:2]
        client_ip, _, server_ip, server_port = connection.split()
        assert (name, client_ip, server_ip, server_port) == (
            host.name,
            cluster.head_ip,
            host.address,
            str(host.port),
        )


def test_a_host_showing_another_hosts_key_is_refused(cluster: Cluster, tmp_path) -> None:
    if len(cluster.hosts) < 2:
        pytest.skip("needs two hosts")
    a, b = cluster.hosts[0], cluster.hosts[1]
    wrong = tmp_path / "known_hosts"
    # a's address with b's key: what a man in the middle (or a reinstalled machine) looks like
    wrong.write_text(a.address + " " + _key_line(cluster, b.address).split(None, 1)[1] + "\n")
    with pytest.raises(paramiko.BadHostKeyException):
        _connect(cluster, a.address, str(wrong))


def test_a_host_missing_from_known_hosts_is_refused(cluster: Cluster, tmp_path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(paramiko.SSHException, match="not found in known_hosts"):
        _connect(cluster, cluster.hosts[0].address, str(empty))


# --- Docker on the hosts -------------------------------------------------------------------------


def test_the_worker_image_is_in_every_hosts_engine(cluster: Cluster) -> None:
    ids = set()
    for host in cluster.hosts:
        r = cluster.ssh_run(
            host.name, f"docker image inspect --format '{{{{.Id}}}}' {shlex.quote(cluster.image)}"
        )
        assert r.exit_status == 0, f"{host.name}: {r.stderr}"
        ids.add(r.stdout.strip())
    assert len(ids) == 1, ids


def test_each_host_has_its_own_engine(cluster: Cluster) -> None:
    names = {
        cluster.ssh_run(h.name, "docker info --format '{{.Name}}'").stdout.strip()
        for h in cluster.hosts
    }
    assert names == {h.name for h in cluster.hosts}


@pytest.mark.parametrize("network", ["host", "bridge"])
def test_a_container_started_over_ssh_reaches_the_cluster_db(
    cluster: Cluster, cluster_db: Database, network: str
) -> None:
    host = cluster.hosts[-1]
    # The URL reaches the container as a file, never on the command line.
    command = shlex.join(
        [
            "docker", "run", "--rm", f"--network={network}",
            "-v", f"{cluster.worker_db_url_file}:/run/tuna/db-url:ro",
            "-e", "TUNA_DB_URL_FILE=/run/tuna/db-url",
            cluster.image, "tuna", "db", "current",
        ]
    )  # fmt: skip
    r = cluster.ssh_run(host.name, command)
    assert r.exit_status == 0, r.stdout + r.stderr
    assert f"{cluster.head_ip}:3307/tuna:" in r.stdout
    assert migrate.head_revision() in r.stdout
    password = sa.engine.make_url(cluster.worker_db_url).password
    assert password and password not in r.stdout + r.stderr


def test_the_worker_image_compiles_and_loads_a_c_kernel(cluster: Cluster) -> None:
    # What the cpuconv backend does inside a worker: `cc` a shared object, load it, call it.
    program = (
        "import ctypes, subprocess, tempfile, pathlib\n"
        "d = pathlib.Path(tempfile.mkdtemp())\n"
        "(d / 'k.c').write_text('float axpy(float a, float x, float y) { return a * x + y; }')\n"
        "subprocess.run(['cc', '-O3', '-march=native', '-shared', '-fPIC', '-o', str(d / 'k.so'),"
        " str(d / 'k.c')], check=True)\n"
        "f = ctypes.CDLL(str(d / 'k.so')).axpy\n"
        "f.restype = ctypes.c_float\n"
        "f.argtypes = [ctypes.c_float] * 3\n"
        "print(f(2.0, 3.0, 1.0))\n"
    )
    r = cluster.ssh_run(
        cluster.hosts[0].name,
        shlex.join(
            ["docker", "run", "--rm", "--network=none", cluster.image, "python3", "-c", program]
        ),
    )
    assert r.exit_status == 0, r.stderr
    assert r.stdout.strip() == "7.0"


# --- faults --------------------------------------------------------------------------------------


def test_cut_takes_a_host_off_the_network_until_restore(cluster: Cluster) -> None:
    host, others = cluster.hosts[0], cluster.hosts[1:]
    before = cluster.ssh(host.name)  # open across the cut
    try:
        cluster.cut(host.name)
        assert not _connects(host.address, host.port)
        for other in others:
            assert _connects(other.address, other.port), f"{other.name} was cut off too"
        # Cut off, not stopped: its sshd still listens inside the host.
        probe = (
            f"import socket; socket.create_connection(({host.address!r}, {host.port}), 2).close()"
        )
        cluster.netns_exec(host.name, [sys.executable, "-c", probe])

        cluster.restore(host.name)
        wait_until(
            lambda: _connects(host.address, host.port),
            f"{host.name} to be reachable again after restore",
            timeout=10,
            interval=0.2,
        )
        _, stdout, _ = before.exec_command("hostname", timeout=30)
        assert stdout.read().decode().strip() == host.name
    finally:
        cluster.restore(host.name)
        before.close()


def test_restart_db_leaves_the_db_answering(cluster: Cluster, cluster_db: Database) -> None:
    engine = sa.create_engine(cluster.db_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
            cluster.restart_db()
            with pytest.raises(sa.exc.OperationalError):  # the server it talked to is gone
                conn.exec_driver_sql("SELECT 1")
        with engine.connect() as conn:
            # the data survived the restart
            assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar_one() == (
                migrate.head_revision()
            )
    finally:
        engine.dispose()
    # and the hosts reach it again
    host = cluster.hosts[0]
    probe = f"import socket; socket.create_connection(({cluster.head_ip!r}, 3307), 2).close()"
    cluster.netns_exec(host.name, [sys.executable, "-c", probe])
