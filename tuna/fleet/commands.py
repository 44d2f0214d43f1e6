"""The command lines go_fish starts workers with: pure functions of values, nothing run here.

One builder per command, used by every launcher: :func:`worker_argv` (``tuna worker`` for
one phase of a session, on this machine or in a container) and :func:`docker_run_argv`
(the ``docker run`` that starts a worker container on a machine). Secrets never appear in
either: the database URL reaches a worker through its environment (local) or a mounted
file (containers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tuna.db.enums import JobStep
from tuna.worker.settings import WorkerSettings

CONTAINER_DB_URL = "/run/tuna/db_url"
CONTAINER_SCRATCH = "/scratch"
CONTAINER_LOCK_DIR = "/run/tuna/locks"
LABEL_PREFIX = "tuna."


def worker_argv(
    session: int,
    phase: str,
    *,
    program: Sequence[str] = ("tuna",),
    machine: int | None = None,
    gpu: int | None = None,
    settings: WorkerSettings | None = None,
    then: Sequence[tuple[int, str]] = (),
    step: JobStep | None = None,
) -> list[str]:
    """``tuna worker`` for one phase of a session, exiting once the phase is drained.

    ``program`` is how to call ``tuna`` where the worker runs (in a container ``tuna``;
    on this machine ``python -m tuna.cli``). ``-v`` gives the log a line per job; the
    ``settings`` go_fish hands on follow (:meth:`WorkerSettings.argv`). ``then`` are
    (session, phase) stages the same process works next (:mod:`tuna.worker.stages`);
    ``step`` the one step its evaluation takes (go_fish's ``--run_perf``: ``Task.step``).
    """
    argv = [*program, "worker", "-v", "--session", str(session), "--phase", phase, "--burst"]
    for then_session, then_phase in then:
        argv += ["--then", f"{then_session}:{then_phase}"]
    if machine is not None:
        argv += ["--machine", str(machine)]
    if gpu is not None:
        argv += ["--gpu", str(gpu)]
    if step is not None:
        argv += ["--step", step.value]
    return argv + (settings or WorkerSettings()).argv()


def docker_run_argv(
    *,
    docker: Sequence[str],
    name: str,
    labels: Mapping[str, str],
    run_dir: str,
    worker: str,
    lock_dir: str,
    env: Mapping[str, str],
    device_args: Sequence[str],
    run_args: Sequence[str],
    image: str,
    command: Sequence[str],
) -> list[str]:
    """``docker run -d`` of one worker container.

    The container sees the host's network, the run's ``db_url`` file read-only at
    :data:`CONTAINER_DB_URL` (named by ``TUNA_DB_URL_FILE``), its own scratch directory
    ``<run_dir>/<worker>`` at :data:`CONTAINER_SCRATCH`, and the host's ``lock_dir`` at
    :data:`CONTAINER_LOCK_DIR` (named by ``TUNA_LOCK_DIR``): every container on the host
    takes its evaluation locks (:mod:`tuna.worker.exclusive`) in the same directory, so two
    evaluations that must own the machine or one GPU never time at once. ``labels`` are written as
    ``tuna.<key>=<value>`` (how go_fish finds its containers again); ``device_args`` are the
    backend's device flags, ``run_args`` the machine's extra arguments. Never privileged.
    """
    argv = [*docker, "run", "-d", "--name", name]
    for key, value in labels.items():
        argv += ["--label", f"{LABEL_PREFIX}{key}={value}"]
    argv += [
        "--network",
        "host",
        "-v",
        f"{run_dir}/db_url:{CONTAINER_DB_URL}:ro",
        "-v",
        f"{run_dir}/{worker}:{CONTAINER_SCRATCH}",
        "-v",
        f"{lock_dir}:{CONTAINER_LOCK_DIR}",
    ]
    full_env = {**env, "TUNA_DB_URL_FILE": CONTAINER_DB_URL, "TUNA_LOCK_DIR": CONTAINER_LOCK_DIR}
    for key, value in sorted(full_env.items()):
        argv += ["-e", f"{key}={value}"]
    return [*argv, *device_args, *run_args, image, *command]
