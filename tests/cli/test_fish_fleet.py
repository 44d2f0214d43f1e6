"""go_fish's commands on the machines (tuna.cli.fish_fleet) against a real OpenSSH server."""

from __future__ import annotations

import getpass
import socket

import click
import pytest

from tests.fleet.sshd import Sshd, sshd_fixture  # noqa: F401  (fixture)
from tuna.cli.fish_fleet import exec_on
from tuna.fleet.machines import MachineRow


def _closed_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_command_runs_on_each_machine_and_an_unreachable_one_fails_the_whole(sshd, capsys):
    user, key = getpass.getuser(), str(sshd.client_key)
    up = MachineRow(1, "127.0.0.1", sshd.port, user, key_file=key)
    exec_on([up], "echo hello from $0", sshd.known_hosts)
    out = capsys.readouterr().out
    assert "exit 0" in out and "hello from" in out and "1 of 1 machine(s) succeeded" in out
    down = MachineRow(2, "127.0.0.1", _closed_port(), user, key_file=key)
    with pytest.raises(click.exceptions.Exit) as e:
        exec_on([up, down], "true", sshd.known_hosts)
    assert e.value.exit_code == 1
    captured = capsys.readouterr()
    assert "unreachable" in captured.out and "1 of 2 machine(s) succeeded" in captured.out
