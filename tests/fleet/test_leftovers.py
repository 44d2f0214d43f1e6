"""Which go_fish owns a container or run folder, and whether it still runs
(tuna/fleet/leftovers.py; finding and cleaning them on machines is in the cluster tier)."""

from __future__ import annotations

import socket
import subprocess

from tests.fleet.sshd import sshd_fixture  # noqa: F401  (the sshd fixture)
from tuna.fleet.leftovers import _start_time, owner_alive, this_owner


def test_this_go_fish_is_alive_and_names_itself_host_pid_start():
    owner = this_owner()
    host, pid, start = owner.rsplit(":", 2)
    assert host == socket.gethostname() and pid.isdigit() and start.isdigit()
    assert owner_alive(owner) is True


def test_a_go_fish_that_has_exited_is_dead_even_if_its_pid_comes_back():
    proc = subprocess.Popen(["sleep", "60"])
    owner = f"{socket.gethostname()}:{proc.pid}:{_start_time(proc.pid)}"
    assert owner_alive(owner) is True
    proc.kill()
    proc.wait()
    assert owner_alive(owner) is False
    # the same pid with another start time is another process
    mine = this_owner().rsplit(":", 1)[0]
    assert owner_alive(f"{mine}:1") is False


def test_another_head_nodes_go_fish_is_unknown_and_garbage_is_dead():
    assert owner_alive("some-other-head:1234:5678") is None
    assert owner_alive("fd00::1:1234:5678") is None  # a host name with colons
    assert owner_alive("nonsense") is False
    assert owner_alive(f"{socket.gethostname()}:notapid:1") is False


def test_two_go_fish_that_find_one_dead_run_clean_it_once(sshd, tmp_path):
    """Both go_fish on one head cleaned the same dead run (its logs appended twice, both
    reported the removal): each run is claimed on the machine first, one owner per
    clean-up. A real sshd on 127.0.0.1; the machine's docker is `true` (no containers: the
    engines of the cluster tier are not this test's to touch)."""
    import getpass
    import threading

    from tuna.fleet.leftovers import clean_leftovers, find_leftovers
    from tuna.fleet.machines import MachineRow
    from tuna.fleet.ssh import Connections

    scratch = tmp_path / "scratch"
    dead = subprocess.Popen(["sleep", "60"])
    owner = f"{socket.gethostname()}:{dead.pid}:{_start_time(dead.pid)}"
    dead.kill()
    dead.wait()
    for run in ("20260101-000000-aaaaaa", "20260101-000001-bbbbbb"):
        (scratch / run).mkdir(parents=True)
        (scratch / run / "owner").write_text(owner)
    m = MachineRow(
        1,
        "127.0.0.1",
        port=sshd.port,
        user=getpass.getuser(),
        key_file=str(sshd.client_key),
        docker_settings={"docker": "true", "scratch": str(scratch)},
    )
    with Connections(sshd.known_hosts) as a, Connections(sshd.known_hosts) as b:
        found = [find_leftovers(a, m), find_leftovers(b, m)]
        assert [f.folders for f in found] == [sorted(f.folders) for f in found]
        assert all(len(f.folders) == 2 for f in found)
        cleaned = [None, None]
        go = threading.Barrier(2)

        def clean(i, conns):
            go.wait()
            cleaned[i] = clean_leftovers(conns, found[i], tmp_path / "logs")

        threads = [threading.Thread(target=clean, args=(i, c)) for i, c in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        both = sorted(run for c in cleaned for run in c.folders)
        assert both == ["20260101-000000-aaaaaa", "20260101-000001-bbbbbb"]  # once each
        assert list(scratch.iterdir()) == []  # the runs and the claims are gone
        again = clean_leftovers(a, found[0], tmp_path / "logs")  # a stale listing
        assert again.empty


def test_machines_that_share_a_scratch_folder_claim_a_run_each(sshd, tmp_path):
    """The test cluster's hosts (and machines on NFS) share one scratch folder: a claim is
    per machine, so each machine's containers of a dead run are still cleaned."""
    import getpass

    from tuna.fleet.leftovers import _claim, _release
    from tuna.fleet.machines import MachineRow
    from tuna.fleet.ssh import Connections

    def machine(i: int) -> MachineRow:
        settings = {"docker": "true", "scratch": str(tmp_path / "scratch")}
        key = str(sshd.client_key)
        return MachineRow(i, "127.0.0.1", sshd.port, getpass.getuser(), key_file=key,
                          docker_settings=settings)  # fmt: skip

    run = "20260101-000000-aaaaaa"
    with Connections(sshd.known_hosts) as conns:
        assert _claim(conns, machine(1), [run]) == [run]
        assert _claim(conns, machine(2), [run]) == [run]  # another machine: its own claim
        assert _claim(conns, machine(1), [run]) == []  # held (by this live process)
        _release(conns, machine(1), [run])
        _release(conns, machine(2), [run])
        assert _claim(conns, machine(1), [run]) == [run]
