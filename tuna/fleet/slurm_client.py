"""Slurm's client commands as go_fish asks them: sinfo (partitions), squeue (tasks, and the
arrays of go_fish runs), scancel, and tidying what a killed go_fish left.

Each command runs with a timeout and without ``COLUMNS`` (squeue 22.05 leaves out every line
wider than ``COLUMNS`` says); a failure is a :class:`SlurmError` with Slurm's own error line.
:mod:`tuna.fleet.slurm` submits the arrays and watches them through these.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuna.fleet.errors import FleetError
from tuna.fleet.leftovers import owner_alive

log = logging.getLogger(__name__)

JOB_PREFIX = "tuna-"
COMMENT_TAG = "tuna-go_fish"

# squeue's states (long form) in which a task still holds, or will get, a worker.
WAITING = {"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "SUSPENDED"}
WORKING = {"CONFIGURING", "RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING"}


class SlurmError(FleetError):
    """Raised when Slurm cannot be asked (no client commands) or refuses what go_fish asks."""


def slurm_command(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SlurmError(
            f"--slurm: {name} is not on PATH; run go_fish where Slurm's client commands are "
            "(a login node), or install them (Debian: apt-get install slurm-client)"
        )
    return path


def run_slurm(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a Slurm client command; raise :class:`SlurmError` with its last error line."""
    cmd = [slurm_command(argv[0]), *argv[1:]]
    # Without COLUMNS: squeue 22.05 leaves out every line wider than COLUMNS says.
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != "COLUMNS"}
    try:
        proc = subprocess.run(
            cmd, input=stdin, capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired as e:
        raise SlurmError(f"{argv[0]} did not answer in {timeout:g} s (is slurmctld up?)") from e
    if proc.returncode != 0:
        raise SlurmError(_error_line(proc.stderr) or f"{argv[0]} exited {proc.returncode}")
    return proc


def _error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    failed = [ln for ln in lines if "failed" in ln.lower()]
    line = (failed or lines or [""])[-1]
    return line.removeprefix("sbatch: error: ").removeprefix("squeue: error: ")


@dataclass(frozen=True)
class Partition:
    name: str
    nodes: tuple[str, ...]
    gpus: int  # GRES gpu over all its nodes
    cpus: int


def partitions() -> dict[str, Partition]:
    """Every partition Slurm knows ('' names the default one too)."""
    out = run_slurm(["sinfo", "-h", "-N", "-o", "%P|%N|%G|%c"]).stdout
    nodes: dict[str, dict[str, tuple[int, int]]] = {}
    default = ""
    for line in out.splitlines():
        name, node, gres, cpus = (line.split("|") + ["", "", ""])[:4]
        if name.endswith("*"):
            name = name[:-1]
            default = name
        gpus = sum(_gres_gpus(g) for g in gres.split(","))
        nodes.setdefault(name, {})[node] = (gpus, int(cpus) if cpus.isdigit() else 1)
    found = {
        name: Partition(
            name,
            tuple(sorted(ns)),
            sum(g for g, _ in ns.values()),
            sum(c for _, c in ns.values()),
        )
        for name, ns in nodes.items()
    }
    if default:
        found[""] = found[default]
    return found


def _gres_gpus(gres: str) -> int:
    """How many GPUs a GRES string offers: ``gpu:2``, ``gpu:a100:4(S:0-1)``."""
    parts = gres.split("(")[0].split(":")
    if parts[0] != "gpu" or len(parts) < 2:
        return 0
    return int(parts[-1]) if parts[-1].isdigit() else 0


def find_partition(name: str, known: Mapping[str, Partition]) -> Partition:
    if name in known:
        return known[name]
    names = ", ".join(sorted(n for n in known if n)) or "none"
    if not name:
        raise SlurmError(f"Slurm has no default partition (partitions: {names}); name one")
    raise SlurmError(
        f"Slurm partition {name!r} does not exist (partitions: {names}); name one of them "
        "with --partition or TUNA_SLURM_PARTITION"
    )


@dataclass
class TaskState:
    array: str  # the array's job id
    index: int  # the task's index in it
    state: str  # squeue's long form: PENDING, RUNNING, COMPLETED, ...
    node: str
    reason: str

    @property
    def alive(self) -> bool:
        return self.state in WAITING or self.state in WORKING


def queue(arrays: Sequence[str]) -> list[TaskState]:
    """Every task of these arrays Slurm still knows (``squeue -r``), pending ones each apart."""
    if not arrays:
        return []
    out = run_slurm(
        ["squeue", "-h", "-r", "-t", "all", "-j", ",".join(arrays), "-o", "%F|%K|%T|%N|%r"],
        timeout=20,
    ).stdout
    tasks = []
    for line in out.splitlines():
        cells = line.split("|")
        if len(cells) != 5 or not cells[1].isdigit():
            continue
        tasks.append(TaskState(cells[0], int(cells[1]), cells[2], cells[3], cells[4]))
    return tasks


@dataclass(frozen=True)
class TunaArray:
    """An array go_fish submitted, as squeue shows it, with what its comment says."""

    array: str
    name: str
    owner: str
    run_dir: str
    session: str
    phase: str
    states: Counter[str]

    def describe(self) -> str:
        states = ", ".join(f"{n} {st.lower()}" for st, n in sorted(self.states.items()))
        return f"array {self.array} (session {self.session} {self.phase}: {states})"


def tuna_arrays() -> list[TunaArray]:
    """Every array of go_fish runs this user has in Slurm's queue."""
    out = run_slurm(["squeue", "-h", "-r", "--me", "-o", "%F|%j|%T|%k"], timeout=20).stdout
    found: dict[str, TunaArray] = {}
    for line in out.splitlines():
        array, name, state, comment = (line.split("|", 3) + ["", "", ""])[:4]
        if not name.startswith(JOB_PREFIX) or not comment.startswith(COMMENT_TAG):
            continue
        fields = dict(f.partition("=")[::2] for f in comment.split()[1:])
        if array not in found:
            found[array] = TunaArray(
                array,
                name,
                fields.get("owner", ""),
                fields.get("dir", ""),
                fields.get("session", ""),
                fields.get("phase", ""),
                Counter(),
            )
        found[array].states[state] += 1
    return list(found.values())


def left_over(arrays: Sequence[TunaArray]) -> list[TunaArray]:
    """Arrays whose go_fish is gone (killed outright); a go_fish on another head counts as
    alive (its owner cannot be checked from here)."""
    return [a for a in arrays if owner_alive(a.owner) is False]


def cancel(arrays: Sequence[str], *, env: Mapping[str, str] | None = None) -> None:
    if arrays:
        run_slurm(["scancel", *arrays], env=env)


def wait_ended(arrays: Sequence[str], timeout: float) -> list[TaskState]:
    """Wait for every task of ``arrays`` to end; those still alive after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            alive = [t for t in queue(arrays) if t.alive]
        except SlurmError as e:
            log.warning("go_fish: waiting for Slurm arrays %s: %s", ",".join(arrays), e)
            alive = []  # slurmctld is not answering: nothing more to wait for here
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.5)


def clean_slurm_leftovers(
    left: Sequence[TunaArray], *, stop_timeout: float = 90.0
) -> list[TunaArray]:
    """Cancel ``left`` (each worker finishes its current job and hands the rest back), wait
    for their tasks to end and remove their run folders. Returns them."""
    ids = [a.array for a in left]
    cancel(ids)
    wait_ended(ids, stop_timeout)
    for a in left:
        if a.run_dir:
            shutil.rmtree(a.run_dir, ignore_errors=True)
    return list(left)
