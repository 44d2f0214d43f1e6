"""Running one build or one run of a bench search in a scratch directory.

A **build** copies the session's source directory (if any) into a fresh directory of the
job's scratch directory and runs the build command there; that directory is the build's
artifact. A **run** copies the artifact into a fresh directory, runs the run command there
with a timeout, and parses its stats. Both commands are templates over the merged config
(:mod:`~tuna.backends.bench.templates`), run by ``/bin/sh -c`` in their own process group
(a timeout kills the whole group, children included); the merged config is also in the
file ``tuna-config.json`` of the directory (its path in ``$TUNA_CONFIG``).

Nothing a benchmark does is an exception here: a non-zero exit, a timeout, a crash (a
signal), a failed build or missing stats make an invalid :class:`~tuna.searchers.run.Run`
whose reason says which — a result the searcher sees.

A run may print **intermediate values**, ``tuna:intermediate STEP VALUE`` lines
(:func:`tuna.searchers.prune.parse_intermediate`); they come back with the Run
(``Executed.intermediate``). Given a ``report`` callback, :func:`run` reads the output as
it comes and calls it with each one; when it answers a reason (the search's pruner judged
the run hopeless) the run's process group is killed and the Run is invalid with that
reason, ``Executed.pruned`` true. A malformed intermediate line stops the run too, invalid
with a reason that shows the form.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuna.backends.bench.stats import StatsFormat
from tuna.backends.bench.templates import BenchError, CommandTemplate
from tuna.searchers.errors import SearchError
from tuna.searchers.prune import parse_intermediate
from tuna.searchers.run import Run

CONFIG_FILE = "tuna-config.json"
TAIL = 2000

Report = Callable[[int, float], "str | None"]
"""Called with each intermediate value (step, value); returns why to stop the run, or None."""


@dataclass(frozen=True)
class BenchSpec:
    """A benchmark as a search backend: its commands, where its sources are, how to read it.

    ``required_stats`` are stats every run must print (the objective's, say); a run missing
    one is invalid. ``source_dir`` is copied into each build's directory.
    """

    run: CommandTemplate
    build: CommandTemplate | None = None
    stats: StatsFormat = field(default_factory=StatsFormat)
    required_stats: tuple[str, ...] = ()
    run_timeout_s: float = 600.0
    build_timeout_s: float = 3600.0
    source_dir: Path | None = None

    @classmethod
    def of(cls, run: str, build: str | None = None, **kw: Any) -> BenchSpec:
        """A spec from command texts: ``BenchSpec.of("./bench {n}", build="make N={n}")``."""
        return cls(
            run=CommandTemplate(run, "run command"),
            build=CommandTemplate(build, "build command") if build else None,
            **kw,
        )

    def check(self, known: Sequence[str] | Mapping[str, Any]) -> None:
        """Refuse templates naming what is not a parameter or base setting; check the sources."""
        names = list(known)
        for t in (self.build, self.run):
            if t is not None:
                t.check(names)
        if self.source_dir is not None and not Path(self.source_dir).is_dir():
            raise BenchError(f"source directory {self.source_dir} does not exist")


@dataclass(frozen=True)
class CommandResult:
    """What one command did: exit status (negative: killed by that signal), output, time."""

    command: str
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    stopped: str | None = None  # why the command was stopped as it ran (``on_line``'s answer)

    @property
    def ok(self) -> bool:
        return not self.timed_out and self.stopped is None and self.returncode == 0

    def failure(self, what: str, timeout_s: float) -> str | None:
        """Why the command failed, in words (None when it did not)."""
        if self.stopped is not None:
            return self.stopped
        if self.timed_out:
            return f"{what} timed out after {timeout_s:g} s"
        rc = self.returncode
        if rc is not None and rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            return f"{what} crashed (killed by {name}){_tail(self.stderr)}"
        if rc:
            return f"{what} exited with status {rc}{_tail(self.stderr or self.stdout)}"
        return None


@dataclass(frozen=True)
class BuildResult:
    """A build's artifact directory, or why there is none."""

    directory: Path
    ok: bool
    reason: str | None = None
    result: CommandResult | None = None


@dataclass(frozen=True)
class Executed:
    """One run: the Run a searcher is sent, and the command's raw result (None if not run)."""

    run: Run
    result: CommandResult | None
    intermediate: dict[int, float] = field(default_factory=dict)
    pruned: bool = False


def run_command(
    command: str,
    cwd: Path,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    on_line: Callable[[str], str | None] | None = None,
) -> CommandResult:
    """``sh -c command`` in ``cwd``, killed with its whole process group after ``timeout_s``.

    With ``on_line``, each line of its output is given to it as it comes (from a thread of
    this process); an answer other than None kills the group at once and is the result's
    ``stopped``, as is what ``on_line`` raised."""
    if on_line is not None:
        return _run_streaming(command, cwd, timeout_s, env, on_line)
    start = time.monotonic()
    proc = _start(command, cwd, env)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    finally:
        _kill_group(proc.pid)  # what it left behind in its group
    return CommandResult(
        command=command,
        returncode=proc.returncode,
        stdout=out,
        stderr=err,
        seconds=time.monotonic() - start,
        timed_out=timed_out,
    )


def _start(command: str, cwd: Path, env: Mapping[str, str] | None) -> subprocess.Popen[str]:
    """``sh -c command`` in a process group of its own (so a kill reaches what it started)."""
    return subprocess.Popen(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )


def _run_streaming(
    command: str,
    cwd: Path,
    timeout_s: float,
    env: Mapping[str, str] | None,
    on_line: Callable[[str], str | None],
) -> CommandResult:
    start = time.monotonic()
    proc = _start(command, cwd, env)
    out: list[str] = []
    err: list[str] = []
    stopped: list[str] = []

    def read_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.append(line)
            if stopped:
                continue  # killed: take what is left in the pipe
            try:
                why = on_line(line)
            except Exception as e:  # the caller's trouble stops the run, never the reader
                why = f"{type(e).__name__}: {e}"
            if why is not None:
                stopped.append(why)
                _kill_group(proc.pid)

    def read_err() -> None:
        assert proc.stderr is not None
        err.append(proc.stderr.read())

    readers = [threading.Thread(target=f, daemon=True) for f in (read_out, read_err)]
    for t in readers:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        proc.wait()
    finally:
        _kill_group(proc.pid)  # what it left behind in its group
    for t in readers:
        t.join(timeout=5.0)  # a process outside the group may hold the pipes open
    return CommandResult(
        command=command,
        returncode=proc.returncode,
        stdout="".join(out),
        stderr="".join(err),
        seconds=time.monotonic() - start,
        timed_out=timed_out and not stopped,
        stopped=stopped[0] if stopped else None,
    )


def intermediate_values(output: str) -> dict[int, float]:
    """Every ``tuna:intermediate STEP VALUE`` line of ``output`` (a later one of a step
    wins); a :class:`SearchError` for a malformed one."""
    curve: dict[int, float] = {}
    for line in output.splitlines():
        found = parse_intermediate(line)
        if found is not None:
            curve[found[0]] = found[1]
    return curve


def new_scratch(root: Path | None, label: str) -> Path:
    """A fresh per-job scratch directory under ``root`` (the system's temp dir by default)."""
    if root is not None:
        Path(root).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"tuna-bench-{label}-", dir=root))


def build(spec: BenchSpec, config: Mapping[str, Any], directory: Path) -> BuildResult:
    """Build ``config`` into ``directory`` (created; the sources copied in first)."""
    _fresh(directory, spec.source_dir)
    _write_config(directory, config)
    if spec.build is None:
        return BuildResult(directory, ok=True)
    command = spec.build.render(config)
    result = run_command(command, directory, spec.build_timeout_s, _env(directory))
    reason = result.failure("build", spec.build_timeout_s)
    return BuildResult(directory, ok=reason is None, reason=reason, result=result)


def run(
    spec: BenchSpec,
    config: Mapping[str, Any],
    built: BuildResult,
    directory: Path,
    report: Report | None = None,
) -> Executed:
    """Run ``config`` on ``built``'s artifact, in ``directory`` (a fresh copy of it); each
    intermediate value goes to ``report`` as it is printed (the module docstring)."""
    if not built.ok:
        return Executed(Run.invalid(config, f"not run: {built.reason}"), None)
    _fresh(directory, built.directory)
    _write_config(directory, config)
    command = spec.run.render(config)
    curve: dict[int, float] = {}
    pruned: list[str] = []

    def on_line(line: str) -> str | None:
        try:
            found = parse_intermediate(line)
        except SearchError as e:
            return str(e)
        if found is None or report is None:
            return None
        curve[found[0]] = found[1]
        why = report(*found)
        if why is not None:
            pruned.append(why)
        return why

    result = run_command(
        command,
        directory,
        spec.run_timeout_s,
        _env(directory),
        on_line=on_line if report is not None else None,
    )
    if report is None:
        try:
            curve = intermediate_values(result.stdout)
        except SearchError as e:
            return Executed(Run.invalid(config, str(e)), result)
    reason = result.failure("run", spec.run_timeout_s)
    if reason is not None:
        return Executed(Run.invalid(config, reason), result, curve, pruned=bool(pruned))
    stats = spec.stats.parse(result.stdout)
    if not stats:
        return Executed(
            Run.invalid(
                config, f"run printed no stats ({spec.stats.mode} format){_tail(result.stdout)}"
            ),
            result,
            curve,
        )
    missing = [s for s in spec.required_stats if s not in stats]
    if missing:
        return Executed(
            Run(
                config=dict(config),
                stats=stats,
                valid=False,
                reason=f"run printed no {', '.join(missing)} (it printed: {', '.join(stats)})",
            ),
            result,
            curve,
        )
    return Executed(Run(config=dict(config), stats=stats), result, curve)


def _fresh(directory: Path, source: Path | None) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    if source is not None:
        shutil.copytree(source, directory, symlinks=True)
    else:
        directory.mkdir(parents=True)


def _write_config(directory: Path, config: Mapping[str, Any]) -> None:
    try:
        text = json.dumps(dict(config), indent=2, sort_keys=True, default=str)
    except (TypeError, ValueError) as e:
        raise BenchError(f"the merged config cannot be written as JSON: {e}") from e
    (directory / CONFIG_FILE).write_text(text + "\n", encoding="utf-8")


def _env(directory: Path) -> dict[str, str]:
    return {"TUNA_CONFIG": str(directory / CONFIG_FILE)}


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _tail(text: str) -> str:
    text = text.strip()
    if not text:
        return ""
    if len(text) > TAIL:
        text = "..." + text[-TAIL:]
    return f": {text}"
