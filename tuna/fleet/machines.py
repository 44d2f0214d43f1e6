"""The ``machine`` table: the worker hosts go_fish may use, and how to reach them.

A machine is a host name (or address) and SSH port, the user and key file to log in
with, what it has (arch, CU count, GPU indices) and its Docker settings. No password is
ever stored: authentication is by key or agent.

Docker settings (a JSON object, all optional):

* ``docker``: how to call the docker CLI there (default ``docker``; e.g. ``sudo docker``)
* ``compile_workers``: compile containers to run there (default: go_fish's ``-w``)
* ``scratch``: a directory go_fish may use there (default ``/tmp/tuna-go_fish``)
* ``run_args``: extra ``docker run`` arguments (a list of strings)
* ``lock_dir``: the directory of the machine's evaluation locks, mounted into every worker
  container (default ``/tmp/tuna-locks``, where a ``tuna worker`` started there without
  Docker takes them too), so that evaluations which must own the machine or a GPU take
  turns across containers and go_fish runs
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from tuna.db import Database
from tuna.db.clock import db_now
from tuna.db.models import Machine
from tuna.errors import DatabaseError, NotFoundError, TunaError
from tuna.fleet.ssh import Host

DOCKER_SETTINGS = {
    "docker": str,
    "compile_workers": int,
    "scratch": str,
    "run_args": list,
    "lock_dir": str,
}
DEFAULT_SCRATCH = "/tmp/tuna-go_fish"
DEFAULT_LOCK_DIR = "/tmp/tuna-locks"  # tuna.worker.exclusive's default on Linux
EDITABLE = (
    "hostname", "port", "user", "arch", "num_cu", "gpus", "available", "key_file",
    "user_platform",
)  # fmt: skip


@dataclass(frozen=True)
class MachineRow:
    id: int
    hostname: str
    port: int = 22
    user: str | None = None
    arch: str | None = None
    num_cu: int | None = None
    gpus: tuple[int, ...] = ()
    available: bool = True
    key_file: str | None = None
    docker_settings: Mapping[str, Any] = field(default_factory=dict)
    last_seen: dt.datetime | None = None
    user_platform: Mapping[str, Any] = field(default_factory=dict)  # --platform-json
    platform: int | None = None  # what its latest evaluation worker reported

    @property
    def label(self) -> str:
        """What messages and log paths call it: the host name, with the port off 22 (two
        machines may share an address on different ports)."""
        return self.hostname if self.port == 22 else f"{self.hostname}:{self.port}"

    @property
    def host(self) -> Host:
        return Host(self.hostname, self.hostname, self.port, self.user, self.key_file)

    @property
    def docker(self) -> str:
        return str(self.docker_settings.get("docker") or "docker")

    @property
    def scratch(self) -> str:
        return str(self.docker_settings.get("scratch") or DEFAULT_SCRATCH)

    @property
    def lock_dir(self) -> str:
        return str(self.docker_settings.get("lock_dir") or DEFAULT_LOCK_DIR)

    @property
    def run_args(self) -> list[str]:
        return [str(a) for a in self.docker_settings.get("run_args") or []]

    @property
    def compile_workers(self) -> int | None:
        n = self.docker_settings.get("compile_workers")
        return int(n) if n is not None else None


def _row(m: Machine) -> MachineRow:
    return MachineRow(
        id=m.id,
        hostname=m.hostname,
        port=m.port,
        user=m.user,
        arch=m.arch,
        num_cu=m.num_cu,
        gpus=tuple(m.gpus or ()),
        available=bool(m.available),
        key_file=m.key_file,
        docker_settings=dict(m.docker_settings or {}),
        last_seen=m.last_seen,
        user_platform=dict(m.user_platform or {}),
        platform=m.platform,
    )


def check_docker_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` if every key is known and of the right type, else a TunaError."""
    for key, value in settings.items():
        kind = DOCKER_SETTINGS.get(key)
        if kind is None:
            raise TunaError(
                f"unknown docker setting {key!r}; known settings: {', '.join(DOCKER_SETTINGS)}"
            )
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise TunaError(f"docker setting {key!r} must be a {kind.__name__}, not {value!r}")
    return dict(settings)


def add_machine(
    db: Database,
    hostname: str,
    *,
    port: int = 22,
    user: str | None = None,
    arch: str | None = None,
    num_cu: int | None = None,
    gpus: Sequence[int] = (),
    available: bool = True,
    key_file: str | None = None,
    docker_settings: Mapping[str, Any] | None = None,
    user_platform: Mapping[str, Any] | None = None,
) -> MachineRow:
    """Register a machine; a second one with the same host name and port is refused.

    ``user_platform`` is added to the platform of every measurement taken on it."""
    m = Machine(
        hostname=hostname,
        port=port,
        user=user,
        arch=arch,
        num_cu=num_cu,
        gpus=list(gpus),
        available=available,
        key_file=key_file,
        docker_settings=check_docker_settings(docker_settings or {}),
        user_platform=dict(user_platform) if user_platform else None,
    )
    try:
        with db.session() as s:
            s.add(m)
            s.flush()
            return _row(m)
    except DatabaseError as e:
        if isinstance(e.__cause__, IntegrityError):
            raise TunaError(
                f"machine {hostname}:{port} is already registered; change it with "
                "`tuna machine set`"
            ) from e
        raise


def get_machine(db: Database, machine: int | str) -> MachineRow:
    """A machine by id or host name."""
    with db.session() as s:
        if isinstance(machine, int) or str(machine).isdigit():
            m = s.get(Machine, int(machine))
            found = [m] if m else []
        else:
            found = list(s.scalars(select(Machine).where(Machine.hostname == machine)))
        if len(found) != 1:
            what = "no" if not found else "more than one"
            raise NotFoundError(
                f"{what} machine {machine!r}; `tuna machine list` shows the registered ones"
            )
        return _row(found[0])


def list_machines(
    db: Database,
    *,
    arch: str | None = None,
    num_cu: int | None = None,
    ids: Sequence[int] = (),
    available_only: bool = False,
) -> list[MachineRow]:
    """Registered machines, filtered as go_fish's ``-a``, ``-n`` and ``-m`` do."""
    q = select(Machine).order_by(Machine.id)
    if arch:
        q = q.where(Machine.arch == arch)
    if num_cu is not None:
        q = q.where(Machine.num_cu == num_cu)
    if ids:
        q = q.where(Machine.id.in_(list(ids)))
    if available_only:
        q = q.where(Machine.available.is_(True))
    with db.session() as s:
        return [_row(m) for m in s.scalars(q)]


def set_machine(db: Database, machine: int | str, **changes: Any) -> MachineRow:
    """Change some of a machine's fields; ``docker_settings`` entries are merged (None deletes)."""
    target = get_machine(db, machine)
    with db.session() as s:
        m = s.get(Machine, target.id)
        assert m is not None
        for key, value in changes.items():
            if key == "docker_settings":
                merged = dict(m.docker_settings or {})
                for k, v in value.items():
                    if v is None:
                        merged.pop(k, None)
                    else:
                        merged[k] = v
                m.docker_settings = check_docker_settings(merged)
            elif key == "user_platform":
                m.user_platform = dict(value) if value else None
            elif key in EDITABLE:
                setattr(m, key, list(value) if key == "gpus" else value)
            else:
                raise TunaError(f"a machine has no field {key!r}; fields: {', '.join(EDITABLE)}")
        s.flush()
        return _row(m)


def remove_machine(db: Database, machine: int | str) -> MachineRow:
    target = get_machine(db, machine)
    with db.session() as s:
        m = s.get(Machine, target.id)
        if m is not None:
            s.delete(m)
    return target


def mark_seen(db: Database, ids: Sequence[int]) -> None:
    """Set ``last_seen`` of these machines to now (the database clock)."""
    if not ids:
        return
    with db.session() as s:
        s.execute(update(Machine).where(Machine.id.in_(list(ids))).values(last_seen=db_now()))
