"""Looking at machines: can go_fish reach them, is Docker up, is the image there, which GPUs."""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL

from tuna.config import db_url_from
from tuna.errors import TunaError
from tuna.fleet.fanout import HostOutcome, fan_out
from tuna.fleet.leftovers import Leftovers, find_leftovers, tidy_machine
from tuna.fleet.machines import MachineRow
from tuna.fleet.ssh import CommandResult, Connections, SshError

LOOPBACK = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class MachineStatus:
    machine: MachineRow
    reachable: bool
    latency_ms: float | None = None
    docker: str | None = None  # the engine's version, or why there is none
    docker_ok: bool = False
    image: str | None = None  # the image's id, or why it is missing
    image_ok: bool = False
    devices: str | None = None  # GPU device nodes seen
    error: str | None = None
    leftovers: Leftovers | None = None  # what go_fish runs killed outright left there


def machine_status(conns: Connections, m: MachineRow, image: str | None) -> MachineStatus:
    """Reachability, Docker engine, image and GPU devices of one machine."""
    t0 = time.monotonic()
    try:
        conns.check(m.host, "true", timeout=15)
    except SshError as e:
        return MachineStatus(m, reachable=False, error=str(e))
    latency = (time.monotonic() - t0) * 1000
    docker = shlex.split(m.docker)
    r = conns.run(
        m.host, shlex.join([*docker, "info", "--format", "{{.ServerVersion}}"]), timeout=30
    )
    docker_ok = r.ok and bool(r.stdout.strip())
    docker_text = r.stdout.strip() if docker_ok else (r.error_line or f"exit {r.exit_status}")
    image_ok, image_text = False, None
    if image and docker_ok:
        r = conns.run(
            m.host,
            shlex.join([*docker, "image", "inspect", "--format", "{{.Id}}", image]),
            timeout=30,
        )
        image_ok = r.ok
        image_text = (
            r.stdout.strip()[:19]
            if r.ok
            else f"missing: {(r.error_line or f'exit {r.exit_status}')}"
        )
    devices = conns.run(
        m.host, "ls /dev/kfd /dev/dri/renderD* 2>/dev/null | tr '\\n' ' '", timeout=15
    ).stdout.strip()
    left = find_leftovers(conns, m) if docker_ok else None
    return MachineStatus(
        m,
        reachable=True,
        latency_ms=latency,
        docker=docker_text,
        docker_ok=docker_ok,
        image=image_text,
        image_ok=image_ok,
        devices=devices or "none",
        leftovers=left,
    )


def fleet_status(
    conns: Connections, machines: Sequence[MachineRow], image: str | None
) -> list[MachineStatus]:
    by_host = {m.host: m for m in machines}
    results = fan_out(list(by_host), lambda h: machine_status(conns, by_host[h], image))
    return [
        o.value
        if o.value is not None
        else MachineStatus(by_host[o.host], False, error=str(o.error))
        for o in results
    ]


def run_everywhere(
    conns: Connections, machines: Sequence[MachineRow], command: str
) -> list[HostOutcome[CommandResult]]:
    """``go_fish -e``: ``command`` on every machine at once; every machine's outcome."""
    return fan_out([m.host for m in machines], lambda h: conns.run(h, command))


def clean_everywhere(
    conns: Connections, machines: Sequence[MachineRow], log_dir: Path
) -> list[HostOutcome[Leftovers]]:
    """``go_fish --clean``: what killed go_fish runs left, removed from every machine."""
    by_host = {m.host: m for m in machines}
    return fan_out(list(by_host), lambda h: tidy_machine(conns, by_host[h], log_dir))


def check_worker_db_url(url: URL) -> None:
    """Refuse a database URL remote workers could not use (SQLite, a loopback address)."""
    if url.get_backend_name() == "sqlite":
        raise TunaError(
            "go_fish on remote machines needs a MySQL/MariaDB database they can reach; the "
            "embedded SQLite database is only for --local. Set TUNA_DB_URL"
        )
    if (url.host or "localhost") in LOOPBACK:
        raise TunaError(
            f"workers on other machines cannot reach the database at {url.host or 'localhost'}; "
            "set TUNA_WORKER_DB_URL to the URL they can use (e.g. the head node's address)"
        )


def worker_db_url(head: URL, env: dict[str, str] | None = None) -> URL:
    """The database URL remote workers get: TUNA_WORKER_DB_URL, else the head's; checked."""
    given = (os.environ if env is None else env).get("TUNA_WORKER_DB_URL")
    url = db_url_from(given, "TUNA_WORKER_DB_URL") if given else head
    check_worker_db_url(url)
    return url
