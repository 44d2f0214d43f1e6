"""``tuna session``: create and list tuning sessions."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import (
    COUNT_RANGE,
    TunaGroup,
    console,
    database,
    emit,
    output_options,
    session_option,
)
from tuna.cli.history import retire_cmd, rules_cmd, rules_options, unretire_cmd
from tuna.cli.strategy import StrategyFlags, describe_strategy, strategy_options
from tuna.errors import TunaError
from tuna.sessions import RUNTIMES, SessionSpec, create_session, get_session, list_sessions
from tuna.sessions.rules import HistoryRules

# The fields of ``session list --json`` / ``--csv``, in the order they have always had.
LISTED = (
    "id", "arch", "num_cu", "backend", "library_version", "library_commit", "toolchain",
    "docker_image", "docker_digest", "label", "ticket", "environment", "user_platform",
    "fingerprint", "created", "runtime", "history_rules", "retired", "retired_reason",
    "default_strategy",
)  # fmt: skip


def _environment(pairs: tuple[str, ...]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise TunaError(f"--env {pair!r}: write KEY=VALUE, e.g. --env MIOPEN_FIND_MODE=1")
        env[key] = value
    return env


@click.group("session", cls=TunaGroup)
def session_group() -> None:
    """Tuning sessions: what is tuned, where, with which library build.

    \b
    Examples:
      tuna session create --arch gfx90a --num-cu 104 --backend miopen --library-version 3.3.0
      tuna session list
      tuna session create --arch x86_64 --num-cu 1 --backend cpuconv --strategy random
      tuna session show -s 1
    """


@session_group.command("create")
@click.option("--arch", required=True, help="Target architecture, e.g. gfx90a.")
@click.option(
    "--num-cu",
    "--num_cu",
    "num_cu",
    type=COUNT_RANGE,
    required=True,
    help="Compute units of the target.",
)
@click.option("--backend", required=True, help="Backend that compiles and evaluates.")
@click.option(
    "--library-version", "--miopen_v", "library_version", help="Version of the tuned library."
)
@click.option("--library-commit", help="Commit of the tuned library.")
@click.option("--toolchain", "--rocm_v", "toolchain", help="Compiler / ROCm version.")
@click.option("--docker-image", "--docker", "docker_image", help="Worker image name.")
@click.option("--docker-digest", help="Worker image digest (sha256:...).")
@click.option("-l", "--label", help="Why this session exists (free text).")
@click.option("--ticket", help="Ticket the work is for.")
@click.option(
    "--runtime",
    type=click.Choice(RUNTIMES, case_sensitive=False),
    help="MIOpen's GPU runtime the results are for (default HIP); an export of the session "
    "names its find db .HIP.fdb.txt or .OpenCL.fdb.txt after it.",
)
@rules_options
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="KEY=VALUE",
    help="Environment the tuning runs with (repeatable); part of the fingerprint.",
)
@click.option(
    "--platform-json",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help='A JSON object added (under "user") to the platform of every measurement of '
    "the session, over the machine's own additions; not part of the fingerprint.",
)
@strategy_options(
    "With --strategy: most measurements per (config, solver), a count (64) or a share of "
    "the space (0.1, 10%).",
    " The session's default: load_jobs without --strategy searches with it "
    "(load_jobs --strategy none queues perf jobs).",
)
def create(
    arch: str,
    num_cu: int,
    backend: str,
    library_version: str | None,
    library_commit: str | None,
    toolchain: str | None,
    docker_image: str | None,
    docker_digest: str | None,
    label: str | None,
    ticket: str | None,
    runtime: str | None,
    rule_changes: dict[str, Any],
    env: tuple[str, ...],
    platform_json: str | None,
    flags: StrategyFlags,
) -> None:
    """Create a session and print its id.

    With --strategy (and its flags), `load_jobs --step perf` on the session searches each
    tunable solver's space with that strategy unless it is given another --strategy.

    \b
    Examples:
      tuna session create --arch gfx90a --num-cu 104 --backend miopen \\
          --library-version 3.3.0 --library-commit 2d1fd997 -l "resnet50 retune"
      tuna session create --arch gfx906 --num-cu 60 --backend miopen --runtime OpenCL
      tuna session create --arch x86_64 --num-cu 1 --backend cpuconv \\
          --platform-json cooling.json
      tuna session create --arch gfx90a --num-cu 104 --backend miopen --library-version 3.3.0 \\
          --library version --max-age 30d
      tuna session create --arch x86_64 --num-cu 1 --backend cpuconv \\
          --strategy model --transfer --budget 10% --patience 32
    """
    from tuna.backends import backends_with_spaces
    from tuna.platforms import read_user_platform

    options = flags.resolve()
    if options is None and (flags.budget_text, flags.seed, flags.round_size) != (None, None, None):
        raise TunaError("--budget, --seed and --round-size go with --strategy NAME")
    if options is not None and backend not in (spaces := backends_with_spaces()):
        raise TunaError(
            f"--strategy: strategies search the spaces of {', '.join(spaces)}, not of "
            f"--backend {backend}"
        )

    user_platform = read_user_platform(platform_json) if platform_json else {}
    spec = SessionSpec(
        arch=arch,
        num_cu=num_cu,
        backend=backend,
        library_version=library_version,
        library_commit=library_commit,
        toolchain=toolchain,
        docker_image=docker_image,
        docker_digest=docker_digest,
        label=label,
        ticket=ticket,
        environment=_environment(env),
        runtime=runtime,
        user_platform=user_platform,
        history_rules=HistoryRules(**rule_changes).to_json(),
        default_strategy=options.to_json() if options is not None else {},
    )
    db = database()
    try:
        row = create_session(db, spec)
    finally:
        db.dispose()
    console.print(
        f"session {row.id}: {row.arch} {row.num_cu} CUs, backend {row.backend}, "
        f"fingerprint {row.fingerprint[:12]}" + (f", runtime {row.runtime}" if row.runtime else ""),
        markup=False,
    )
    if row.history_rules:
        rules = HistoryRules.from_json(row.history_rules).describe()
        console.print(f"history that counts: {rules}", markup=False)
    if row.default_strategy:
        console.print(
            f"default strategy: {describe_strategy(row.default_strategy)} (load_jobs "
            "--strategy NAME overrides it, --strategy none queues perf jobs)",
            markup=False,
        )


@session_group.command("list")
@output_options()
def list_cmd(output: str | None) -> None:
    """List the sessions.

    \b
    Examples:
      tuna session list
      tuna session list --json
    """
    db = database()
    try:
        rows = list_sessions(db)
    finally:
        db.dispose()
    if emit([{k: getattr(r, k) for k in LISTED} for r in rows], output, fields=LISTED):
        return
    table = Table(title="Sessions", title_justify="left")
    for col in ("id", "arch", "CUs", "backend", "library", "label", "strategy", "fingerprint",
                "created", "retired"):  # fmt: skip
        table.add_column(col)
    for r in rows:
        lib = " ".join(v for v in (r.library_version, r.library_commit) if v) or "-"
        table.add_row(
            str(r.id),
            escape(r.arch),
            str(r.num_cu),
            escape(r.backend),
            escape(lib),
            escape(r.label or "-"),
            escape(describe_strategy(r.default_strategy)),
            r.fingerprint[:12],
            f"{r.created:%Y-%m-%d %H:%M}" if r.created else "-",
            f"{r.retired:%Y-%m-%d %H:%M}" if r.retired else "-",
        )
    console.print(table)


@session_group.command("show")
@session_option("Session to show.")
@output_options(csv_too=False)
def show_cmd(session_id: int, output: str | None) -> None:
    """Show one session: its target, library build, history rules and default strategy.

    \b
    Examples:
      tuna session show -s 3
      tuna session show -s 3 --json
    """
    db = database()
    try:
        r = get_session(db, session_id)
    finally:
        db.dispose()
    doc = dict(r.__dict__)
    if emit([doc], output, document=doc):
        return
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    lib = " ".join(v for v in (r.library_version, r.library_commit) if v) or "-"
    for key, value in (
        ("session", str(r.id)),
        ("target", f"{r.arch}, {r.num_cu} CUs"),
        ("backend", r.backend + (f", runtime {r.runtime}" if r.runtime else "")),
        ("library", lib),
        ("toolchain", r.toolchain or "-"),
        ("image", r.docker_digest or r.docker_image or "-"),
        ("environment", " ".join(f"{k}={v}" for k, v in sorted(r.environment.items())) or "-"),
        ("label", r.label or "-"),
        ("ticket", r.ticket or "-"),
        ("fingerprint", r.fingerprint),
        ("created", f"{r.created:%Y-%m-%d %H:%M}" if r.created else "-"),
        ("history that counts", HistoryRules.from_json(r.history_rules).describe()),
        ("default strategy", describe_strategy(r.default_strategy)),
        ("retired", f"{r.retired:%Y-%m-%d %H:%M} {r.retired_reason or ''}" if r.retired else "-"),
    ):
        table.add_row(key, escape(value))
    console.print(table)


# The tuning library's session commands live with the library's other commands.
session_group.add_command(retire_cmd)
session_group.add_command(unretire_cmd)
session_group.add_command(rules_cmd)
