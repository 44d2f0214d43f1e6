"""Running fin: ``<fin> -i input.json -o output.json`` in a scratch directory, with a time limit.

Everything that can go wrong on the way is a :class:`FinError` whose message says what and
where: fin not found, killed by the time limit, a non-zero exit status (with the end of its
stderr), no output file, an output that is not JSON or not shaped as fin writes it. Callers
turn it into a failed outcome; it never escapes as a traceback.

fin's stderr (MIOpen's log) goes to ``fin.log`` beside the input and output files.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuna.backends.miopen.results import FinOutputError, job_results
from tuna.errors import BackendError

log = logging.getLogger(__name__)

DEFAULT_FIN = "/opt/rocm/bin/fin"
_TAIL = 600  # characters of fin's stderr kept in a failure reason


class FinError(BackendError):
    """Raised when fin did not produce a usable output; the message names the step, the
    command and the files."""


class FinNotStartedError(FinError):
    """Raised when fin cannot be started at all (``FIN_PATH`` is wrong): no input helps."""


@dataclass(frozen=True)
class FinCommand:
    """How to start fin: ``argv`` before ``-i ... -o ...``.

    ``FIN_PATH`` is a path to the fin binary, or (when no such file exists) a command line
    split like a shell would, e.g. ``python -m tuna.backends.miopen.fake_fin``.
    """

    argv: tuple[str, ...]

    @classmethod
    def from_setting(cls, value: str | None) -> FinCommand:
        text = (value or "").strip() or DEFAULT_FIN
        if os.path.exists(text):
            return cls((text,))
        try:
            parts = shlex.split(text)
        except ValueError as e:
            raise FinError(f"FIN_PATH {text!r} is neither a file nor a command line: {e}") from e
        return cls(tuple(parts) or (DEFAULT_FIN,))

    def __str__(self) -> str:
        return shlex.join(self.argv)


def run_fin(
    fin: FinCommand,
    jobs: Sequence[Mapping[str, Any]],
    *,
    workdir: Path,
    env: Mapping[str, str],
    timeout_s: float,
    what: str,
) -> list[dict[str, Any]]:
    """Run fin on ``jobs`` in ``workdir``; the per-job objects of its output, in input order.

    ``what`` names the work in messages (e.g. ``"miopen_find_compile of job 7"``).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    in_path, out_path, log_path = (workdir / n for n in ("input.json", "output.json", "fin.log"))
    in_path.write_text(json.dumps(list(jobs), indent=2))
    out_path.unlink(missing_ok=True)
    argv = [*fin.argv, "-i", str(in_path), "-o", str(out_path)]
    started = time.monotonic()
    with log_path.open("wb") as err:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=workdir,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a time-out kills fin and anything it started
            )
        except OSError as e:
            raise FinNotStartedError(
                f"{what}: cannot start fin `{fin}`: {e.strerror or e} (set FIN_PATH in the "
                "session environment to the fin binary)"
            ) from e
        try:
            status = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise FinError(
                f"{what}: fin timed out after {timeout_s:g} s and was killed (FIN_TIMEOUT_S); "
                f"input {in_path}, log {log_path}"
            ) from None
        except BaseException:  # the worker's time limit, a second Ctrl-C: fin must not linger
            _kill(proc)
            raise
    log.debug("%s: fin exited %d after %.1f s", what, status, time.monotonic() - started)
    if status != 0:
        raise FinError(
            f"{what}: fin {_status(status)}; input {in_path}; log {log_path}: "
            f"{_tail(log_path) or '(empty)'}"
        )
    if not out_path.is_file():
        raise FinError(f"{what}: fin exited 0 but wrote no output file {out_path}; log {log_path}")
    try:
        data = json.loads(out_path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise FinError(f"{what}: fin's output {out_path} is not JSON: {e}") from e
    try:
        results = job_results(data, path=str(out_path))
    except FinOutputError as e:
        raise FinError(f"{what}: {e}") from e
    if len(results) != len(jobs):
        raise FinError(
            f"{what}: fin's output {out_path} has {len(results)} job result(s) for "
            f"{len(jobs)} input job(s)"
        )
    return results


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _status(status: int) -> str:
    if status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4 * _TAIL))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    text = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return text[-_TAIL:]
