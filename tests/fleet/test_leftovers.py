"""Which go_fish owns a container or run folder, and whether it still runs
(tuna/fleet/leftovers.py; finding and cleaning them on machines is in the cluster tier)."""

from __future__ import annotations

import socket
import subprocess

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
