"""go_fish's Slurm options and its ``--status`` / ``--clean`` on Slurm (``go_fish --slurm``)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import F, console
from tuna.fleet.slurm import SlurmPool, parse_partitions
from tuna.fleet.slurm_client import (
    clean_slurm_leftovers,
    left_over,
    partitions,
    slurm_command,
    tuna_arrays,
)


def slurm_options(fn: F) -> F:
    """``--slurm`` and the pool's settings; the command receives them as one ``slurm``
    argument: a :class:`SlurmPool` (``TUNA_SLURM_*`` with the options over them), or None
    without ``--slurm``."""
    options = [
        click.option(
            "--slurm",
            is_flag=True,
            help="Ask Slurm for the workers: one job array of workers per phase.",
        ),
        click.option(
            "--partition",
            "partition",
            multiple=True,
            metavar="[PHASE=]NAME",
            help="Slurm partition, for both phases or per phase: --partition compile=cpu "
            "--partition eval=gpu (default: $TUNA_SLURM_PARTITION, else Slurm's default).",
        ),
        click.option("--account", help="Slurm account (default: $TUNA_SLURM_ACCOUNT)."),
        click.option("--qos", help="Slurm QoS (default: $TUNA_SLURM_QOS)."),
        click.option(
            "--slurm-time",
            metavar="TIME",
            help="Time limit of each task, as sbatch --time takes it (default: $TUNA_SLURM_TIME).",
        ),
        click.option(
            "--cpus-per-task",
            type=click.IntRange(min=1),
            help="CPUs of each compile task (default: $TUNA_SLURM_CPUS_PER_TASK, else 1).",
        ),
        click.option(
            "--sbatch-arg",
            "sbatch_args",
            multiple=True,
            metavar="ARG",
            help="Extra sbatch argument, e.g. --sbatch-arg=--constraint=mi250 "
            "(more in $TUNA_SLURM_SBATCH_ARGS).",
        ),
    ]

    @functools.wraps(fn)
    def wrapper(
        *args: Any,
        slurm: bool,
        partition: tuple[str, ...],
        account: str | None,
        qos: str | None,
        slurm_time: str | None,
        cpus_per_task: int | None,
        sbatch_args: tuple[str, ...],
        **kwargs: Any,
    ) -> Any:
        given = partition or account or qos or slurm_time or cpus_per_task or sbatch_args
        if given and not slurm:
            raise click.UsageError(
                "--partition, --account, --qos, --slurm-time, --cpus-per-task and "
                "--sbatch-arg go with --slurm"
            )
        pool = None
        if slurm:
            slurm_command("sbatch")  # first: nothing else is worth checking without it
            parts: dict[str, str] = {}
            for p in partition:
                parts.update(parse_partitions(p))
            pool = SlurmPool.from_env(
                partitions=parts,
                account=account,
                qos=qos,
                time_limit=slurm_time,
                cpus_per_task=cpus_per_task,
                sbatch_args=sbatch_args,
            )
        return fn(*args, slurm=pool, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


def slurm_status() -> None:
    """``go_fish --status --slurm``: the partitions, and the arrays of go_fish runs."""
    known = partitions()
    table = Table(title="Slurm partitions", title_justify="left")
    for col in ("partition", "nodes", "CPUs", "GPUs"):
        table.add_column(col)
    for name, p in sorted(known.items()):
        if name:
            table.add_row(escape(name), escape(",".join(p.nodes)), str(p.cpus), str(p.gpus))
    console.print(table)
    arrays = tuna_arrays()
    left = {a.array for a in left_over(arrays)}
    table = Table(title="Tuna's arrays", title_justify="left")
    for col in ("array", "name", "session", "phase", "tasks", "go_fish"):
        table.add_column(col)
    for a in arrays:
        table.add_row(
            a.array,
            escape(a.name),
            a.session,
            a.phase,
            escape(", ".join(f"{n} {st.lower()}" for st, n in sorted(a.states.items()))),
            "[yellow]gone (left over)[/]" if a.array in left else escape(a.owner),
        )
    if arrays:
        console.print(table)
    else:
        console.print("no Tuna array in Slurm's queue", markup=False)
    if left:
        console.print(
            "go_fish --slurm --clean cancels the arrays of killed go_fish runs (their workers "
            "hand their jobs back) and removes their run folders",
            markup=False,
            soft_wrap=True,
        )


def slurm_clean(log_dir: Path) -> None:
    """``go_fish --clean --slurm``: cancel the arrays killed go_fish runs left."""
    left = clean_slurm_leftovers(left_over(tuna_arrays()))
    for a in left:
        console.print(f"cancelled {a.describe()}; logs under {log_dir}", markup=False)
    if not left:
        console.print("Slurm: nothing left over", markup=False)
