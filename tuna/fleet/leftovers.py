"""What a go_fish killed outright left on its machines, found again and tidied up.

A go_fish that is SIGKILLed (or loses its terminal, or is killed for memory) cannot stop
its worker containers, collect their logs or remove its run folder (which holds the
workers' database URL). Every container go_fish starts carries labels saying which run
started it, for which phase, arch and worker, and which go_fish process owns it
(``host:pid:start time``); every run folder holds an ``owner`` file with the same. A
container or folder is *left over* when the go_fish that owns it is no longer running on
this head node. Those of a go_fish on another head node, and running containers with no
owner (started by a version before owners were written), are listed but never touched; an
exited container or a folder with no owner (and no running container) is left over.

:func:`find_leftovers` lists them on one machine; :func:`clean_leftovers` stops the
containers still running (each worker finishes its current job), appends their logs to
the usual log files, removes them and the run folders. go_fish does this on every machine
it starts workers on; ``go_fish --status`` lists what is left, ``go_fish --clean`` removes it.
"""

from __future__ import annotations

import os
import shlex
import socket
from dataclasses import dataclass, field
from pathlib import Path

from tuna.fleet.machines import MachineRow
from tuna.fleet.phase import worker_log
from tuna.fleet.ssh import Connections

OWNER_FILE = "owner"
TIDY_PREFIX = ".tidy-"  # <scratch>/.tidy-<run>-m<id>: a go_fish tidies it (hidden from */)
_FIELDS = ("run", "owner", "phase", "arch", "worker", "session")


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (tells a reused pid apart)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def this_owner() -> str:
    """``host:pid:start time`` of this go_fish."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid) or 0}"


def owner_alive(owner: str) -> bool | None:
    """Whether the go_fish that wrote ``owner`` still runs; None if it ran on another head."""
    host, _, rest = owner.partition(":")
    pid, _, start = rest.partition(":")
    while ":" in start:  # a host name with colons: the last two fields are pid and start
        host, pid, start = f"{host}:{pid}", *start.split(":", 1)
    if not pid.isdigit():
        return False
    if host != socket.gethostname():
        return None
    return _start_time(int(pid)) == start


@dataclass
class LeftContainer:
    name: str
    state: str  # docker's: running, exited, created, dead...
    exit_code: int | None
    labels: dict[str, str]

    @property
    def run(self) -> str:
        return self.labels.get("run", "")


@dataclass
class Leftovers:
    """One machine's leftovers: containers and run folders of go_fish runs that are gone."""

    machine: MachineRow
    containers: list[LeftContainer] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)  # run ids under the machine's scratch
    elsewhere: list[str] = field(default_factory=list)  # runs of a go_fish on another head
    logs: list[Path] = field(default_factory=list)  # written by clean_leftovers

    @property
    def empty(self) -> bool:
        return not self.containers and not self.folders

    def describe(self) -> str:
        if self.empty:
            return "none"
        running = sum(c.state == "running" for c in self.containers)
        parts = []
        if self.containers:
            parts.append(
                f"{len(self.containers)} container(s)" + (f", {running} running" if running else "")
            )
        if self.folders:
            parts.append(f"{len(self.folders)} run folder(s)")
        runs = sorted({c.run for c in self.containers} | set(self.folders))
        return f"{'; '.join(parts)} of run(s) {', '.join(runs)}"


def find_leftovers(
    conns: Connections, m: MachineRow, *, current_run: str = "", timeout: float = 30.0
) -> Leftovers:
    """The containers and run folders on ``m`` whose go_fish is gone (one SSH round trip)."""
    docker = shlex.split(m.docker)
    fmt = "|".join(["{{.Names}}", "{{.State}}", "{{.Status}}"])
    fmt += "".join(f'|{{{{.Label "tuna.{k}"}}}}' for k in _FIELDS)
    ps = shlex.join([*docker, "ps", "-a", "--filter", "label=tuna.run", "--format", fmt])
    scratch = shlex.quote(m.scratch)
    folders = (
        f'for d in {scratch}/*/; do [ -d "$d" ] || continue; '
        f'printf "%s|%s\\n" "$(basename "$d")" "$(cat "$d/{OWNER_FILE}" 2>/dev/null)"; done'
    )
    out = conns.check(m.host, f"{ps}; echo '--- folders'; {folders}", timeout=timeout)
    found = Leftovers(m)
    running_runs: set[str] = set()
    ps_part, _, folder_part = out.partition("--- folders\n")
    for line in ps_part.splitlines():
        cells = line.split("|")
        if len(cells) != 3 + len(_FIELDS):
            continue
        name, state, status = cells[:3]
        labels = dict(zip(_FIELDS, cells[3:], strict=True))
        if labels["run"] == current_run:
            continue
        if labels["owner"]:
            alive = owner_alive(labels["owner"])
        else:  # an older go_fish's: only an exited one is surely left over
            alive = None if state in ("running", "restarting", "paused") else False
        if alive is None:
            running_runs.add(labels["run"])
            found.elsewhere.append(labels["run"])
        elif not alive:
            code = None
            if status.startswith("Exited (") and ")" in status:
                text = status[len("Exited (") : status.index(")")]
                code = int(text) if text.lstrip("-").isdigit() else None
            found.containers.append(LeftContainer(name, state, code, labels))
    for line in folder_part.splitlines():
        run, _, owner = line.partition("|")
        if not run or run == current_run:
            continue
        alive = owner_alive(owner) if owner else (None if run in running_runs else False)
        if alive is None:
            found.elsewhere.append(run)
        elif not alive:
            found.folders.append(run)
    found.elsewhere = sorted(set(found.elsewhere))
    return found


def _claim_dir(m: MachineRow, run: str) -> str:
    return f"{m.scratch}/{TIDY_PREFIX}{run}-m{m.id}"


def _claim(conns: Connections, m: MachineRow, runs: list[str]) -> list[str]:
    """The runs of ``runs`` this go_fish gets to tidy on ``m``: each is claimed by making
    ``<scratch>/.tidy-<run>-m<machine id>`` (``mkdir`` is atomic) with this go_fish's owner
    in it; a claim whose go_fish is gone is taken over (renamed away first, so one taker
    wins). The machine is in the name: machines may share a scratch folder (NFS, or the
    test cluster's hosts on one file system), and each machine's containers are its own."""
    if not runs:
        return []
    scratch, owner = shlex.quote(m.scratch), shlex.quote(this_owner())
    script = [f"mkdir -p {scratch}"]
    for run in runs:
        d = shlex.quote(_claim_dir(m, run))
        script.append(
            f'if mkdir {d} 2>/dev/null; then printf %s {owner} > {d}/{OWNER_FILE}; echo "+{run}"; '
            f'else echo "?{run}|$(cat {d}/{OWNER_FILE} 2>/dev/null)"; fi'
        )
    got, stale = [], []
    for line in conns.check(m.host, "; ".join(script), timeout=30).splitlines():
        if line.startswith("+"):
            got.append(line[1:])
        elif line.startswith("?"):
            run, _, claimer = line[1:].partition("|")
            if owner_alive(claimer) is False:  # its go_fish died while tidying
                stale.append(run)
    for run in stale:
        d = shlex.quote(_claim_dir(m, run))
        gone = shlex.quote(f"{_claim_dir(m, run)}.stale.{os.getpid()}")
        take = (
            f"mv {d} {gone} 2>/dev/null && rm -rf {gone} && mkdir {d} 2>/dev/null && "
            f"printf %s {owner} > {d}/{OWNER_FILE} && echo taken"
        )
        if conns.run(m.host, take, timeout=30).stdout.strip() == "taken":
            got.append(run)
    return got


def _release(conns: Connections, m: MachineRow, runs: list[str]) -> None:
    if runs:
        paths = " ".join(shlex.quote(_claim_dir(m, run)) for run in runs)
        conns.run(m.host, f"rm -rf {paths}", timeout=30)


def clean_leftovers(
    conns: Connections, left: Leftovers, log_dir: Path, *, stop_timeout: int = 60
) -> Leftovers:
    """Stop, collect the logs of and remove ``left``'s containers; remove its run folders.

    One owner per clean-up: each run is claimed on the machine first (:func:`_claim`), and
    what is still there once claimed is cleaned, so two go_fish that found the same dead
    run do not both append its logs and report its removal. Returns what this call
    cleaned (``logs``: the log files written). Each log lands where the run would have put
    it: :func:`tuna.fleet.phase.worker_log`.
    """
    m = left.machine
    runs = sorted({c.run for c in left.containers} | set(left.folders))
    claimed = _claim(conns, m, runs)
    try:
        if not claimed:
            return Leftovers(m)
        now = find_leftovers(conns, m)  # what another go_fish has not cleaned meanwhile
        mine = Leftovers(
            m,
            [c for c in now.containers if c.run in claimed],
            [f for f in now.folders if f in claimed],
        )
        mine.logs = _clean(conns, mine, log_dir, stop_timeout)
        return mine
    finally:
        _release(conns, m, claimed)


def _clean(conns: Connections, left: Leftovers, log_dir: Path, stop_timeout: int) -> list[Path]:
    m = left.machine
    docker = shlex.split(m.docker)
    running = [c.name for c in left.containers if c.state in ("running", "restarting")]
    if running:
        conns.run(
            m.host,
            shlex.join([*docker, "stop", "-t", str(stop_timeout), *running]),
            timeout=stop_timeout + 30,
        )
    written: list[Path] = []
    for c in left.containers:
        r = conns.run(m.host, shlex.join([*docker, "logs", c.name]) + " 2>&1", timeout=60)
        labels = c.labels
        path = worker_log(
            log_dir,
            labels.get("phase") or "unknown",
            labels.get("arch") or "unknown",
            m.label,
            labels.get("session") or "unknown",
            c.run or "unknown",
            labels.get("worker") or c.name,
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            f.write(f"=== {c.name} on {m.label} (left over by run {c.run}; collected later) ===\n")
            f.write(r.stdout)
        written.append(path)
        conns.run(m.host, shlex.join([*docker, "rm", "-f", c.name]) + " >/dev/null", timeout=60)
    if left.folders:
        paths = " ".join(shlex.quote(f"{m.scratch}/{run}") for run in left.folders)
        conns.check(m.host, f"rm -rf {paths}", timeout=60)
    return written


def tidy_machine(conns: Connections, m: MachineRow, log_dir: Path) -> Leftovers:
    """Find and clean ``m``'s leftovers (``go_fish --clean``); what this call cleaned."""
    left = find_leftovers(conns, m)
    return left if left.empty else clean_leftovers(conns, left, log_dir)
