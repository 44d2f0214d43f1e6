"""``tuna worker``: work one phase of a session's jobs in this process."""

from __future__ import annotations

import json
from pathlib import Path

import click

from tuna.cli.base import (
    COUNT_RANGE,
    ID_RANGE,
    TunaCommand,
    database,
    session_option,
    verbose_option,
    worker_settings_options,
)
from tuna.db.enums import JobStep
from tuna.db.retry import through_outages
from tuna.jobs import Phase
from tuna.worker import JobLog, WorkerReport, WorkerSettings, run_worker
from tuna.worker.stages import Stage, parse_stage, run_stages


def print_worker_report(r: WorkerReport) -> None:
    from tuna.cli.console import console  # here: a worker starts without rich

    console.print(
        f"worker {r.owner} ({r.phase.value}, session {r.session}) stopped: {r.stopped}; "
        f"{r.claimed} claimed, {r.done} done, {r.retried} retried, {r.errored} errored, "
        f"{r.not_applicable} not applicable, {r.lost} lost, {r.released} released, "
        f"{r.reaped} reaped, in {r.seconds:.1f} s",
        soft_wrap=True,
    )


@click.command("worker", cls=TunaCommand)
@session_option("Session whose jobs to work.")
@click.option(
    "--phase",
    type=click.Choice([p.value for p in Phase]),
    required=True,
    help="compile (no device needed) or eval (times kernels on the device).",
)
@click.option("--burst", is_flag=True, help="Exit once no job of this phase is ready or in flight.")
@click.option("--max-jobs", type=click.IntRange(min=1), help="Exit after claiming N jobs.")
@click.option("--gpu", type=COUNT_RANGE, help="GPU index this worker uses (recorded on its jobs).")
@click.option(
    "--step",
    type=click.Choice([s.value for s in (JobStep.PERF, JobStep.FIND, JobStep.KERNEL)]),
    help="Evaluate only jobs of this step (and a search's runs); other steps' compiled jobs "
    "stay compiled. Compile stages take every step.",
)
@click.option(
    "--report-file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="TUNA_WORKER_REPORT",  # how go_fish asks (an older image ignores it)
    hidden=True,
    help="Also write what the worker did as JSON here (go_fish counts its own workers' jobs).",
)
@click.option(
    "--machine",
    "machine_id",
    type=ID_RANGE,
    help="Id of the machine this worker runs on (recorded on its jobs; go_fish sets it).",
)
@click.option(
    "--then",
    "then",
    metavar="SESSION:PHASE",
    multiple=True,
    callback=lambda _ctx, _param, values: [_stage(v) for v in values],
    help="Then work this (session, phase) in the same process, drained (repeatable; "
    "implies --burst): compiles move on when nothing is ready, an evaluation starts once "
    "every compile before it is drained.",
)
@worker_settings_options
@verbose_option
def worker_cmd(
    session_id: int,
    phase: str,
    burst: bool,
    max_jobs: int | None,
    gpu: int | None,
    step: str | None,
    report_file: Path | None,
    machine_id: int | None,
    then: list[Stage],
    settings: WorkerSettings,
) -> None:
    """Claim jobs of one phase of a session and run its backend on them.

    Runs until stopped (or, with --burst, until the phase is drained). SIGTERM or
    Ctrl-C finishes the current job and hands the others back; a killed worker's jobs
    return to the queue when their leases expire.

    \b
    Examples:
      tuna worker --session 3 --phase compile
      tuna worker --session 3 --phase eval --gpu 0
      tuna worker --session 3 --phase eval --step find --burst
      tuna worker --session 3 --phase compile --burst --claim-batch 16
      tuna worker --session 3 --phase compile --then 4:compile --then 3:eval --then 4:eval
    """
    settings = settings.but(
        burst=burst,
        max_jobs=max_jobs,
        gpu=gpu,
        machine=machine_id,
        step=JobStep(step) if step else None,
    )
    # A worker started during an outage (a database restart, a fleet started before its
    # head) waits for it as a running worker does: a line per try, up to the patience.
    db = through_outages(
        database, what="worker: open the database", patience=settings.outage_patience
    )
    try:
        if then:
            stages = [(session_id, Phase(phase)), *then]
            reports = run_stages(db, stages, settings, hooks=[JobLog()])
        else:
            reports = [run_worker(db, session_id, Phase(phase), settings, hooks=[JobLog()])]
    finally:
        db.dispose()
    for report in reports:
        print_worker_report(report)
    if report_file is not None:
        report_file.write_text(json.dumps([r.as_dict() for r in reports]))


def _stage(text: str) -> Stage:
    try:
        return parse_stage(text)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--then") from e
