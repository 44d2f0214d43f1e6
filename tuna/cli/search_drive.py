"""``tuna search create`` and ``tuna search run``: the write side of searches (the driver).

The ``tuna search`` group is :mod:`tuna.cli.search`; the read side, ``list`` and ``show``,
is :mod:`tuna.cli.search_view`.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import click

from tuna.cli.base import ID_RANGE, TunaCommand, console, database, session_option, verbose_option
from tuna.cli.strategy import (
    StrategyFlags,
    describe_strategy,
    session_strategy,
    strategy_aims,
    strategy_options,
)
from tuna.errors import TunaError
from tuna.searchers import load_base_config
from tuna.searchers.config import parse_value
from tuna.searchers.objective import parse_target
from tuna.searchers.strategies import StrategyOptions
from tuna.searches import SearchRequest, SessionSearches, check_request, create_search, query
from tuna.searches.query import RunRow, SearchSummary
from tuna.searches.strategy import (
    StrategyAims,
    StrategyRequest,
    create_strategy_search,
    search_name,
)


@click.command("create", cls=TunaCommand)
@click.argument("params", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.argument("assignments", nargs=-1, metavar="[KEY=VALUE]...")
@session_option("Session the search belongs to.")
@click.option(
    "--name",
    help="The search's name, unique in its session (with --strategy, default "
    "'STRATEGY SOLVER config ID').",
)
@click.option(
    "--base",
    "base_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSON file of the base config the points override (KEY=VALUE arguments win).",
)
@click.option(
    "--searcher",
    help="Searcher expression, e.g. 'Random(space, 8, seed=1)', or a strategy's name: tpe, "
    "cmaes, gp, nsga2 (Optuna's samplers), hillclimb, ...",
)
@click.option(
    "--objective",
    "objectives",
    multiple=True,
    metavar="STAT[:min|max]",
    help="A stat to optimise (repeat for several: the first leads; --maximize sets a bare "
    "STAT's direction).",
)
@click.option(
    "--constraint",
    "constraints",
    multiple=True,
    help="A run counts only if it holds, e.g. 'qos_loss <= 3' or "
    "'accuracy >= baseline.accuracy - 0.5' (repeatable).",
)
@click.option(
    "--baseline",
    "baseline_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="A parameter's value in the baseline run, measured first (run -1); one per "
    "parameter. Constraints read its stats as baseline.STAT.",
)
@click.option("--maximize/--minimize", default=False, help="Goal (default: minimise).")
@click.option("--valid", "valid", help="A stat saying whether a run counts (e.g. result_validity).")
@click.option("--parallelism", type=int, default=1, show_default=True, help="Most runs in flight.")
@click.option("--run", "run_cmd", help="Run command template, e.g. './bench {n}'.")
@click.option(
    "--objective-fn",
    "objective_fn",
    metavar="MODULE:FUNCTION",
    help="Instead of --run: a Python function of the config, returning a number or a dict of "
    "stats; its module is read here and run by the workers, from --source (shipped to them) "
    "or installed there.",
)
@click.option("--build", "build_cmd", help="Build command template (build-time parameters).")
@click.option(
    "--source",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Directory copied into every build (shipped to the workers in the artifact).",
)
@click.option(
    "--stats",
    "stats_mode",
    type=click.Choice(["auto", "json", "lines", "regex"]),
    default="auto",
    show_default=True,
    help="How to read stats from a run's output.",
)
@click.option("--stats-pattern", multiple=True, help="Regex with named groups (--stats regex).")
@click.option("--run-timeout", type=float, default=600.0, show_default=True, help="Seconds.")
@click.option("--build-timeout", type=float, default=3600.0, show_default=True, help="Seconds.")
@click.option(
    "--owns",
    type=click.Choice(["machine", "device", "nothing"]),
    default="machine",
    show_default=True,
    help="What one run must have to itself while it runs.",
)
@click.option(
    "--pruner",
    help="Stop hopeless runs early from the values they print as 'tuna:intermediate STEP "
    "VALUE' lines: median, halving, or with settings, e.g. 'median(warmup_runs=3)', "
    "'halving(min_step=1, factor=3)'.",
)
@click.option(
    "--time-budget",
    help="Wall-clock budget from the first run (90s, 10m, 1h30m): then nothing more is "
    "proposed, the runs in flight finish and the search ends done.",
)
@click.option(
    "--dry-run", is_flag=True, help="Show the points, schedule and builds; store nothing."
)
@strategy_options(
    "Most runs; with --strategy, most measurements: a count (64) or a share of the space "
    "(0.1, 10%)."
)
@click.option("--config", "config_id", type=ID_RANGE, help="With --strategy: the config to tune.")
@click.option("--solver", help="With --strategy: the tunable solver whose space to search.")
@verbose_option
def create_cmd(
    params: Path,
    assignments: tuple[str, ...],
    session_id: int,
    name: str | None,
    base_file: Path | None,
    searcher: str | None,
    objectives: tuple[str, ...],
    constraints: tuple[str, ...],
    baseline_items: tuple[str, ...],
    maximize: bool,
    valid: str | None,
    parallelism: int,
    run_cmd: str,
    objective_fn: str | None,
    build_cmd: str | None,
    source: Path | None,
    stats_mode: str,
    stats_pattern: tuple[str, ...],
    run_timeout: float,
    build_timeout: float,
    owns: str,
    pruner: str | None,
    time_budget: str | None,
    dry_run: bool,
    flags: StrategyFlags,
    config_id: int | None,
    solver: str | None,
) -> None:
    """Check a search and store it (nothing runs until go_fish or `tuna search run`).

    Everything is checked first (the parameter file and its hooks, the searcher and its
    proposals, the templates, the stats format); bad input is an error that stores nothing.

    \b
    Examples:
      tuna search create examples/c_build_run/params.py cc=cc -s 5 --name c \\
          --build '{cc} {opt} -DTILE={tile} -o bench bench.c' --run './bench {n} {reps}' \\
          --source examples/c_build_run --stats json --objective gflops --maximize
      tuna search create space.json -s 5 --name q --run './q {qps}' --objective p95 \\
          --searcher "Bisect('qps', 100, 2000, 50, lambda r: r.valid)" --dry-run
      tuna search create -s 3 --strategy model --transfer --config 12 --solver CpuGemm1x1 \\
          --budget 10% --patience 16
      tuna search create space.json -s 5 --name py --objective-fn mymod:measure --source .
      tuna search create examples/c_build_run/ranges.json cc=cc -s 5 --name r \\
          --build '{cc} {opt} -DTILE={tile} -DUNROLL={unroll} -o bench bench.c' \\
          --run './bench {n} {reps}' --source examples/c_build_run --stats json \\
          --objective gflops --maximize --searcher 'Random(space, 12, seed=1)'
      tuna search create params.json -s 5 --name lr --run 'python train.py {lr}' \\
          --objective loss --pruner median --time-budget 30m --parallelism 4
      tuna search create params.json -s 5 --name t --run './bench {tile} {lr}' \\
          --objective gflops --maximize --searcher tpe --budget 40
      tuna search create approx.json -s 5 --name qos --run './net {l0} {l1}' \\
          --objective time_ms:min --objective accuracy:max --baseline l0=0 --baseline l1=0 \\
          --constraint 'accuracy >= baseline.accuracy - 1'

    A parameter may be a list, an int or float range ({"int": [4, 64], "step": 4},
    {"float": [1e-4, 1e-1], "log": true}; Int and Float in a Python file) or conditional
    ("when": {"opt": "-O2"}), and META_constraints lists expressions every config must
    satisfy ("n % tile == 0"), as the docs' parameter files page says. A float range without a
    step has no list of values: give a searcher that samples, such as Random, or one of Optuna's
    samplers by name (--searcher tpe; cmaes, gp, nsga2: pip install 'tuna[optuna]'), which
    sample each range as declared.

    A run that prints 'tuna:intermediate STEP VALUE' lines (a loss after each epoch, say)
    is judged at each one by the --pruner: median stops a run worse than the median of the
    completed runs at that step (after warmup_runs=5 of them), halving keeps the best third
    (factor=3) at steps min_step, min_step*3, ...; a pruned run is killed (its process
    group) and recorded as pruned, never the best. --time-budget stops proposing once spent.

    Several --objective STAT:min|max make the search's answer a Pareto front (the runs
    that count and that no other beats on every objective), shown by `tuna search show`,
    `tuna best --search` and the dashboard; the first objective leads its best-so-far
    curve. A run failing a --constraint is recorded but does not count. --baseline names a
    configuration measured first, as run -1, whose stats a constraint reads as baseline.STAT;
    the searcher starts once it has landed (with --strategy the baseline is the solver's
    default parameters, measured when a constraint reads it).

    Bisect(param, lower, upper, step, predicate) searches the grid lower, lower + step, ...
    up to upper (both bounds included; each is measured when the search reaches it, none is
    assumed good) for the largest value whose Run satisfies predicate. A parameter file's
    META_search_callback() or META_search_callback(past_runs) may return such a searcher.

    With --objective-fn, each run calls that Python function with the run's config, in a
    child process of the worker (`python -m tuna.backends.bench.function`), in a copy of
    --source; a number it returns is the stat --objective names (default: value).

    With --strategy (no parameter file), the search is a tunable solver's space on one
    config, proposed in rounds, each round one perf job; `load_jobs --strategy` makes one
    per (config, solver) of a tag. With --config and --solver but no --strategy, the
    session's default strategy (`tuna session create --strategy`) is the search, each flag
    given overriding its value.
    """
    targets = [parse_target(o if ":" in o else f"{o}:{'max' if maximize else 'min'}")
               for o in objectives]  # fmt: skip
    stat = targets[0].stat if targets else None
    baseline = _baseline(baseline_items)
    default = None
    if flags.strategy is None and (config_id is not None or solver is not None):
        default = session_strategy(session_id)
        if not default:
            raise TunaError(
                f"--config and --solver go with --strategy NAME (session {session_id} has no "
                "default strategy)"
            )
    options = flags.resolve(default)
    if options is not None and pruner is not None:
        raise TunaError(
            "--pruner goes with a parameter file's search: a --strategy round is one job "
            "that times its candidates together, with no intermediate values to stop early; "
            "bound it by --budget or --time-budget"
        )
    if objective_fn is not None:
        if options is not None or run_cmd is not None or build_cmd is not None:
            raise TunaError(
                f"--objective-fn {objective_fn} is what each run calls: leave out --run, "
                "--build and --strategy"
            )
        stat, stats_mode, stats_pattern = stat or "value", "json", ()
    if options is not None:
        if baseline is not None:
            raise TunaError(
                "--strategy's baseline is the solver's default parameters, measured when a "
                "--constraint reads it (e.g. 'threads <= baseline.threads'): leave out --baseline"
            )
        from_session = flags.strategy is None
        aims = strategy_aims([str(t) for t in targets], constraints, time_budget)
        _create_strategy(
            session_id, name, config_id, solver, options, from_session, params, run_cmd, aims
        )
        return
    if params is None or (run_cmd or objective_fn) is None or stat is None or name is None:
        raise TunaError(
            "give the parameter file, --name, --run (or --objective-fn) and --objective (or "
            "--strategy NAME with --config and --solver)"
        )
    if config_id is not None or solver is not None:
        raise TunaError("--config and --solver go with --strategy NAME")
    budget = flags.budget()
    if budget is not None and not isinstance(budget, int):
        raise TunaError(f"--budget {flags.budget_text}: a search's budget is a count of runs")
    try:
        text = params.read_text(encoding="utf-8")
    except OSError as e:
        raise TunaError(f"{params}: cannot read the parameter file ({e.strerror or e})") from e
    except UnicodeDecodeError as e:
        raise TunaError(f"{params}: the parameter file is not UTF-8 text") from e
    spec = {
        "run": run_cmd,
        "build": build_cmd,
        "stats": {"mode": stats_mode, "patterns": list(stats_pattern)},
        "run_timeout_s": run_timeout,
        "build_timeout_s": build_timeout,
        "source_dir": str(source.resolve()) if source else None,
        "owns": owns,
    }
    if objective_fn is not None:
        spec["function"] = {"ref": objective_fn, "stat": stat}
    request = SearchRequest(
        session=session_id,
        name=name,
        space_file=str(params),
        space_text=text,
        spec=spec,
        objective_stat=stat,
        goal=targets[0].goal if targets else ("max" if maximize else "min"),
        more=tuple(targets[1:]),
        constraints=constraints,
        baseline=baseline,
        valid=valid,
        base=load_base_config(base_file, assignments),
        searcher=searcher,
        budget=budget,
        parallelism=parallelism,
        pruner=pruner,
        time_budget=time_budget,
    )
    if dry_run:
        checked = check_request(request)
        for line in checked.plan.render():
            console.print(line, markup=False, highlight=False)
        if budget is not None and not checked.plan.dynamic:
            console.print(f"budget: the first {budget} runs", markup=False)
        console.print("dry run: nothing stored", markup=False)
        return
    db = database()
    try:
        search_id = create_search(db, request)
        checked = check_request(request)
    finally:
        db.dispose()
    plan = checked.plan
    if plan.dynamic:
        what = "dynamic: its points depend on the runs"
    else:
        what = (
            f"{len(plan.proposals)} runs, {len(plan.schedule.builds)} builds "
            f"(naive order: {plan.schedule.naive_builds})"
        )
    console.print(
        f"search {search_id} {name!r} in session {session_id}: {what}; run it with "
        f"`go_fish -s {session_id} --search` or `tuna search run -s {session_id}`",
        markup=False,
    )


def _baseline(items: tuple[str, ...]) -> dict[str, Any] | None:
    """``--baseline KEY=VALUE`` options as a point (None: none given)."""
    if not items:
        return None
    point: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise TunaError(
                f"--baseline {item!r} is not KEY=VALUE; give one per parameter, e.g. "
                "--baseline tile=16 --baseline opt=-O2"
            )
        point[key.strip()] = parse_value(value)
    return point


def _create_strategy(
    session_id: int,
    name: str | None,
    config_id: int | None,
    solver: str | None,
    options: StrategyOptions,
    from_session: bool,
    params: Path | None,
    run_cmd: str | None,
    aims: StrategyAims,
) -> None:
    if config_id is None or solver is None:
        raise TunaError("--strategy searches one config's solver: give --config ID and --solver")
    if params is not None or run_cmd is not None:
        raise TunaError(
            "--strategy searches a solver's own space: leave out the parameter file and --run"
        )
    if from_session:
        console.print(
            f"session {session_id}'s default strategy: {describe_strategy(options.to_json())}",
            markup=False,
        )
    request = StrategyRequest(session_id, config_id, solver, options, name, aims)
    db = database()
    notes: list[str] = []
    try:
        search_id = create_strategy_search(db, request, notes)
    finally:
        db.dispose()
    for note in notes:
        console.print(note, markup=False)
    console.print(
        f"search {search_id} {search_name(request)!r} in session {session_id}: "
        f"{options.strategy} over "
        f"{solver} on config {config_id}; run it with `go_fish -s {session_id} --run_perf` or "
        f"`tuna search run -s {session_id}` beside an evaluate worker",
        markup=False,
    )


def summary_line(s: SearchSummary, best: RunRow | None) -> str:
    """Where a search stands, in one line: what ``tuna search run`` prints at the end."""
    found = "no run counts yet"
    if best is not None:
        point = " ".join(f"{k}={v}" for k, v in best.point.items())
        value = (best.stats or {}).get(s.stat, best.value)
        found = f"best {s.stat}={value} at {point} (run {best.seq})"
    line = (
        f"search {s.id} {s.name!r}: {s.state}; {s.done}/{s.runs} runs finished "
        f"({s.invalid} invalid{f', {s.pruned} pruned' if s.pruned else ''}), "
        f"{s.builds} builds; {found}"
    )
    return line + (f"; {s.reason}" if s.reason else "")


@click.command("run", cls=TunaCommand)
@session_option("Session whose searches to drive.")
@click.option("--search", "ref", help="Only this search (id or name).")
@click.option("--poll", type=float, default=0.02, show_default=True, help="Seconds between looks.")
@verbose_option
def run_cmd(session_id: int, ref: str | None, poll: float) -> None:
    """Drive the session's active searches until each is over (workers run elsewhere).

    It turns each searcher's proposals into jobs and feeds finished runs back; killed at
    any moment, run it again: it resumes from the recorded runs and measures nothing twice.
    Start workers with `tuna worker -s N --phase eval` (they take builds too) or go_fish.

    \b
    Examples:
      tuna search run -s 5
      tuna search run -s 5 --search flags
    """
    db = database()
    try:
        only = None
        if ref is not None:  # an id (of this session's searches) or a name
            only = query.find_search(db, int(ref) if ref.isdigit() else ref, session_id).id
        searches = SessionSearches(db, session_id, only=only)
        stop = threading.Event()
        started = time.monotonic()
        try:
            searches.run(stop, poll_s=poll)
        except KeyboardInterrupt:
            console.print("interrupted: run `tuna search run` again to go on", markup=False)
        ended = list(searches.ended)
        if not ended and only is None:
            console.print(f"session {session_id} has no active search", markup=False)
        for search_id in ended or ([only] if only is not None else []):
            s = query.find_search(db, search_id)
            console.print(summary_line(s, query.best_run(db, s)), markup=False)
        console.print(f"wall: {time.monotonic() - started:.1f} s", markup=False)
    finally:
        db.dispose()
