"""What ``go_fish`` (and ``tuna quickstart``) show while a phase runs and when it ends: a
live table on a terminal, a progress line elsewhere (a log, a pipe), and the summary."""

from __future__ import annotations

from collections.abc import Callable

from rich.live import Live
from rich.markup import escape
from rich.table import Table

from tuna.cli.base import console, err_console
from tuna.fleet.phase import FishReport, Progress, Task


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    m, s = divmod(int(seconds + 0.5), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _to_go(p: Progress, task: Task) -> str:
    """What is left: builds and runs apart for a search (its runs wait for their builds)."""
    if task is Task.SEARCH or p.builds:
        return f"{p.builds} build(s) and {p.runs} run(s) to go"
    return f"{p.remaining} to go"


def progress_table(p: Progress, task: Task) -> Table:
    table = Table(title=f"session {p.counts.session}: {task.value}", title_justify="left")
    for col in ("state", "jobs"):
        table.add_column(col, justify="right" if col == "jobs" else "left")
    for state, n in p.counts.by_state.items():
        table.add_row(state.value, str(n))
    table.caption = (
        f"{p.finished} done this run, {_to_go(p, task)}, "
        f"{p.rate:.1f} jobs/s, ETA {_duration(p.eta_s)}, "
        f"{p.workers_alive} worker(s) running, {_duration(p.elapsed_s)} elapsed"
    )
    return table


def print_summary(r: FishReport) -> None:
    c = r.final.counts
    verdict = (
        "interrupted" if r.interrupted else "drained" if r.drained else "stopped with work left"
    )
    where = f"worker(s) on {len(r.hosts)} machine(s)" if r.hosts else r.description
    console.print(
        f"go_fish {r.task.value}, session {r.session}: {verdict} in {_duration(r.final.elapsed_s)}"
        f" with {r.workers} {where}; {r.final.finished} job(s) left the phase, "
        f"{r.final.remaining} remain",
        markup=False,
        soft_wrap=True,
    )
    did = r.this_run()
    console.print(
        "  this run: " + (", ".join(f"{st.value} {n}" for st, n in did.items()) or "nothing"),
        markup=False,
    )
    console.print(
        f"  session {r.session} now: "
        + (", ".join(f"{st.value} {n}" for st, n in c.by_state.items() if n) or "no jobs"),
        markup=False,
    )
    if r.per_host:
        table = Table(title="Per machine", title_justify="left")
        for col in ("machine", "workers", "jobs finished", "lost"):
            table.add_column(
                col, justify="right" if col in ("workers", "jobs finished") else "left"
            )
        for host, (workers, done) in r.per_host.items():
            table.add_row(
                escape(host), str(workers), str(done), "yes" if host in r.lost_hosts else ""
            )
        console.print(table)
    for host, why in r.lost_hosts.items():
        err_console.print(f"  machine {host} was lost: {why}", markup=False, soft_wrap=True)
    bad = [code for code in r.exit_codes if code not in (0, None)]
    if bad and r.logs:
        err_console.print(
            f"  {len(bad)} worker(s) exited with an error; logs: {r.logs[0].parent}", markup=False
        )
    if c.reasons:
        table = Table(title="Top failure reasons", title_justify="left")
        for col in ("state", "reason", "jobs"):
            table.add_column(col)
        for state, reason, n in c.reasons[:10]:
            table.add_row(state.value, escape(reason), str(n))
        console.print(table)


def progress_line(p: Progress, task: Task) -> str:
    """One line of progress, for a log file or a pipe."""
    states = ", ".join(f"{st.value} {n}" for st, n in p.counts.by_state.items() if n)
    return (
        f"go_fish {task.value}, session {p.counts.session} [{_duration(p.elapsed_s)}]: "
        f"{states or 'no jobs'}; {p.finished} done this run, {_to_go(p, task)}, "
        f"{p.rate:.1f} jobs/s, ETA {_duration(p.eta_s)}, {p.workers_alive} worker(s)"
    )


class _Lines:
    """Stands in for :class:`Live` where the output is not a terminal: progress lines and
    events go to stdout, with the summary, so a log of stdout has all of it."""

    console = console

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *_exc: object) -> None:
        pass


def progress_display(task: Task, every: float) -> tuple[Live | _Lines, Callable[[Progress], None]]:
    """A live table on a terminal; elsewhere a progress line every ``every`` seconds."""
    if console.is_terminal and err_console.is_terminal:
        live = Live(console=err_console, transient=True, auto_refresh=False)

        def show(p: Progress) -> None:
            live.update(progress_table(p, task), refresh=True)

        return live, show
    last: list[float] = []

    def line(p: Progress) -> None:
        if not last or p.elapsed_s - last[0] >= every:
            last[:] = [p.elapsed_s]
            console.print(progress_line(p, task), markup=False, soft_wrap=True)

    return _Lines(), line


def event_printer(live: Live | _Lines) -> Callable[[str], None]:
    return lambda text: live.console.print(text, markup=False, soft_wrap=True)
