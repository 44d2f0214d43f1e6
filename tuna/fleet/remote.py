# Over 600 lines: one launcher: SSH, docker and the containers' watch share a connection.
"""go_fish on a fleet: worker containers on remote machines over SSH, watched until done.

For one phase of a session, go_fish:

1. on every selected machine (in parallel), writes the workers' database URL to a file
   only root can read, under the machine's scratch directory, and starts worker
   containers from the session's image with the docker CLI over the SSH connection: N
   for compilation, one per GPU for evaluation, with the device flags and environment
   the backend asks for (never ``--privileged``). The URL reaches each container as a
   read-only mounted file (``TUNA_DB_URL_FILE``), never in argv, environment or logs.
2. watches the phase's jobs in the database (progress, rate, ETA), reaps expired leases,
   and polls each machine's containers from a background thread. A machine that stops
   answering is reported lost and the run carries on: its jobs come back when their
   leases expire and other machines take them; anything it writes later is fenced out.
   A worker container that dies while work is left is replaced (a few times per slot).
3. ends when the phase's queue is drained (or nothing can work on what is left), stops
   what still runs, gathers every container's log under
   ``<log dir>/<phase>/<arch>/<host>/session-<S>/<run>/<worker>.log`` and removes the
   containers and files.

Ctrl-C stops the containers with SIGTERM: each worker finishes its current job and hands
the rest back.

Its pace comes from the environment (:func:`pace_settings`), seconds above 0:
``TUNA_FLEET_POLL_EVERY`` (3: how often machines are asked about their containers),
``TUNA_FLEET_POLL_TIMEOUT`` (10: how long such a question may take before the machine
counts as lost), ``TUNA_FLEET_REAP_EVERY`` (5: how often expired leases are returned) and
``TUNA_FLEET_DRAIN_GRACE`` (30: after the queue is drained, how long workers get to exit
by themselves before they are stopped).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import re
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from sqlalchemy import func, select

from tuna.backends import get_backend
from tuna.config import seconds_setting
from tuna.db import Database
from tuna.db.models import Job
from tuna.errors import TunaError
from tuna.fleet.commands import (
    CONTAINER_SCRATCH,
    docker_run_argv,
    worker_argv,
)
from tuna.fleet.dispatch import Pace, dispatch
from tuna.fleet.fanout import HostOutcome, fan_out
from tuna.fleet.leftovers import OWNER_FILE, clean_leftovers, find_leftovers, this_owner
from tuna.fleet.machines import MachineRow, mark_seen
from tuna.fleet.phase import (
    FishReport,
    Progress,
    Task,
    new_run_id,
    remaining_jobs,
    reported_done,
    worker_log,
)
from tuna.fleet.ssh import Connections, Host, SshError
from tuna.jobs import Phase, job_counts
from tuna.jobs.status import search_work_waiting
from tuna.sessions import get_session
from tuna.worker.settings import WorkerSettings

log = logging.getLogger(__name__)

MAX_REPLACEMENTS = 3


@dataclass
class Slot:
    """One worker container on one machine (and its replacements, one at a time)."""

    machine: MachineRow
    worker: str  # e.g. "compile-0", "eval-gpu1"
    gpu: int | None
    log: Path
    container: str = ""
    status: str = "starting"  # running, exited, gone (its host never answered again)
    exit_code: int | None = None
    replacements: int = 0
    collected: set[str] = field(default_factory=set)

    @property
    def running(self) -> bool:
        return self.status in ("starting", "running")


@dataclass
class HostState:
    machine: MachineRow
    slots: list[Slot] = field(default_factory=list)
    lost: str | None = None  # why it is not answering now
    lost_since: float = 0.0  # time.monotonic() when it stopped answering
    ever_lost: bool = False
    last_loss: str = ""  # why it stopped answering the last time
    prepared: bool = False  # go_fish made its run directory (and db_url file) there
    start_error: str | None = None  # why (some of) its workers could not be started
    image_id: str = ""  # the worker image's id there (``docker image inspect``)


@dataclass(frozen=True)
class FleetOptions:
    image: str
    worker_db_url: str
    log_dir: Path
    compile_workers: int | None = None  # per machine (-w); default: its setting, else nproc
    extra_env: dict[str, str] = field(default_factory=dict)
    settings: WorkerSettings = WorkerSettings()
    interval: float = 1.0  # how often progress is counted
    poll_every: float = 3.0  # how often machines are asked about their containers
    poll_timeout: float = 10.0
    reap_every: float = 5.0
    drain_grace: float = 30.0  # after draining, how long workers get to exit by themselves
    stop_timeout: int = 60  # docker stop -t: time for a worker to finish its current job
    lost_patience: float = 600.0  # how long to wait for machines while only lost ones are left

    @property
    def pace(self) -> Pace:
        return Pace(self.interval, self.poll_every, self.reap_every, self.drain_grace)


class PaceSettings(TypedDict):
    """The :class:`FleetOptions` fields that set go_fish's pace over SSH."""

    poll_every: float
    poll_timeout: float
    reap_every: float
    drain_grace: float


def pace_settings(env: dict[str, str] | None = None) -> PaceSettings:
    """go_fish's pace over SSH from the environment (``TUNA_FLEET_*``, see the module's
    doc), as :class:`FleetOptions` keyword arguments: the defaults where unset; a value that
    is not a number of seconds above 0 raises :class:`~tuna.errors.ConfigurationError`."""
    d = FleetOptions
    return PaceSettings(
        poll_every=seconds_setting("TUNA_FLEET_POLL_EVERY", d.poll_every, env),
        poll_timeout=seconds_setting("TUNA_FLEET_POLL_TIMEOUT", d.poll_timeout, env),
        reap_every=seconds_setting("TUNA_FLEET_REAP_EVERY", d.reap_every, env),
        drain_grace=seconds_setting("TUNA_FLEET_DRAIN_GRACE", d.drain_grace, env),
    )


def _report_name(container: str) -> str:
    """A container's report file (``tuna worker --report-file``) in its worker's folder."""
    return f"report-{container}.json"


class _Uncounted:
    """Not counted yet (a sentinel)."""


_UNCOUNTED = _Uncounted()

_STATUS_EXIT = re.compile(r"Exited \((-?\d+)\)")


class RemoteWorkers:
    """Worker containers on machines over SSH (a :class:`~tuna.fleet.dispatch.Launcher`)."""

    description = "worker(s)"

    def __init__(
        self,
        db: Database,
        conns: Connections,
        session_id: int,
        task: Task,
        machines: Sequence[MachineRow],
        options: FleetOptions,
    ) -> None:
        if not machines:
            raise TunaError("no machine selected; `tuna machine list` shows the registered ones")
        self.db, self.conns, self.task, self.opt = db, conns, task, options
        self.session = get_session(db, session_id)
        self.backend = get_backend(self.session.backend)
        self.run_id = new_run_id()
        self.owner = this_owner()  # on containers and run folders: see tuna.fleet.leftovers
        self.hosts = [HostState(m) for m in machines]
        # By (address, port, user, key): two machines may share an address on other ports.
        self._by_host = {h.machine.host: h for h in self.hosts}
        self._event: Callable[[str], None] = lambda text: log.info("go_fish: %s", text)
        self._lock = threading.Lock()
        self._seen: set[int] = set()  # machines that answered since machine.last_seen was set
        self.reports: dict[str, list[dict[str, object]] | None] = {}  # by container
        # Compile jobs not yet given a worker (see _compile_share); None: no limit.
        self._compile_left: int | None | _Uncounted = _UNCOUNTED
        if self.task.phase.value == "eval":
            wrong = [
                m.label
                for m in (h.machine for h in self.hosts)
                if m.arch and m.arch != self.session.arch
            ]
            if wrong:
                raise TunaError(
                    f"session {self.session.id} targets {self.session.arch}, but "
                    f"{', '.join(wrong)} is another arch; evaluate on matching machines "
                    "(-a picks them)"
                )

    def event(self, text: str) -> None:
        self._event(text)

    def _state(self, host: Host) -> HostState:
        return self._by_host[host]

    # -- remote commands ----------------------------------------------------------------------

    def _run_dir(self, m: MachineRow) -> str:
        return f"{m.scratch}/{self.run_id}"

    def _docker_run(self, slot: Slot) -> str:
        m, phase = slot.machine, self.task.phase.value
        env = dict(self.opt.extra_env)
        env.update(
            self.backend.worker_environment(self.session, phase, slot.gpu, CONTAINER_SCRATCH)
        )
        env["TUNA_WORKER_NAME"] = f"{m.hostname}/{slot.worker}"
        # what the worker did, for go_fish's count of this run (an older image ignores it)
        env["TUNA_WORKER_REPORT"] = f"{CONTAINER_SCRATCH}/{_report_name(slot.container)}"
        # what the workers record as their platform's container (tuna.platforms.collect)
        env["TUNA_IMAGE"] = self.opt.image
        image_id = self._by_host[m.host].image_id
        if image_id:
            env["TUNA_IMAGE_ID"] = image_id
        return shlex.join(
            docker_run_argv(
                docker=shlex.split(m.docker),
                name=slot.container,
                labels={
                    "run": self.run_id,
                    "session": str(self.session.id),
                    "owner": self.owner,
                    "phase": phase,
                    "arch": self.session.arch,
                    "worker": slot.worker,
                },
                run_dir=self._run_dir(m),
                worker=slot.worker,
                lock_dir=m.lock_dir,
                env=env,
                device_args=self.backend.container_args(phase, slot.gpu),
                run_args=m.run_args,
                image=self.opt.image,
                command=worker_argv(
                    self.session.id,
                    phase,
                    machine=m.id,
                    gpu=slot.gpu,
                    settings=self.opt.settings,
                    step=self.task.step,
                ),
            )
        )

    def _plan(self, host: HostState) -> list[Slot]:
        m = host.machine
        phase, arch = self.task.phase.value, self.session.arch

        def slot(worker: str, gpu: int | None) -> Slot:
            path = worker_log(
                self.opt.log_dir, phase, arch, m.label, self.session.id, self.run_id, worker
            )
            return Slot(m, worker, gpu, path)

        if self.task.phase.value == "eval":
            return [slot(f"eval-gpu{g}", g) for g in m.gpus] or [slot("eval-0", None)]
        n = self.opt.compile_workers or m.compile_workers
        if n is None:
            n = int(self.conns.check(m.host, "nproc", timeout=self.opt.poll_timeout).strip() or 1)
        return [slot(f"compile-{i}", None) for i in range(self._compile_share(max(1, n)))]

    def _compile_share(self, n: int) -> int:
        """Of ``n`` compile workers asked for on one machine, how many to start: no more in
        all than the session has compile jobs to work (-w 8 with 3 jobs started 8), and at
        least one per machine; all ``n`` while a search is active (it proposes more)."""
        with self._lock:
            if self._compile_left is _UNCOUNTED:
                waiting = search_work_waiting(self.db, self.session.id)
                self._compile_left = (
                    None
                    if waiting.active_searches
                    else remaining_jobs(job_counts(self.db, self.session.id), Phase.COMPILE)
                )
            left = self._compile_left
            if left is None or isinstance(left, _Uncounted):
                return n
            take = max(1, min(n, left))
            self._compile_left = max(0, left - take)
            return take

    def _start_host(self, host: HostState) -> int:
        m = host.machine
        docker = shlex.split(m.docker)
        inspect = self.conns.run(
            m.host, shlex.join([*docker, "image", "inspect", "--format", "{{.Id}}", self.opt.image])
        )
        if not inspect.ok:  # go_fish never pulls: fleets here reach no registry
            raise SshError(
                m.host,
                f"image {self.opt.image} is not there; load it with `docker save "
                f"{self.opt.image} | ssh {m.hostname} docker load` (go_fish --status checks)",
            )
        host.image_id = inspect.stdout.strip()
        slots = self._plan(host)
        run_dir = shlex.quote(self._run_dir(m))
        dirs = " ".join(shlex.quote(f"{self._run_dir(m)}/{s.worker}") for s in slots)
        owner_file = shlex.quote(f"{self._run_dir(m)}/{OWNER_FILE}")
        write_owner = f"printf %s {shlex.quote(self.owner)} > {owner_file}"
        # The lock directory is the machine's, shared by every worker there (1777, as /tmp).
        locks = shlex.quote(m.lock_dir)
        self.conns.check(
            m.host,
            f"mkdir -p -m 1777 {locks} && umask 077 && mkdir -p {run_dir} {dirs} && {write_owner}",
        )
        host.prepared = True
        self.conns.put(m.host, f"{self._run_dir(m)}/db_url", self.opt.worker_db_url.encode())
        host.slots = slots
        for s in slots:
            self._start_slot(s)
        return len(slots)

    def _tidy(self, m: MachineRow) -> bool:
        """Stop, collect and remove what go_fish runs killed outright left on ``m``."""
        found = find_leftovers(self.conns, m, current_run=self.run_id)
        if found.empty:
            return False
        left = clean_leftovers(
            self.conns, found, self.opt.log_dir, stop_timeout=self.opt.stop_timeout
        )
        if left.empty:  # another go_fish on this head is tidying it
            return False
        self.event(
            f"{m.label}: removed what an earlier go_fish left ({left.describe()}); "
            f"its workers' logs are under {self.opt.log_dir}"
        )
        return True

    def tidy(self, event: Callable[[str], None]) -> bool:
        """On every machine at once: what killed go_fish runs left (a machine that cannot
        be reached now says so when its workers are started)."""
        self._event = event
        outcomes = fan_out(
            [h.machine.host for h in self.hosts], lambda h: self._tidy(self._state(h).machine)
        )
        return any(o.value for o in outcomes)

    def _start_slot(self, slot: Slot) -> None:
        suffix = f"-r{slot.replacements}" if slot.replacements else ""
        slot.container = f"tuna-{self.run_id}-{slot.worker}{suffix}"
        self.conns.check(
            slot.machine.host, self._docker_run(slot), timeout=self.opt.poll_timeout * 3
        )
        slot.status, slot.exit_code = "running", None

    def start(self, event: Callable[[str], None]) -> int:
        self._event = event
        outcomes = fan_out(
            [h.machine.host for h in self.hosts],
            lambda host: self._start_host(self._state(host)),
        )
        started = 0
        for h, o in zip(self.hosts, outcomes, strict=True):
            if o.ok:
                started += o.value or 0
                self.event(
                    f"{h.machine.label}: started {o.value} {self.task.phase.value} worker(s)"
                )
            else:
                # Keep the workers that did start (they are watched and cleaned up as usual).
                h.slots = [s for s in h.slots if s.status == "running"]
                started += len(h.slots)
                h.start_error = f"could not start workers: {_why(o)}"
                self.event(
                    f"{h.machine.label}: could not start workers"
                    + (f" (started {len(h.slots)})" if h.slots else "")
                    + f": {_why(o)}"
                )
        if not started:  # finish() removes the run directories (and db_url files) it made
            raise TunaError(
                f"go_fish {self.task.value}: no machine could start a worker (see above)"
            )
        return started

    # -- polling ------------------------------------------------------------------------------

    def _ps(self, host: HostState) -> dict[str, tuple[str, int | None]]:
        m = host.machine
        out = self.conns.check(
            m.host,
            shlex.join(
                [
                    *shlex.split(m.docker),
                    "ps",
                    "-a",
                    "--filter",
                    f"label=tuna.run={self.run_id}",
                    "--format",
                    "{{.Names}}|{{.State}}|{{.Status}}",
                ]
            ),
            timeout=self.opt.poll_timeout,
        )
        found: dict[str, tuple[str, int | None]] = {}
        for line in out.splitlines():
            name, _, rest = line.partition("|")
            state, _, status = rest.partition("|")
            code = _STATUS_EXIT.search(status)
            found[name] = (state, int(code.group(1)) if code else None)
        return found

    def poll(self, *, replace: bool) -> None:
        """Ask every machine about its containers; note lost and returning machines."""
        live = [h for h in self.hosts if h.slots]
        outcomes = fan_out([h.machine.host for h in live], lambda host: self._ps(self._state(host)))
        ended: dict[Host, list[Slot]] = {}
        with self._lock:
            self._seen.update(h.machine.id for h, o in zip(live, outcomes, strict=True) if o.ok)
        for h, o in zip(live, outcomes, strict=True):
            if not o.ok:
                if h.lost is None:
                    h.lost, h.ever_lost, h.lost_since = _why(o), True, time.monotonic()
                    h.last_loss = h.lost
                    self.event(
                        f"lost {h.machine.label}: {h.lost}; its jobs return to the queue "
                        "when their leases expire, and its late results will be refused"
                    )
                continue
            if h.lost is not None:
                h.lost = None
                gone = time.monotonic() - h.lost_since
                self.event(f"{h.machine.label} answers again after {gone:.0f} s")
            assert o.value is not None
            for s in h.slots:
                state, code = o.value.get(s.container, ("gone", None))
                if state not in ("exited", "dead", "gone"):
                    s.status = "running"
                elif s.running:
                    s.status, s.exit_code = "exited", code
                    ended.setdefault(h.machine.host, []).append(s)
        # Logs and clean-up of the workers that ended, all machines at once.
        fan_out(list(ended), lambda host: self._collect_host(ended[host], replace=replace))

    def _collect_host(self, slots: list[Slot], *, replace: bool) -> None:
        for s in slots:
            self._collect(s)
            if replace and s.exit_code not in (0, None) and s.replacements < MAX_REPLACEMENTS:
                self._replace(s)

    def _replace(self, slot: Slot) -> None:
        old, code = slot.container, slot.exit_code
        slot.replacements += 1
        try:
            self._start_slot(slot)
        except SshError as e:
            slot.status = "exited"
            self.event(f"{slot.machine.label}: could not replace {old}: {e}")
            return
        self.event(
            f"{slot.machine.label}: worker {slot.worker} exited {code}; "
            f"started {slot.container} in its place"
        )

    def _collect(self, slot: Slot) -> None:
        """Append the container's log to the slot's log file, then remove the container."""
        if slot.container in slot.collected:
            return
        m = slot.machine
        docker = shlex.split(m.docker)
        logs = shlex.join([*docker, "logs", slot.container])
        rm = shlex.join([*docker, "rm", "-f", slot.container])
        told = shlex.quote(f"{self._run_dir(m)}/{slot.worker}/{_report_name(slot.container)}")
        try:  # one round trip: the log, then the container is removed
            r = self.conns.run(m.host, f"{logs} 2>&1 && {rm} >/dev/null", timeout=60)
            slot.log.parent.mkdir(parents=True, exist_ok=True)
            with slot.log.open("a") as f:
                f.write(f"=== {slot.container} on {m.label} (exit {slot.exit_code}) ===\n")
                f.write(r.stdout)
            slot.collected.add(slot.container)
            # What the worker reported doing (written as it exited; none if it was killed).
            report = self.conns.run(m.host, f"cat {told} 2>/dev/null", timeout=30)
            with contextlib.suppress(ValueError):
                self.reports[slot.container] = json.loads(report.stdout) if report.ok else None
        except SshError as e:
            log.warning("could not collect %s: %s", slot.container, e)

    # -- the run ------------------------------------------------------------------------------

    def alive(self) -> int:
        return sum(s.running for h in self.hosts for s in h.slots)

    def stuck(self, now: float) -> str | None:
        """Why to stop with work left: every machine with running workers has been lost for
        longer than we wait."""
        busy = [h for h in self.hosts if any(s.running for s in h.slots)]
        if busy and all(
            h.lost is not None and now - h.lost_since > self.opt.lost_patience for h in busy
        ):
            return (
                f"only unreachable machines are left after {self.opt.lost_patience:g} s; "
                "stopping with work left"
            )
        return None

    def tick(self) -> None:
        """Set ``machine.last_seen`` of the machines that answered since the last tick."""
        with self._lock:
            seen, self._seen = sorted(self._seen), set()
        try:
            mark_seen(self.db, seen)
        except TunaError as e:  # bookkeeping only: never worth stopping the run for
            log.warning("go_fish: could not set machine.last_seen: %s", e)

    def fill(self, report: FishReport, since: dt.datetime) -> None:
        slots = [s for h in self.hosts for s in h.slots]
        # Counted from this run's own containers when every one of them reported: another
        # go_fish on the session moves the session's counts too.
        told = [self.reports.get(c) for s in slots for c in sorted(s.collected)]
        whole = all(s.container in s.collected for s in slots)
        if slots and whole and all(t is not None for t in told):
            reports = [r for t in told for r in t or []]
            report.did = reported_done(reports, self.session.id, self.task.phase)
        report.workers = len(slots)
        report.exit_codes = [s.exit_code if s.exit_code is not None else -1 for s in slots]
        report.logs = sorted({s.log for s in slots})
        report.hosts = [h.machine.label for h in self.hosts]
        report.per_host = self._per_host(since)
        report.lost_hosts = {
            h.machine.label: h.lost
            or (f"{h.last_loss} (answered again later)" if h.ever_lost else "")
            or str(h.start_error)
            for h in self.hosts
            if h.ever_lost or h.start_error
        }

    def _per_host(self, since: dt.datetime) -> dict[str, tuple[int, int]]:
        """Per machine: (workers started, jobs whose phase ended there during this run)."""
        ended = getattr(Job, self.task.phase.ended_column)
        with self.db.session() as s:
            done = dict(
                s.execute(
                    select(Job.machine, func.count())
                    .where(Job.session == self.session.id, ended >= since)
                    .group_by(Job.machine)
                ).all()
            )
        return {
            h.machine.label: (
                len(h.slots) + sum(s.replacements for s in h.slots),
                done.get(h.machine.id, 0),
            )
            for h in self.hosts
        }

    def finish(self) -> None:
        """Stop what still runs, gather logs, remove containers and the run's files."""

        def stop_host(host: Host) -> None:
            h = self._state(host)
            m = h.machine
            running = [s.container for s in h.slots if s.running]
            if running:
                self.conns.run(
                    m.host,
                    shlex.join(
                        [*shlex.split(m.docker), "stop", "-t", str(self.opt.stop_timeout), *running]
                    ),
                    timeout=self.opt.stop_timeout + 30,
                )

        live = [h for h in self.hosts if h.slots]
        fan_out([h.machine.host for h in live], stop_host)
        self.poll(replace=False)
        for h in live:
            if h.lost:
                left = [s.container for s in h.slots if s.running]
                for s in h.slots:
                    if s.running:
                        s.status = "gone"
                self.event(
                    f"{h.machine.label} is still unreachable ({h.lost}); containers "
                    f"{', '.join(left) or 'none'} were not stopped there. Remove them with "
                    f"`docker rm -f` when it is back; their late results are refused"
                )
        reachable = [h.machine for h in self.hosts if h.prepared and not h.lost]
        removed = fan_out(
            [m.host for m in reachable],
            lambda host: self.conns.check(
                host, f"rm -rf {shlex.quote(self._run_dir(self._state(host).machine))}"
            ),
        )
        for m, o in zip(reachable, removed, strict=True):
            if not o.ok:
                self.event(f"{m.label}: could not remove the run's files: {_why(o)}")


def _why(o: HostOutcome[Any]) -> str:
    err = o.error
    text = str(err) if err else "unknown error"
    prefix = f"{o.host}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


def run_fleet(
    db: Database,
    conns: Connections,
    session_id: int,
    task: Task,
    machines: Sequence[MachineRow],
    options: FleetOptions,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    on_event: Callable[[str], None] | None = None,
) -> FishReport:
    """Run ``task`` of session ``session_id`` on ``machines`` until its queue is drained."""
    launcher = RemoteWorkers(db, conns, session_id, task, machines, options)
    return dispatch(
        db,
        session_id,
        task,
        launcher,
        pace=options.pace,
        on_progress=on_progress,
        on_event=on_event,
    )
