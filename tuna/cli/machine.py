"""``tuna machine``: the worker hosts go_fish may use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import COUNT_RANGE, TunaGroup, columns, console, database, emit, output_options
from tuna.errors import TunaError
from tuna.fleet.machines import (
    DOCKER_SETTINGS,
    MachineRow,
    add_machine,
    get_machine,
    list_machines,
    remove_machine,
    set_machine,
)
from tuna.fleet.ssh import default_known_hosts, fetch_host_key, fingerprint, trust_host_key


def _gpus(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    if not text.strip():
        return ()
    try:
        return tuple(int(g) for g in text.split(","))
    except ValueError:
        raise TunaError(
            f"--gpus {text!r}: write GPU indices separated by commas, e.g. 0,1,2,3"
        ) from None


def _docker(pairs: tuple[str, ...], *, allow_unset: bool = False) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in DOCKER_SETTINGS:
            raise TunaError(
                f"--docker {pair!r}: write KEY=VALUE with KEY one of {', '.join(DOCKER_SETTINGS)}"
            )
        kind = DOCKER_SETTINGS[key]
        if allow_unset and value == "":
            settings[key] = None
        elif kind is int:
            try:
                settings[key] = int(value)
            except ValueError:
                raise TunaError(f"--docker {pair!r}: {key} takes a whole number") from None
        elif kind is list:
            settings[key] = value.split()
        else:
            settings[key] = value
    return settings


def _user_platform(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    from tuna.platforms import read_user_platform

    return read_user_platform(path)


def _readable(info: dict[str, Any]) -> dict[str, Any]:
    """The platform as a person reads it: the CPU flags on one line (--json keeps the list)."""
    cpu = info.get("cpu")
    if isinstance(cpu, dict) and isinstance(cpu.get("flags"), list):
        return {**info, "cpu": {**cpu, "flags": " ".join(map(str, cpu["flags"]))}}
    return info


def machine_table(rows: list[MachineRow]) -> Table:
    table = Table(title_justify="left")
    cols = ("id", "host", "port", "user", "arch", "num_cu", "gpus", "available", "key", "docker")
    for col in (*cols, "last seen"):
        table.add_column(col, justify="right" if col in ("id", "port", "num_cu") else "left")
    for m in rows:
        table.add_row(
            str(m.id),
            escape(m.hostname),
            str(m.port),
            escape(m.user or ""),
            m.arch or "",
            "" if m.num_cu is None else str(m.num_cu),
            ",".join(map(str, m.gpus)),
            "yes" if m.available else "no",
            escape(m.key_file or "agent"),
            escape(
                json.dumps(dict(m.docker_settings), sort_keys=True) if m.docker_settings else ""
            ),
            m.last_seen.strftime("%Y-%m-%d %H:%M") if m.last_seen else "never",
        )
    return table


@click.group("machine", cls=TunaGroup)
def machine_group() -> None:
    """Worker machines go_fish reaches over SSH (no password is ever stored).

    Authentication is by the machine's key file or your SSH agent; host keys must be in
    your known-hosts file (TUNA_KNOWN_HOSTS, default ~/.ssh/known_hosts).

    \b
    Examples:
      tuna machine add gpu-node-01 --user tuna --arch gfx90a --num-cu 104 --gpus 0,1,2,3
      tuna machine add 10.0.0.7 --port 2222 --key-file ~/.ssh/tuna --docker compile_workers=16
      tuna machine list -a gfx90a
      tuna machine set 3 --unavailable
      tuna machine trust 3
      tuna machine show 3
      tuna machine remove 3
    """


_KEYS = ", ".join(DOCKER_SETTINGS)


@machine_group.command("add")
@click.argument("hostname")
@click.option("--port", type=click.IntRange(1, 65535), default=22, show_default=True)
@click.option("--user", help="User to log in as (default: yours).")
@click.option("-a", "--arch", help="GPU architecture, e.g. gfx90a.")
@click.option(
    "-n", "--num-cu", "--num_cu", "num_cu", type=COUNT_RANGE, help="Compute units per GPU."
)
@click.option("--gpus", help="GPU indices, comma-separated (one eval worker per GPU).")
@click.option("--key-file", help="Private key to log in with (default: your SSH agent and keys).")
@click.option(
    "--docker",
    "docker",
    multiple=True,
    metavar="KEY=VALUE",
    help=f"Docker setting (repeatable): {_KEYS}.",
)
@click.option("--unavailable", is_flag=True, help="Register it, but let go_fish skip it.")
@click.option(
    "--platform-json",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help='A JSON object added (under "user") to the platform of every measurement '
    'taken on it, e.g. {"cooling": "liquid"}.',
)
def add(
    hostname: str,
    port: int,
    user: str | None,
    arch: str | None,
    num_cu: int | None,
    gpus: str | None,
    key_file: str | None,
    docker: tuple[str, ...],
    unavailable: bool,
    platform_json: str | None,
) -> None:
    """Register a worker machine.

    \b
    Examples:
      tuna machine add gpu-node-01 --user tuna --arch gfx90a --num-cu 104 --gpus 0,1,2,3
      tuna machine add 10.0.0.7 --port 2222 --docker "docker=sudo docker"
      tuna machine add gpu-node-02 --platform-json node02.json
    """
    user_platform = _user_platform(platform_json)
    db = database()
    try:
        m = add_machine(
            db,
            hostname,
            port=port,
            user=user,
            arch=arch,
            num_cu=num_cu,
            gpus=_gpus(gpus) or (),
            available=not unavailable,
            key_file=str(Path(key_file).expanduser()) if key_file else None,
            docker_settings=_docker(docker),
            user_platform=user_platform,
        )
    finally:
        db.dispose()
    console.print(f"machine {m.id}: {escape(m.hostname)}:{m.port} registered")


@machine_group.command("list")
@click.option("-a", "--arch", help="Only machines of this arch.")
@click.option("-n", "--num-cu", "--num_cu", "num_cu", type=COUNT_RANGE, help="Only this CU count.")
@output_options()
def list_cmd(arch: str | None, num_cu: int | None, output: str | None) -> None:
    """List registered machines.

    \b
    Examples:
      tuna machine list
      tuna machine list -a gfx90a --json
      tuna machine list --csv
    """
    db = database()
    try:
        rows = list_machines(db, arch=arch, num_cu=num_cu)
    finally:
        db.dispose()
    if emit([dict(m.__dict__) for m in rows], output, fields=columns(MachineRow)):
        return
    if rows:
        console.print(machine_table(rows))
    else:
        console.print("no machines registered; add one with `tuna machine add HOSTNAME`")


@machine_group.command("set")
@click.argument("machine")
@click.option("--hostname", help="New host name or address.")
@click.option("--port", type=click.IntRange(1, 65535))
@click.option("--user")
@click.option("-a", "--arch")
@click.option("-n", "--num-cu", "--num_cu", "num_cu", type=COUNT_RANGE)
@click.option("--gpus", help="GPU indices, comma-separated ('' for none).")
@click.option("--key-file", help="Private key ('' to use the agent).")
@click.option("--available/--unavailable", default=None, help="Whether go_fish may use it.")
@click.option(
    "--docker",
    "docker",
    multiple=True,
    metavar="KEY=VALUE",
    help=f"Docker setting to change (KEY= removes it): {_KEYS}.",
)
@click.option(
    "--platform-json",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help='A JSON object added (under "user") to the platform of every measurement '
    'taken on it, e.g. {"cooling": "liquid"}; replaces what it added before ({} for nothing).',
)
def set_cmd(
    machine: str,
    hostname: str | None,
    port: int | None,
    user: str | None,
    arch: str | None,
    num_cu: int | None,
    gpus: str | None,
    key_file: str | None,
    available: bool | None,
    docker: tuple[str, ...],
    platform_json: str | None,
) -> None:
    """Change a machine (by id or host name).

    \b
    Examples:
      tuna machine set 3 --unavailable
      tuna machine set gpu-node-01 --gpus 0,1 --docker compile_workers=8
      tuna machine set 3 --platform-json node03.json
    """
    changes: dict[str, Any] = {
        k: v
        for k, v in {
            "hostname": hostname,
            "port": port,
            "user": user,
            "arch": arch,
            "num_cu": num_cu,
            "available": available,
        }.items()
        if v is not None
    }
    if gpus is not None:
        changes["gpus"] = _gpus(gpus)
    if key_file is not None:
        changes["key_file"] = str(Path(key_file).expanduser()) if key_file else None
    if docker:
        changes["docker_settings"] = _docker(docker, allow_unset=True)
    if platform_json is not None:
        changes["user_platform"] = _user_platform(platform_json)
    if not changes:
        raise click.UsageError("say what to change, e.g. --unavailable or --gpus 0,1")
    db = database()
    try:
        m = set_machine(db, machine, **changes)
    finally:
        db.dispose()
    console.print(machine_table([m]))


@machine_group.command("show")
@click.argument("machine")
@output_options(csv_too=False)
def show(machine: str, output: str | None) -> None:
    """Show a machine and the platform its latest evaluation worker reported.

    The platform is what the worker collected (CPU, kernel, compiler, GPUs, image) and,
    under "user", what `--platform-json` added on the machine and on the session.

    \b
    Examples:
      tuna machine show 3
      tuna machine show gpu-node-01 --json
    """
    from tuna.platforms import platform_info

    db = database()
    try:
        m = get_machine(db, machine)
        info = platform_info(db, m.platform) if m.platform is not None else None
    finally:
        db.dispose()
    doc = {**m.__dict__, "platform_info": info}
    if emit([doc], output, document=doc):
        return
    console.print(machine_table([m]))
    if m.user_platform:
        console.print("user's additions (--platform-json):", markup=False)
        console.print(json.dumps(dict(m.user_platform), indent=2, sort_keys=True), markup=False)
    if info is None:
        console.print(
            "platform: none reported yet (an evaluation worker reports it when it starts)",
            markup=False,
        )
    else:
        console.print(f"platform {m.platform}:", markup=False)
        console.print(json.dumps(_readable(info), indent=2, sort_keys=True), markup=False)


@machine_group.command("remove")
@click.argument("machine")
def remove(machine: str) -> None:
    """Forget a machine (its jobs' history stays).

    \b
    Example:
      tuna machine remove 3
    """
    db = database()
    try:
        m = remove_machine(db, machine)
    finally:
        db.dispose()
    console.print(f"machine {m.id} ({escape(m.hostname)}:{m.port}) removed")


@machine_group.command("trust")
@click.argument("machine")
@click.option("--known-hosts", type=click.Path(path_type=Path), help="File to add the key to.")
@click.option("-y", "--yes", is_flag=True, help="Add the key without asking.")
def trust(machine: str, known_hosts: Path | None, yes: bool) -> None:
    """Fetch a machine's SSH host key, show its fingerprint and add it to known hosts.

    Compare the fingerprint with the one the machine's owner gives you
    (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the machine) before trusting it.

    \b
    Examples:
      tuna machine trust 3
      tuna machine trust gpu-node-01 --yes
    """
    db = database()
    try:
        m = get_machine(db, machine)
    finally:
        db.dispose()
    path = known_hosts or default_known_hosts()
    key = fetch_host_key(m.host)
    console.print(f"{escape(m.hostname)}:{m.port} presents {key.get_name()} {fingerprint(key)}")
    if not yes and not click.confirm(f"add it to {path}?", default=False):
        raise click.exceptions.Exit(1)
    trust_host_key(m.host, key, path)
    console.print(f"added to {escape(str(path))}")
