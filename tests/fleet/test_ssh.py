"""SSH against a real OpenSSH server: host keys, authentication, timeouts, reuse, fan-out."""

from __future__ import annotations

import getpass
import stat
import subprocess
import time
from pathlib import Path

import paramiko
import pytest

from tests.fleet.sshd import Sshd, mute_port_fixture, sshd_fixture  # noqa: F401  (fixtures)
from tuna.errors import ConfigurationError
from tuna.fleet.fanout import FleetError, fan_out, raise_failures
from tuna.fleet.ssh import (
    ChangedHostKey,
    CommandTimeout,
    Connections,
    Host,
    SshError,
    UnknownHostKey,
    fetch_host_key,
    fingerprint,
    trust_host_key,
)


def host(s: Sshd, **kw) -> Host:
    return Host(
        kw.pop("name", "w1"),
        "127.0.0.1",
        s.port,
        getpass.getuser(),
        kw.pop("key_file", str(s.client_key)),
    )


def test_a_command_runs_and_reports_its_output_and_status(sshd):
    with Connections(sshd.known_hosts) as conns:
        r = conns.run(host(sshd), "echo out; echo err >&2; exit 3")
        assert (r.exit_status, r.stdout, r.stderr, r.ok) == (3, "out\n", "err\n", False)
        assert conns.check(host(sshd), "cat", timeout=5) == ""
        r = conns.run(host(sshd), "wc -c", stdin=b"12345")
        assert r.stdout.strip() == "5"
        with pytest.raises(SshError, match=r"`ls /nonexistent` exited 2: .*No such file"):
            conns.check(host(sshd), "ls /nonexistent")


def test_one_connection_per_host_is_reused(sshd):
    with Connections(sshd.known_hosts) as conns:
        first = conns.client(host(sshd)).get_transport()
        for _ in range(3):
            conns.run(host(sshd), "true")
        assert conns.client(host(sshd)).get_transport() is first


def test_an_unknown_host_key_is_refused_with_its_fingerprint_and_how_to_trust_it(sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    key = paramiko.Ed25519Key.from_private_key_file(str(sshd.host_key))
    with Connections(empty) as conns, pytest.raises(UnknownHostKey) as e:
        conns.run(host(sshd), "true")
    msg = str(e.value)
    assert fingerprint(key) in msg
    assert "tuna machine trust w1" in msg and f"ssh-keyscan -p {sshd.port} 127.0.0.1" in msg


def test_a_changed_host_key_is_refused(sshd, tmp_path):
    other = paramiko.Ed25519Key.from_private_key_file(str(sshd.client_key))
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} ssh-ed25519 {other.get_base64()}\n")
    with Connections(wrong) as conns, pytest.raises(ChangedHostKey, match="host key CHANGED"):
        conns.run(host(sshd), "true")


def test_trusting_a_fetched_key_lets_the_next_connection_through(sshd, tmp_path):
    known = tmp_path / "ssh" / "known_hosts"
    h = host(sshd)
    key = fetch_host_key(h)
    assert key.get_base64() == (sshd.host_key.parent / "host_ed25519.pub").read_text().split()[1]
    trust_host_key(h, key, known)
    assert stat.S_IMODE(known.stat().st_mode) == 0o600
    with Connections(known) as conns:
        assert conns.check(h, "echo hi") == "hi\n"


def test_a_key_the_host_does_not_accept_fails_authentication(sshd, tmp_path):
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    with (
        Connections(sshd.known_hosts) as conns,
        pytest.raises(SshError, match=f"authentication as .* with key {stranger} failed"),
    ):
        conns.run(host(sshd, key_file=str(stranger)), "true")


def test_a_slow_command_times_out_and_the_next_one_reconnects(sshd):
    with Connections(sshd.known_hosts) as conns:
        t0 = time.monotonic()
        with pytest.raises(CommandTimeout, match="`sleep 30` did not finish within 0.5 s"):
            conns.run(host(sshd), "sleep 30", timeout=0.5)
        assert time.monotonic() - t0 < 5
        assert conns.check(host(sshd), "echo back") == "back\n"


def test_an_unreachable_port_is_a_clear_error(sshd):
    dead = Host("gone", "127.0.0.1", 1, getpass.getuser(), str(sshd.client_key))
    with (
        Connections(sshd.known_hosts, connect_timeout=2) as conns,
        pytest.raises(SshError, match="gone \\(127.0.0.1\\): cannot connect to port 1"),
    ):
        conns.run(dead, "true")


def test_put_writes_a_private_file(sshd, tmp_path):
    target = tmp_path / "secret"
    with Connections(sshd.known_hosts) as conns:
        conns.put(host(sshd), str(target), b"mysql://u:pw@h/db")
    assert target.read_bytes() == b"mysql://u:pw@h/db"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_fan_out_reports_every_host_and_raises_once(sshd):
    good = [host(sshd, name="w1"), host(sshd, name="w2")]
    bad = Host("w3", "127.0.0.1", 1, getpass.getuser(), str(sshd.client_key))
    with Connections(sshd.known_hosts, connect_timeout=2) as conns:
        outcomes = fan_out([good[0], bad, good[1]], lambda h: conns.check(h, f"echo {h.name}"))
    assert [o.host.name for o in outcomes] == ["w1", "w3", "w2"]
    assert [o.value for o in outcomes] == ["w1\n", None, "w2\n"]
    with pytest.raises(FleetError) as e:
        raise_failures(outcomes, "echo")
    assert str(e.value).splitlines()[0] == "echo failed on 1 host(s):"
    assert "w3 (127.0.0.1): cannot connect to port 1" in str(e.value)


def test_a_port_that_never_speaks_ssh_is_one_clear_line_and_no_traceback(mute_port, capfd):
    mute = Host("mute", "127.0.0.1", mute_port, getpass.getuser())
    with Connections(Path("/nonexistent"), connect_timeout=1) as conns:
        with pytest.raises(SshError) as e:
            conns.run(mute, "true")
        with pytest.raises(SshError):
            fetch_host_key(mute, timeout=1)
    msg = str(e.value)
    assert msg == (
        f"mute (127.0.0.1): port {mute_port} accepted the connection but no SSH server "
        "answered within 1 s"
    )
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception" not in err, err


def test_the_connect_timeout_is_a_setting(mute_port, monkeypatch):
    """``TUNA_SSH_CONNECT_TIMEOUT`` bounds connecting (default 10 s); nonsense is refused."""
    mute = Host("mute", "127.0.0.1", mute_port, getpass.getuser())
    monkeypatch.delenv("TUNA_SSH_CONNECT_TIMEOUT", raising=False)
    assert Connections(Path("/nonexistent")).connect_timeout == 10
    monkeypatch.setenv("TUNA_SSH_CONNECT_TIMEOUT", "0.5")
    with Connections(Path("/nonexistent")) as conns:
        assert conns.connect_timeout == 0.5
        t0 = time.monotonic()
        with pytest.raises(SshError, match=r"no SSH server answered within 0\.5 s$"):
            conns.run(mute, "true")
        assert time.monotonic() - t0 < 5
    with pytest.raises(SshError, match=r"no SSH server answered within 0\.5 s$"):
        fetch_host_key(mute)
    assert Connections(Path("/nonexistent"), connect_timeout=3).connect_timeout == 3
    for bad in ("0", "-1", "ten", "inf", "nan"):
        monkeypatch.setenv("TUNA_SSH_CONNECT_TIMEOUT", bad)
        with pytest.raises(ConfigurationError, match="TUNA_SSH_CONNECT_TIMEOUT"):
            Connections(Path("/nonexistent"))
