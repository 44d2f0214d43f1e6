"""``go_fish``: run one phase of a session on workers until its queue is drained."""

from __future__ import annotations

import os
from pathlib import Path

import click

from tuna.cli.base import (
    COUNT_RANGE,
    TunaCommand,
    database,
    err_console,
    session_option,
    verbose_option,
    worker_settings_options,
    workers_option,
)
from tuna.cli.fish_fleet import clean_on, exec_on, fleet_machines, status_of
from tuna.cli.fish_progress import event_printer, print_summary, progress_display
from tuna.cli.slurm import slurm_clean, slurm_options, slurm_status
from tuna.config import load_settings
from tuna.config import log_dir as default_log_dir
from tuna.fleet.dispatch import Pace, dispatch
from tuna.fleet.inspect import (
    worker_db_url,
)
from tuna.fleet.local import run_local
from tuna.fleet.phase import (
    Task,
    plan_tasks,
    tasks_from_fin_steps,
    worker_environment,
)
from tuna.fleet.remote import FleetOptions, pace_settings, run_fleet
from tuna.fleet.slurm import SlurmArrays, SlurmPool
from tuna.fleet.ssh import Connections
from tuna.sessions import get_session
from tuna.worker.settings import WorkerSettings


class IdList(click.ParamType):
    """Machine ids as MITuna writes them (``1,2``) or one per option."""

    name = "ids"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> list[int]:
        if isinstance(value, list):
            return value
        try:
            return [int(v) for v in str(value).split(",") if v.strip()]
        except ValueError:
            self.fail(f"{value!r}: machine ids are numbers, e.g. -m 1,2", param, ctx)


@click.command("go_fish", cls=TunaCommand)
@click.argument("library", required=False, metavar="[LIBRARY]")
@session_option("Session whose jobs to work.", required=False)
@click.option(
    "--compile", "compile_", is_flag=True, help="Compile phase: build every candidate (no device)."
)
@click.option(
    "--run_perf",
    is_flag=True,
    help="Evaluate compiled perf jobs: tune, best parameters to the perf db.",
)
@click.option(
    "--run_find",
    is_flag=True,
    help="Evaluate compiled find jobs: times and workspaces to the find db.",
)
@click.option(
    "--bin_cache",
    is_flag=True,
    help="Evaluate compiled kernel jobs: winners' binaries for the kernel db.",
)
@click.option(
    "--search",
    "search",
    is_flag=True,
    help="Drive the session's active searches (tuna search create): run their builds and "
    "runs until every search is over.",
)
@click.option(
    "--fin_steps",
    metavar="STEPS",
    help="MITuna's steps, e.g. miopen_perf_compile,miopen_perf_eval (= --compile --run_perf).",
)
@click.option(
    "-e", "--exec", "command", metavar="COMMAND", help="Run COMMAND on every selected machine."
)
@click.option(
    "--status",
    is_flag=True,
    help="Check every selected machine: SSH, Docker, image, GPUs, leftovers of killed runs.",
)
@click.option(
    "--clean",
    is_flag=True,
    help="Stop and remove what go_fish runs killed outright left on the machines.",
)
@click.option(
    "--local",
    is_flag=True,
    help="Run workers on this machine (the default while no machine is registered).",
)
@click.option("-a", "--arch", help="Only machines of this arch.")
@click.option("-n", "--num_cu", "--num-cu", "num_cu", type=COUNT_RANGE, help="Only this CU count.")
@click.option(
    "-m",
    "--machine",
    "--machines",
    "machine_ids",
    type=IdList(),
    multiple=True,
    help="Only these machine ids (-m 1,2 or -m 1 -m 2).",
)
@workers_option
@click.option("--image", help="Worker image (default: the session's docker image).")
@click.option(
    "-f",
    "--find_enforce",
    type=click.Choice(["1", "3", "4"]),
    help="MIOPEN_FIND_ENFORCE for the workers (4 also sets MIOPEN_DISABLE_CACHE=1).",
)
@worker_settings_options
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where worker logs go (default: $TUNA_LOG_DIR or <data dir>/logs).",
)
@click.option(
    "--known-hosts",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Known-hosts file (default: $TUNA_KNOWN_HOSTS or ~/.ssh/known_hosts).",
)
@click.option(
    "--progress-every",
    type=click.FloatRange(min=0.1),
    default=10.0,
    show_default=True,
    help="When the output is not a terminal: seconds between progress lines.",
)
@slurm_options
@verbose_option
def go_fish_cmd(
    library: str | None,
    session_id: int | None,
    compile_: bool,
    run_perf: bool,
    run_find: bool,
    bin_cache: bool,
    search: bool,
    fin_steps: str | None,
    command: str | None,
    status: bool,
    clean: bool,
    local: bool,
    arch: str | None,
    num_cu: int | None,
    machine_ids: tuple[list[int], ...],
    workers: int | None,
    image: str | None,
    find_enforce: str | None,
    settings: WorkerSettings,
    log_dir: Path | None,
    known_hosts: Path | None,
    progress_every: float,
    slurm: SlurmPool | None,
) -> None:
    """Run one phase of a session (or compile, then evaluate) until its queue is drained.

    With machines registered (`tuna machine add`), go_fish starts worker containers on
    them over SSH from the session's image: -w per machine for --compile (default: the
    machine's setting, else its CPU count), one per GPU for evaluation. Without any, or
    with --local, it starts worker processes on this machine. It shows progress (jobs by
    state, rate, ETA: a live table on a terminal, else a line on stdout every
    --progress-every seconds), reports machines it loses and carries on, ends when the
    phase's queue is drained and prints what this run did, with the top failure reasons.
    --compile with an evaluation flag runs both, in that order. Ctrl-C or SIGTERM stops the workers:
    each finishes its current job and hands the rest back. Every evaluation also drives the
    session's active searches (--search does only that): their builds and runs are jobs, and
    the run lasts until every search is over.

    Remote workers get the database from TUNA_WORKER_DB_URL (default TUNA_DB_URL) through
    a file only root can read, local ones through a file only you can read, never on a
    command line or in their environment. Logs go to <log dir>/<phase>/<arch>/<host>/
    session-<S>/<run>/. Its pace over SSH, in seconds:
    TUNA_FLEET_POLL_EVERY (3), TUNA_FLEET_POLL_TIMEOUT (10), TUNA_FLEET_REAP_EVERY (5),
    TUNA_FLEET_DRAIN_GRACE (30; docs/reference/configuration.md). MITuna's spelling works too: an
    optional library name first (the session's backend), --session_id, --fin_steps,
    -m 1,2.

    \b
    Examples:
      go_fish --session 3 --compile --run_perf
      go_fish --session 3 --run_perf -a gfx90a -n 104
      go_fish --session 3 --run_find -f 3 -m 1,2
      go_fish --session 3 --compile --local -w 2
      go_fish --session 5 --search --local -w 4
      go_fish miopen --fin_steps miopen_perf_compile,miopen_perf_eval --session_id 3
      go_fish -e "docker images" -a gfx90a
      go_fish --status --image tuna-worker:latest
      go_fish --session 3 --compile --run_perf --slurm --partition compile=cpu --partition eval=gpu
      go_fish --status --slurm
      go_fish --clean
    """
    ids = tuple(i for group in machine_ids for i in group)
    asked = [
        t
        for t, on in (
            (Task.COMPILE, compile_),
            (Task.RUN_PERF, run_perf),
            (Task.RUN_FIND, run_find),
            (Task.BIN_CACHE, bin_cache),
            (Task.SEARCH, search),
        )
        if on
    ]
    if fin_steps is not None:
        asked += tasks_from_fin_steps(fin_steps)
    if command is not None or status or clean:
        if asked or (command is not None) + status + clean > 1:
            raise click.UsageError(
                "-e, --status and --clean run alone, without a phase or each other"
            )
        if slurm is not None and command is None:
            if status:
                slurm_status()
            else:
                slurm_clean(log_dir or default_log_dir())
            return
        machines = fleet_machines(arch, num_cu, ids)
        if not machines:
            raise click.UsageError("no machine selected; register one with `tuna machine add`")
        if command is not None:
            exec_on(machines, command, known_hosts)
        elif clean:
            clean_on(machines, known_hosts, log_dir or default_log_dir())
        else:
            if image is None and session_id is not None:
                db = database()
                try:
                    image = get_session(db, session_id).docker_image
                finally:
                    db.dispose()
            status_of(machines, image, known_hosts)
        return
    if not asked:
        raise click.UsageError(
            "say what to run: --compile, --run_perf, --run_find, --bin_cache, --search (or "
            "--fin_steps), -e CMD or --status"
        )
    tasks = plan_tasks(asked)
    if session_id is None:
        raise click.UsageError("--session is needed to run a phase")
    config = load_settings()
    logs = log_dir or default_log_dir()
    env = worker_environment(int(find_enforce) if find_enforce else None)
    machines = [] if local or slurm else fleet_machines(arch, num_cu, ids)
    if not local and not machines and (arch or num_cu or ids):
        raise click.UsageError("no available machine matches -a/-n/-m; see `tuna machine list`")
    worker_url = worker_db_url(config.db_url) if machines or slurm else None
    pace = pace_settings()  # nonsense is refused here, before anything starts
    db = database()
    arrays: SlurmArrays | None = None
    try:
        if library is not None:
            backend = get_session(db, session_id).backend
            if library != backend:
                raise click.UsageError(
                    f"session {session_id} uses the {backend} backend, not {library}; "
                    "leave the library name out or pick a session of that library"
                )
        if machines:
            image = image or get_session(db, session_id).docker_image
            if not image:
                raise click.UsageError(f"session {session_id} names no docker image; pass --image")
        if slurm is not None:
            assert worker_url is not None
            arrays = SlurmArrays(
                db,
                [(session_id, t) for t in tasks],
                slurm,
                worker_db_url=worker_url.render_as_string(hide_password=False),
                log_dir=logs,
                workers=workers,
                extra_env=env,
                settings=settings,
            )
        for task in tasks:
            live, show = progress_display(task, progress_every)
            if arrays is not None:
                with live:
                    report = dispatch(
                        db,
                        session_id,
                        task,
                        arrays.watch((session_id, task)),
                        pace=Pace(1.0, pace["poll_every"], pace["reap_every"], pace["drain_grace"]),
                        on_progress=show,
                        on_event=event_printer(live),
                    )
            elif not machines:
                with live:
                    report = run_local(
                        db,
                        session_id,
                        task,
                        workers=workers or os.cpu_count() or 1,
                        log_dir=logs,
                        db_url=config.db_url.render_as_string(hide_password=False),
                        extra_env=env,
                        settings=settings,
                        on_progress=show,
                        on_event=event_printer(live),
                    )
            else:
                assert worker_url is not None and image is not None
                options = FleetOptions(
                    image=image,
                    worker_db_url=worker_url.render_as_string(hide_password=False),
                    log_dir=logs,
                    compile_workers=workers,
                    extra_env=env,
                    settings=settings,
                    **pace,
                )
                with Connections(known_hosts) as conns, live:
                    report = run_fleet(
                        db,
                        conns,
                        session_id,
                        task,
                        machines,
                        options,
                        on_progress=show,
                        on_event=event_printer(live),
                    )
            print_summary(report)
            if report.interrupted:
                return
            if not report.drained:
                raise click.exceptions.Exit(1)
            if errored := report.all_errored:
                err_console.print(
                    f"go_fish {task.value}, session {session_id}: every job of this run "
                    f"errored ({errored}); see the failure reasons above",
                    markup=False,
                    soft_wrap=True,
                )
                raise click.exceptions.Exit(1)
    finally:
        if arrays is not None:
            arrays.close()
        db.dispose()


def go_fish_main() -> None:
    go_fish_cmd(prog_name="go_fish")
