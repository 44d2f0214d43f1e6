# Over 600 lines: one launcher: batch script, array submission and watch share a run.
"""go_fish on Slurm: each phase one job array of ``tuna worker --burst`` tasks.

Where a site's scheduler owns the machines (nobody may SSH in or ``docker run``; jobs wait in
partitions), go_fish asks Slurm for its workers. :class:`SlurmArrays` is the dispatcher's
launcher (:mod:`tuna.fleet.dispatch`): for every stage it submits one array (``sbatch
--array=0-N``) to the phase's partition — compile tasks with ``--cpus-per-task``, evaluation
tasks with ``--gpus-per-task=1`` (the worker's GPU is the one Slurm gives it), or
``--exclusive`` where the backend says an evaluation owns the whole machine. With
``--compile --run_perf`` the evaluation array is submitted with the compile array, after it
(``--dependency=afterany``: workers exit 0 even when jobs fail, and a cancelled task must
not hold the evaluation back), so it waits in the queue instead of being submitted late.

The dispatcher watches the database as for any run; the launcher asks ``squeue`` about its
tasks every poll, says when their states change (array ids, how many pending, running, ended,
where), replaces a task that fails or is cancelled behind go_fish's back while work is left,
and reports a node that goes down or drains under its tasks. Ctrl-C or SIGTERM cancels the
arrays (``scancel``: each worker finishes its current job and hands the rest back).

Workers run from the head's install (``python -m tuna.cli``; it must be on a file system the
nodes share, as the run folder and the log folder must). The database URL is in a file only
its owner can read, in the run folder (``TUNA_DB_URL_FILE``): sbatch's environment is
go_fish's without any database URL, so ``scontrol show job``, the job's environment and argv
never hold it. Each task writes its log where every worker's goes
(:func:`~tuna.fleet.phase.worker_log`): ``<log dir>/<phase>/<arch>/<node>/session-<S>/<run>/
slurm-<array id>_<task>.log``. Every array carries a comment naming its run folder and the
go_fish that owns it (``host:pid:start``): a go_fish killed outright leaves its arrays queued
or running, and the next go_fish (or ``go_fish --slurm --clean``) cancels them and removes
their folders.
Slurm's commands are asked through :mod:`tuna.fleet.slurm_client`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import secrets
import shlex
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tuna.backends import get_backend
from tuna.backends.base import Owns
from tuna.db import Database
from tuna.db.retry import through_outages
from tuna.errors import ConfigurationError, TunaError
from tuna.fleet.commands import worker_argv
from tuna.fleet.leftovers import this_owner
from tuna.fleet.phase import FishReport, Task, task_remaining, worker_log
from tuna.fleet.slurm_client import (
    COMMENT_TAG,
    JOB_PREFIX,
    SlurmError,
    TaskState,
    cancel,
    clean_slurm_leftovers,
    find_partition,
    left_over,
    partitions,
    queue,
    run_slurm,
    slurm_command,
    tuna_arrays,
    wait_ended,
)
from tuna.sessions import get_session
from tuna.worker.settings import WorkerSettings

log = logging.getLogger(__name__)

MAX_REPLACEMENTS = 3  # per array: tasks resubmitted after one failed or was cancelled by others
HEAD_PROGRAM = (sys.executable, "-m", "tuna.cli")

# Pending reasons that never clear by themselves.
HOPELESS = ("DependencyNeverSatisfied", "PartitionNodeLimit", "BadConstraints", "InvalidQOS")
NODE_TROUBLE = ("DOWN", "DRAIN", "FAIL", "NOT_RESPONDING")

# A worker's last line (tuna/cli/worker.py): what it did.
WORKER_SAID = re.compile(
    r"stopped: \S+; \d+ claimed, (?P<done>\d+) done, \d+ retried, (?P<errored>\d+) errored, "
    r"(?P<na>\d+) not applicable"
)
SECRET_ENV = ("TUNA_DB_URL", "TUNA_WORKER_DB_URL", "TUNA_DB_URL_FILE")


# -- the pool: where and how a site's Slurm runs Tuna's workers ---------------------------------


@dataclass(frozen=True)
class SlurmPool:
    """The site's Slurm settings for Tuna, given once in the environment (``TUNA_SLURM_*``)
    or on go_fish's command line: the partition of each phase ("" is Slurm's default),
    account, QoS, time limit, CPUs per compile task and extra sbatch arguments."""

    partitions: Mapping[str, str] = field(default_factory=dict)  # phase ("compile"/"eval")
    account: str = ""
    qos: str = ""
    time_limit: str = ""
    cpus_per_task: int = 1
    sbatch_args: tuple[str, ...] = ()
    run_root: Path | None = None  # where run folders go (shared with the nodes)

    def partition(self, phase: str) -> str:
        return self.partitions.get(phase, "")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **given: object) -> SlurmPool:
        """The pool from ``TUNA_SLURM_PARTITION`` (``NAME`` or ``compile=A,eval=B``),
        ``TUNA_SLURM_ACCOUNT``, ``_QOS``, ``_TIME``, ``_CPUS_PER_TASK``, ``_SBATCH_ARGS`` (a
        shell-quoted list) and ``_DIR``; ``given`` values (the command line's) win where set."""
        env = os.environ if env is None else env
        partitions = parse_partitions(env.get("TUNA_SLURM_PARTITION", ""))
        partitions.update(given.pop("partitions", None) or {})  # type: ignore[call-overload]
        cpus_text = env.get("TUNA_SLURM_CPUS_PER_TASK", "").strip() or "1"
        if not cpus_text.isdigit() or int(cpus_text) < 1:
            raise ConfigurationError(
                f"TUNA_SLURM_CPUS_PER_TASK={cpus_text!r}: expected a whole number above 0, e.g. 4"
            )
        extra = tuple(shlex.split(env.get("TUNA_SLURM_SBATCH_ARGS", "")))
        root = env.get("TUNA_SLURM_DIR", "").strip()
        pool = cls(
            partitions=partitions,
            account=env.get("TUNA_SLURM_ACCOUNT", "").strip(),
            qos=env.get("TUNA_SLURM_QOS", "").strip(),
            time_limit=env.get("TUNA_SLURM_TIME", "").strip(),
            cpus_per_task=int(cpus_text),
            sbatch_args=extra + tuple(given.pop("sbatch_args", None) or ()),  # type: ignore[arg-type]
            run_root=Path(root) if root else None,
        )
        values = {k: v for k, v in given.items() if v not in (None, "")}
        return pool if not values else _replace(pool, values)

    def sbatch_options(self) -> list[str]:
        """The options every array of this pool gets (the partition is per phase)."""
        opts = []
        if self.account:
            opts.append(f"--account={self.account}")
        if self.qos:
            opts.append(f"--qos={self.qos}")
        if self.time_limit:
            opts.append(f"--time={self.time_limit}")
        return opts + list(self.sbatch_args)


def _replace(pool: SlurmPool, values: dict[str, object]) -> SlurmPool:
    from dataclasses import replace

    return replace(pool, **values)  # type: ignore[arg-type]


def parse_partitions(text: str) -> dict[str, str]:
    """``NAME`` (every phase) or ``compile=A,eval=B`` -> {phase: partition}."""
    found: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        phase, eq, name = part.partition("=")
        if not eq:
            found = {"compile": part, "eval": part}
            continue
        phase = {"run": "eval", "evaluate": "eval"}.get(phase.strip(), phase.strip())
        if phase not in ("compile", "eval"):
            raise ConfigurationError(
                f"partition {part!r}: name a phase (compile=NAME or eval=NAME) or give one NAME"
            )
        found[phase] = name.strip()
    return found


# -- the batch script -----------------------------------------------------------------------------


def batch_script(
    *,
    argv: Sequence[str],
    db_url_file: Path,
    log: str,
    env: Mapping[str, str],
    own_lock_dir: bool,
) -> str:
    """The script every task of one array runs (``sbatch`` reads it on stdin).

    It sends its output to ``log``, a path that names ``$node`` and ``$task`` (the node's
    short name, ``<array>_<index>``: :func:`task_log`), makes a scratch
    folder of its own on the node (removed at the end), names the worker after the node and
    task (``job.lease_owner`` says where a job ran), and runs the worker as a child: Slurm's
    SIGTERM (scancel, the time limit) reaches the worker once, which then finishes its
    current job and hands the rest back, while the script waits for it to end.
    ``env`` values may name ``$scratch``. ``own_lock_dir``: Slurm gave the task its own
    device, so its evaluations take no turn with other tasks on the node.
    """
    exports = "\n".join(f'export {k}="{_dq(v)}"' for k, v in sorted(env.items()))
    lock = 'export TUNA_LOCK_DIR="$scratch/locks"\n' if own_lock_dir else ""
    return f"""#!/bin/bash
# go_fish: one task of a Tuna worker array (tuna/fleet/slurm.py)
node=$(hostname -s)
task="${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}"
log="{_dq(log)}"
mkdir -p "$(dirname "$log")"
exec >>"$log" 2>&1
echo "=== Slurm task $task (job $SLURM_JOB_ID) on $node, $(date -u +%FT%TZ) ==="
scratch=$(mktemp -d "${{TMPDIR:-/tmp}}/tuna-slurm-$task.XXXXXX") || exit 1
export TUNA_DB_URL_FILE={shlex.quote(str(db_url_file))}
export TUNA_WORKER_NAME="$node/slurm-$task"
{lock}{exports}
trap : TERM INT
{shlex.join(argv)} &
worker=$!
wait "$worker"
rc=$?
while kill -0 "$worker" 2>/dev/null; do wait "$worker"; rc=$?; done
rm -rf "$scratch"
echo "=== worker exited $rc ==="
exit "$rc"
"""


def _dq(value: str) -> str:
    """``value`` inside double quotes, with ``$scratch``, ``$node`` and ``$task`` expanded."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
    escaped = escaped.replace("$", "\\$")
    for name in SCRIPT_VARIABLES:
        escaped = escaped.replace(f"\\${name}", f"${name}")
    return escaped


SCRIPT_VARIABLES = ("scratch", "node", "task")


def task_log(log_dir: Path, phase: str, arch: str, session: int, run: str) -> str:
    """Where a task's worker log goes (:func:`~tuna.fleet.phase.worker_log`, the node's name
    and the task's known only on the node: ``$node``, ``$task``)."""
    return str(worker_log(log_dir, phase, arch, "$node", session, run, "slurm-$task"))


def sbatch_environment(base: Mapping[str, str]) -> dict[str, str]:
    """sbatch's environment (which it hands to the tasks): go_fish's without any database
    URL, and without the SLURM_* of an allocation go_fish may itself run in (SLURM_CONF
    stays)."""
    return {
        k: v
        for k, v in base.items()
        if k not in SECRET_ENV
        and not (k.startswith("SLURM_") and k != "SLURM_CONF")
        and not k.startswith("SBATCH_")
    }


# -- the launcher ----------------------------------------------------------------------------------


StageTask = tuple[int, Task]


@dataclass
class Array:
    """One stage's array and its replacements, as go_fish submitted and sees them."""

    stage: StageTask
    tasks: int
    script: Path
    options: list[str]
    ids: list[str] = field(default_factory=list)  # the array, then its replacements
    seen: dict[tuple[str, int], TaskState] = field(default_factory=dict)
    ended: set[tuple[str, int]] = field(default_factory=set)
    replacements: int = 0
    said: str = ""  # the last state line reported

    @property
    def submitted(self) -> bool:
        return bool(self.ids)


class SlurmArrays:
    """Worker arrays on Slurm for one or more stages (``--compile --run_perf``); to the
    dispatcher, a :class:`~tuna.fleet.dispatch.Launcher` of the stage :meth:`watch` names."""

    description = "Slurm task(s)"

    def __init__(
        self,
        db: Database,
        stages: Sequence[StageTask],
        pool: SlurmPool,
        *,
        worker_db_url: str,
        log_dir: Path,
        workers: int | None = None,
        extra_env: Mapping[str, str] | None = None,
        settings: WorkerSettings | None = None,
        program: Sequence[str] = HEAD_PROGRAM,
        stop_timeout: float = 90.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if not stages:
            raise TunaError("no stage to run")
        slurm_command("sbatch")
        self.db, self.pool, self.log_dir = db, pool, log_dir
        self.settings, self.program, self.stop_timeout = settings, program, stop_timeout
        self.extra_env = dict(extra_env or {})
        self.sessions = {s: get_session(db, s) for s in dict.fromkeys(s for s, _ in stages)}
        known = partitions()
        self.arrays: list[Array] = []
        self.run_id = dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        root = pool.run_root or log_dir / "slurm-runs"
        self.run_dir = root / self.run_id
        self.owner = this_owner()
        self.sbatch_env = sbatch_environment(os.environ if env is None else env)
        self._worker_db_url = worker_db_url
        for stage in stages:
            session, task = stage
            backend = get_backend(self.sessions[session].backend)
            phase = task.phase.value
            part = find_partition(pool.partition(phase), known)
            options = [f"--partition={part.name}"] if part.name else []
            tasks = workers
            if phase == "compile":
                options.append(f"--cpus-per-task={pool.cpus_per_task}")
                tasks = tasks or len(part.nodes)
            elif backend.evaluation_owns is Owns.MACHINE:
                options.append("--exclusive")
                tasks = tasks or len(part.nodes)
            elif part.gpus:
                options += ["--ntasks=1", "--gpus-per-task=1"]
                tasks = tasks or part.gpus
            elif backend.evaluation_owns is Owns.DEVICE:
                raise SlurmError(
                    f"Slurm partition {part.name!r} offers no GPU (GRES gpu) and a "
                    f"{backend.name} evaluation needs one; name a GPU partition with "
                    "--partition eval=NAME"
                )
            else:
                tasks = tasks or len(part.nodes)
            self.arrays.append(
                Array(stage, max(1, tasks), self.run_dir / f"{phase}-{session}.sh", options)
            )
        self.watching = self.arrays[0]
        self._event: Callable[[str], None] = lambda text: None
        self.lost_nodes: dict[str, str] = {}
        self.nodes: set[str] = set()  # where the run's tasks ran
        self.slurm_silent_since: float | None = None

    # -- stages ----------------------------------------------------------------------------------

    def watch(self, stage: StageTask) -> SlurmArrays:
        self.watching = next(a for a in self.arrays if a.stage == stage)
        return self

    def _label(self, a: Array) -> str:
        session, task = a.stage
        return f"session {session} {task.phase.value}"

    def _name(self, a: Array) -> str:
        return f"{JOB_PREFIX}{a.stage[0]}-{a.stage[1].phase.value}"

    def _comment(self, a: Array) -> str:
        session, task = a.stage
        return (
            f"{COMMENT_TAG} owner={self.owner} dir={self.run_dir} session={session} "
            f"phase={task.phase.value}"
        )

    def _prepare(self) -> None:
        """The run folder: the database URL (0600) and each array's script."""
        if self.run_dir.exists():
            return
        self.run_dir.parent.mkdir(parents=True, exist_ok=True)
        self.run_dir.mkdir(mode=0o700)
        url_file = self.run_dir / "db_url"
        fd = os.open(url_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self._worker_db_url + "\n")
        (self.run_dir / "owner").write_text(self.owner + "\n")
        for a in self.arrays:
            session, task = a.stage
            info = self.sessions[session]
            backend = get_backend(info.backend)
            phase = task.phase.value
            env = {
                **self.extra_env,
                **backend.worker_environment(info, phase, None, "$scratch"),
            }
            script = batch_script(
                argv=worker_argv(
                    session, phase, program=self.program, settings=self.settings, step=task.step
                ),
                db_url_file=url_file,
                log=task_log(self.log_dir, phase, info.arch, session, self.run_id),
                env=env,
                own_lock_dir="--gpus-per-task=1" in a.options,
            )
            a.script.write_text(script)
            a.script.chmod(0o700)

    def _submit(self, a: Array, *, indexes: str, after: str | None = None) -> str:
        argv = [
            "sbatch",
            "--parsable",
            f"--array={indexes}",
            f"--job-name={self._name(a)}",
            f"--comment={self._comment(a)}",
            f"--output={self.run_dir}/slurm-%A_%a.out",
            "--ntasks=1" if "--ntasks=1" not in a.options else "",
            *a.options,
            *self.pool.sbatch_options(),
        ]
        if after:
            argv.append(f"--dependency=afterany:{after}")
        argv.append(str(a.script))
        try:
            out = run_slurm([x for x in argv if x], env=self.sbatch_env, timeout=60).stdout
        except SlurmError as e:
            raise SlurmError(
                f"Slurm refused the {self._label(a)} array of {a.tasks} task(s) "
                f"({' '.join(a.options + self.pool.sbatch_options())}): {e}; check the "
                "partition, account, QoS and time limit, or ask for fewer workers (-w)"
            ) from e
        job = out.strip().split(";")[0]
        a.ids.append(job)
        first, _, last = indexes.partition("-")
        for i in range(int(first), int(last or first) + 1):  # pending until squeue says more
            a.seen[(job, i)] = TaskState(job, i, "PENDING", "", "")
        return job

    # -- the Launcher interface ------------------------------------------------------------------

    def tidy(self, event: Callable[[str], None]) -> bool:
        """Cancel the arrays of go_fish runs killed outright (their workers hand their jobs
        back) and remove their run folders."""
        self._event = event
        try:
            left = left_over(tuna_arrays())
        except SlurmError as e:
            event(f"could not look for arrays a killed go_fish left: {e}")
            return False
        if not left:
            return False
        for a in left:
            event(f"cancelling Slurm {a.describe()} that a killed go_fish left")
        clean_slurm_leftovers(left, stop_timeout=self.stop_timeout)
        return True

    def start(self, event: Callable[[str], None]) -> int:
        """Submit the watched stage's array and every later stage's, each after the one before
        (a later stage finds its array submitted)."""
        self._event = event
        a = self.watching
        if not a.submitted:
            self._prepare()
            after = None
            for later in self.arrays[self.arrays.index(a) :]:
                if later.submitted:
                    continue
                job = self._submit(later, indexes=f"0-{later.tasks - 1}", after=after)
                event(
                    f"Slurm array {job}: {later.tasks} {later.stage[1].phase.value} task(s) "
                    f"({' '.join(later.options)})" + (f", after array {after}" if after else "")
                )
                after = job
        return a.tasks

    def _look(self, a: Array) -> list[TaskState]:
        tasks = queue(a.ids)
        known = {(t.array, t.index) for t in tasks}
        for key, last in list(a.seen.items()):
            if key not in known and last.alive:  # gone from squeue: it ended
                a.seen[key] = TaskState(key[0], key[1], "GONE", last.node, "")
        for t in tasks:
            a.seen[(t.array, t.index)] = t
        return tasks

    def poll(self, *, replace: bool) -> None:
        a = self.watching
        if not a.submitted:
            return
        try:
            self._look(a)
        except SlurmError as e:
            if self.slurm_silent_since is None:
                self.slurm_silent_since = time.monotonic()
                self._event(
                    f"Slurm does not answer ({e}); its tasks are counted as they were, and "
                    "their jobs come back to the queue if their leases expire"
                )
            return
        if self.slurm_silent_since is not None:
            gone = time.monotonic() - self.slurm_silent_since
            self.slurm_silent_since = None
            self._event(f"Slurm answers again after {gone:.0f} s")
        self._say(a)
        self._nodes(a)
        for key, t in a.seen.items():
            if t.alive or key in a.ended:
                continue
            a.ended.add(key)
            if t.state in ("COMPLETED", "GONE"):
                continue
            self._event(
                f"Slurm task {t.array}_{t.index} ended {t.state}"
                + (f" on {t.node}" if t.node else "")
                + (f" ({t.reason})" if t.reason not in ("", "None") else "")
            )
            if replace and a.replacements < MAX_REPLACEMENTS and self._work_left(a):
                a.replacements += 1
                try:
                    job = self._submit(a, indexes=str(t.index))
                except SlurmError as e:
                    self._event(f"could not replace Slurm task {t.array}_{t.index}: {e}")
                    continue
                self._event(f"submitted Slurm array {job} in its place")
        for t in a.seen.values():
            if t.state == "PENDING" and t.reason.startswith(HOPELESS):
                key = (t.array, t.index)
                if key not in a.ended:
                    a.ended.add(key)
                    self._event(f"Slurm task {t.array}_{t.index} can never start ({t.reason})")

    def _say(self, a: Array) -> None:
        """A line when the array's task states change: ids, counts, nodes."""
        counts = Counter(t.state for t in a.seen.values() if t.state != "GONE")
        nodes = sorted({t.node for t in a.seen.values() if t.state == "RUNNING" and t.node})
        text = ", ".join(f"{n} {st.lower()}" for st, n in sorted(counts.items()))
        if nodes:
            text += f" (on {','.join(nodes)})"
        if text and text != a.said:
            a.said = text
            self._event(f"Slurm array {'+'.join(a.ids)}: {text}")

    def _nodes(self, a: Array) -> None:
        """Report a node the run's tasks ran on that went down or drains (or came back)."""
        self.nodes.update(t.node for t in a.seen.values() if t.node)
        mine = sorted(self.nodes)
        if not mine:
            return
        try:
            out = run_slurm(["sinfo", "-h", "-N", "-n", ",".join(mine), "-o", "%N|%T|%E"]).stdout
        except SlurmError:
            return
        for line in out.splitlines():
            node, state, reason = (line.split("|", 2) + ["", ""])[:3]
            trouble = any(word in state.upper() for word in NODE_TROUBLE)
            if trouble and node not in self.lost_nodes:
                self.lost_nodes[node] = f"{state} ({reason})" if reason else state
                self._event(
                    f"Slurm node {node} is {state}"
                    + (f" ({reason})" if reason and reason != "none" else "")
                    + ": its tasks end or are requeued, their jobs come back to the queue when "
                    f"their leases expire; once it is fixed: scontrol update nodename={node} "
                    "state=resume"
                )
            elif not trouble and node in self.lost_nodes:
                del self.lost_nodes[node]
                self._event(f"Slurm node {node} is {state} again")

    def _work_left(self, a: Array) -> bool:
        session, task = a.stage
        left = through_outages(
            lambda: task_remaining(self.db, session, task), what="go_fish: count"
        )
        return left > 0

    def alive(self) -> int:
        a = self.watching
        return sum(t.alive for key, t in a.seen.items() if key not in a.ended) if a.ids else 0

    def stuck(self, now: float) -> str | None:
        a = self.watching
        if a.seen and all(key in a.ended or not t.alive for key, t in a.seen.items()):
            return None  # the dispatcher sees no worker alive
        if self.slurm_silent_since is not None and now - self.slurm_silent_since > 600:
            return "Slurm has not answered for 600 s; stopping with work left"
        return None

    def tick(self) -> None:
        pass

    def finish(self) -> None:
        """The watched stage drained with a later stage to come: cancel what is left of its
        array (tasks not started yet). Otherwise (the last stage, an interrupt, work left):
        :meth:`close`."""
        a = self.watching
        later = self.arrays.index(a) < len(self.arrays) - 1
        if later and not self._work_left(a):
            self._cancel([a])
        else:
            self.close()

    def _cancel(self, arrays: Sequence[Array]) -> None:
        ids = [i for a in arrays for i in a.ids]
        if not ids:
            return
        try:
            alive = [t for t in queue(ids) if t.alive]
        except SlurmError:
            alive = []
        if alive:
            try:
                cancel(sorted({t.array for t in alive}), env=self.sbatch_env)
            except SlurmError as e:
                self._event(f"could not cancel Slurm arrays {','.join(ids)}: {e}")
                return
            left = wait_ended(ids, self.stop_timeout)
            if left:
                self._event(
                    f"{len(left)} Slurm task(s) still running after {self.stop_timeout:g} s: "
                    f"scancel --signal=KILL {' '.join(sorted({t.array for t in left}))}"
                )
        for a in arrays:
            with contextlib.suppress(SlurmError):
                self._look(a)

    def close(self) -> None:
        """Cancel every array of the run (workers finish their current job and hand the rest
        back), then remove the run folder (the database URL)."""
        self._cancel([a for a in self.arrays if a.submitted])
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def fill(self, report: FishReport, since: dt.datetime) -> None:
        a = self.watching
        report.workers = len(a.seen) or (a.tasks if a.submitted else 0)
        report.exit_codes = [
            0 if t.state in ("COMPLETED", "GONE") else 1 for t in a.seen.values() if not t.alive
        ]
        report.logs = self._logs(a)
        report.per_host = self._per_node(a)
        report.hosts = list(report.per_host)
        report.lost_hosts = dict(self.lost_nodes)
        report.events.append(f"Slurm array(s) {', '.join(a.ids) or 'none'}")

    def _logs(self, a: Array) -> list[Path]:
        phase, arch = a.stage[1].phase.value, self.sessions[a.stage[0]].arch
        return sorted(
            p
            for i in a.ids
            for p in (self.log_dir / phase / arch).glob(
                f"*/session-{a.stage[0]}/{self.run_id}/slurm-{i}_*.log"
            )
        )

    def _per_node(self, a: Array) -> dict[str, tuple[int, int]]:
        """Per node: (tasks that ran there, jobs they finished), from the tasks' logs (each
        worker's last line says what it did)."""
        per: dict[str, list[int]] = {}
        for path in self._logs(a):
            found = per.setdefault(path.parents[2].name, [0, 0])
            for m in WORKER_SAID.finditer(path.read_text(errors="replace")):
                found[0] += 1
                found[1] += sum(int(m.group(g)) for g in ("done", "errored", "na"))
        return {node: (n[0], n[1]) for node, n in sorted(per.items())}
