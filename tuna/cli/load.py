"""``load_jobs``: queue one job per (config, applicable solver) of a session."""

from __future__ import annotations

import copy

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import (
    COUNT_RANGE,
    SMALLINT_RANGE,
    TunaCommand,
    console,
    database,
    session_option,
    verbose_option,
)
from tuna.cli.strategy import (
    NONE,
    StrategyFlags,
    describe_strategy,
    session_strategy,
    strategy_aims,
    strategy_options,
)
from tuna.errors import TunaError
from tuna.jobs.load import load_jobs
from tuna.searches.strategy import StrategyLoad, load_strategy_searches
from tuna.sessions.rules import exclusion_hint


@click.command("load_jobs", cls=TunaCommand)
@click.option("-t", "--tag", help="Load the configs with this tag.")
@click.option(
    "--all_configs",
    "--all-configs",
    "all_configs",
    is_flag=True,
    help="Load every config in the catalogue.",
)
@session_option(
    "Session the jobs belong to.", hint="MITuna's load_job -s (solvers) is --solvers in Tuna"
)
@click.option(
    "--step",
    type=click.Choice(["perf", "find", "kernel"]),
    default=None,
    help="What the jobs produce (default perf).",
)
@click.option(
    "--fin_steps",
    metavar="STEPS",
    help="MITuna's spelling of --step: miopen_perf_compile,miopen_perf_eval is perf, "
    "miopen_find_compile,miopen_find_eval is find.",
)
@click.option("--solvers", help="Comma-separated solver names (default: all).")
@click.option(
    "--only_tunable",
    "--only-tunable",
    "--tunable",
    "only_tunable",
    is_flag=True,
    help="Only tunable solvers.",
)
@click.option("-l", "--label", help="Label the jobs (e.g. a ticket or a reason).")
@click.option(
    "--priority", type=SMALLINT_RANGE, default=0, show_default=True, help="Lower runs first."
)
@click.option(
    "--force",
    is_flag=True,
    help="Queue work even if history that counts for the session (by default: a session "
    "with the same fingerprint) finished it or measured it --min-trials times.",
)
@click.option(
    "--min-trials",
    "--min_trials",
    "min_trials",
    type=COUNT_RANGE,
    help="Skip (config, solver) pairs that already have this many measurements that count "
    "for the session (its history rules: `tuna session rules`); with --strategy, no search "
    "is made for them.",
)
@strategy_options(
    "With --strategy: most measurements per (config, solver), a count (64) or a share of "
    "the space (0.1, 10%).",
    " Without it a session's default strategy (tuna session create --strategy) searches; "
    "--strategy none queues perf jobs instead.",
)
@click.option(
    "--objective",
    "objectives",
    multiple=True,
    metavar="STAT:min|max",
    help="With --strategy: time_ms:min first, then others the backend computes from a "
    "candidate (cpuconv: threads, workspace_bytes); several make each search's answer a "
    "Pareto front (nsga2 and tpe search for it; sliced splits the budget by the computed ones).",
)
@click.option(
    "--constraint",
    "constraints",
    multiple=True,
    help="With --strategy: a run counts only if it meets this, e.g. 'workspace_bytes <= 1e6' "
    "or 'time_ms <= baseline.time_ms / 2' (the baseline: the solver's default parameters, "
    "measured first).",
)
@click.option(
    "--time-budget",
    help="With --strategy: each search stops proposing this long after its first round "
    "(90s, 10m, 1h30m); the round in flight finishes.",
)
@verbose_option
def load_jobs_cmd(
    tag: str | None,
    all_configs: bool,
    session_id: int,
    step: str | None,
    fin_steps: str | None,
    solvers: str | None,
    only_tunable: bool,
    label: str | None,
    priority: int,
    force: bool,
    min_trials: int | None,
    flags: StrategyFlags,
    objectives: tuple[str, ...],
    constraints: tuple[str, ...],
    time_budget: str | None,
) -> None:
    """Queue jobs: one per (config, applicable solver), never duplicated.

    With --strategy, each (config, applicable tunable solver) is a search instead: the
    strategy proposes candidates in rounds, each round one perf job (its candidates built
    together), until the budget or patience is spent; a final job records the best measured
    one. go_fish (or `tuna search run`) drives them. A --constraint that reads the baseline
    (baseline.time_ms) has the solver's default parameters measured first, as run -1; the
    strategy starts once they landed, and every run is judged against them. A session
    created with --strategy searches so without --strategy (each flag given overrides its
    default), and queues perf jobs with --strategy none. A candidate already measured in a
    session whose history counts (the session's rules) is not timed again: its stored time
    is the search's; --remeasure times it again.

    \b
    Examples:
      load_jobs -t resnet50 --session 3 --step perf
      load_jobs --all_configs -s 3 --step find --solvers ConvDirectNaive,ConvGemm -l retune
      load_jobs -t resnet50 -s 3 --min-trials 200
      load_job -t resnet50 --session_id 3 --fin_steps miopen_perf_compile,miopen_perf_eval
      load_jobs -t resnet50 -s 3 --strategy model --transfer --budget 10% --patience 32
      load_jobs -t resnet50 -s 3 --strategy tpe --budget 25% --seed 1
      load_jobs -t resnet50 -s 3 --strategy nsga2 --budget 25% --objective time_ms:min \\
          --objective threads:min --time-budget 2h
      load_jobs -t resnet50 -s 3 --strategy tpe --budget 64 \\
          --constraint 'time_ms <= baseline.time_ms / 2'
      load_jobs -t resnet50 -s 3 --strategy none
      load_jobs -t resnet50 -s 3 --strategy random --budget 64 --remeasure
    """
    step = _step(step, fin_steps)
    names = [s.strip() for s in solvers.split(",") if s.strip()] if solvers else None
    default = session_strategy(session_id) if step == "perf" or flags.strategy == NONE else {}
    options = flags.resolve(default)
    from_session = flags.strategy is None
    if options is None and flags.budget_text is not None:
        raise TunaError("--budget goes with --strategy NAME (without it a job times a sample)")
    if options is None and (objectives or constraints or time_budget is not None):
        raise TunaError(
            "--objective, --constraint and --time-budget go with --strategy NAME (a perf job "
            "keeps the fastest candidate of the sample it times)"
        )
    if options is not None:
        if step != "perf":
            raise TunaError(
                f"--strategy searches a tunable solver's space: --step perf, not {step}"
            )
        if force or label is not None:
            if from_session:
                raise TunaError(
                    f"session {session_id} searches by strategy ({options.strategy}, its "
                    "default), which takes no --force or --label: add "
                    "--strategy none to queue perf jobs"
                )
            raise TunaError("--strategy does not take --force or --label")
        db = database()
        try:
            loaded = load_strategy_searches(
                db,
                session_id,
                options,
                tag=tag,
                all_configs=all_configs,
                solvers=names,
                min_trials=min_trials,
                aims=strategy_aims(objectives, constraints, time_budget),
            )
        finally:
            db.dispose()
        if from_session:
            console.print(
                f"session {session_id}'s default strategy: {describe_strategy(options.to_json())}"
                " (--strategy none queues perf jobs)",
                markup=False,
            )
        _print_strategy_load(session_id, loaded)
        return
    db = database()
    try:
        report = load_jobs(
            db,
            session_id,
            step=step,
            tag=tag,
            all_configs=all_configs,
            solvers=names,
            only_tunable=only_tunable,
            label=label,
            priority=priority,
            force=force,
            min_trials=min_trials,
        )
    finally:
        db.dispose()
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("configs", str(report.configs))
    table.add_row("(config, solver) pairs", str(report.candidates))
    table.add_row("jobs queued", str(report.inserted))
    table.add_row("already queued", str(report.already_queued))
    for other, n in sorted(report.done_elsewhere.items()):
        table.add_row(f"done in session {other} (its history counts)", str(n))
    if report.min_trials is not None:
        table.add_row(
            f"skipped: >= {report.min_trials} measurements that count", str(report.tuned_enough)
        )
    for rule, n in report.not_counted.most_common():
        table.add_row(f"queued again: done elsewhere, not counted ({rule})", str(n))
    for reason, n in report.not_applicable.most_common():
        table.add_row(f"not applicable: {escape(reason)}", str(n))
    console.print(f"session {session_id}, step {step}:", markup=False)
    console.print(table)
    if report.by_solver:
        console.print(
            "queued per solver: "
            + ", ".join(f"{name} {n}" for name, n in sorted(report.by_solver.items())),
            markup=False,
        )
    console.print(f"history rules: {report.rules}", markup=False)
    if report.done_elsewhere or report.tuned_enough:
        console.print("(pass --force to queue work that counting history already did)")
    for rule in report.not_counted:
        hint = exclusion_hint(rule)
        if hint:
            console.print(f"({rule}: {hint})", markup=False)


def _print_strategy_load(session_id: int, loaded: StrategyLoad) -> None:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("configs", str(loaded.configs))
    table.add_row("searches created", str(len(loaded.created)))
    table.add_row("already created", str(loaded.already))
    if loaded.min_trials is not None:
        table.add_row(
            f"skipped: >= {loaded.min_trials} measurements that count", str(loaded.tuned_enough)
        )
    for reason, n in loaded.not_applicable.most_common():
        table.add_row(f"not applicable: {escape(reason)}", str(n))
    console.print(f"session {session_id}, step perf, searched by strategy:", markup=False)
    console.print(table)
    for note in loaded.notes:
        console.print(note, markup=False)
    if loaded.created:
        first, last = loaded.created[0], loaded.created[-1]
        console.print(
            f"searches {first}..{last}: `go_fish -s {session_id} --run_perf` runs them (or "
            f"`tuna search run -s {session_id}` beside `tuna worker -s {session_id} --phase "
            "eval`: evaluate workers compile the rounds too)",
            markup=False,
        )


_FIN_STEPS = {
    "perf": {"miopen_perf_compile", "miopen_perf_eval"},
    "find": {"miopen_find_compile", "miopen_find_eval"},
}


def _step(step: str | None, fin_steps: str | None) -> str:
    """``--step``, or the step MITuna's ``--fin_steps`` names (both halves are one Tuna job)."""
    if fin_steps is None:
        return step or "perf"
    wanted = {s.strip() for s in fin_steps.split(",") if s.strip()}
    found = [name for name, steps in _FIN_STEPS.items() if wanted and wanted <= steps]
    if not found:
        raise TunaError(
            f"--fin_steps {fin_steps}: give miopen_perf_compile,miopen_perf_eval (--step perf) "
            "or miopen_find_compile,miopen_find_eval (--step find); a Tuna job is compiled "
            "and evaluated, go_fish picks the phase"
        )
    if step is not None and step != found[0]:
        raise TunaError(f"--step {step} and --fin_steps {fin_steps} disagree; give one of them")
    return found[0]


load_job_cmd = copy.copy(load_jobs_cmd)
load_job_cmd.name = "load_job"
load_job_cmd.hidden = True


def load_jobs_main() -> None:
    load_jobs_cmd(prog_name="load_jobs")


def load_job_main() -> None:
    load_jobs_cmd(prog_name="load_job")
