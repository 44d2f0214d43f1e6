"""Evaluations own what their backend declares (a machine-wide lock); compiles stay parallel."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.seed import seed
from tuna.backends.base import CompileOutcome, EvalOutcome, JobWork, Owns
from tuna.backends.noop import NoopBackend
from tuna.worker import run_worker
from tuna.worker.exclusive import lock_name, owning

pytestmark = pytest.mark.usefixtures("own_lock_dir")

DEADLINE_S = 20.0


@dataclass
class _Watch:
    """Counts the backend calls running at once; a barrier proves two can overlap."""

    parties: int
    inside: int = 0
    most: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.barrier = threading.Barrier(self.parties, timeout=DEADLINE_S)

    def enter(self, meet: str) -> None:
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        if meet == "must":
            self.barrier.wait()  # raises BrokenBarrierError if the other never comes
        elif meet == "try":  # give the other worker time to come in, if it can
            deadline = time.monotonic() + 0.3
            while self.inside < self.parties and time.monotonic() < deadline:
                time.sleep(0.005)

    def leave(self) -> None:
        with self.lock:
            self.inside -= 1


class _Watched(NoopBackend):
    def __init__(self, owns: Owns, watch: _Watch, **meet_in: str) -> None:
        super().__init__(sleep_s=0.02)
        self.evaluation_owns = owns  # type: ignore[misc]
        self.watch, self.meet_in = watch, meet_in

    def compile(self, work: JobWork) -> CompileOutcome:
        self.watch.enter(self.meet_in.get("compile", ""))
        try:
            return super().compile(work)
        finally:
            self.watch.leave()

    def evaluate(self, work: JobWork) -> EvalOutcome:
        self.watch.enter(self.meet_in.get("eval", ""))
        try:
            return super().evaluate(work)
        finally:
            self.watch.leave()


def _two_workers(db, session: int, phase: str, backends: list[NoopBackend]) -> list:
    reports: list = [None, None]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            reports[i] = run_worker(
                db,
                session,
                phase,
                backend=backends[i],
                burst=True,
                handle_signals=False,
                idle_sleep=0.01,
                max_jobs=3,
            )
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S * 3)
        assert not t.is_alive(), "a worker did not finish"
    if errors:
        raise errors[0]
    return reports


def test_evaluations_of_a_machine_owning_backend_never_overlap_and_compiles_do(lite):
    sd = seed(lite, configs=3, solvers=["NoopDirect", "NoopTunable"])
    compile_watch = _Watch(2)
    _two_workers(
        lite,
        sd.session,
        "compile",
        [_Watched(Owns.MACHINE, compile_watch, compile="must") for _ in range(2)],
    )
    assert compile_watch.most == 2  # the two compiles met inside the backend

    eval_watch = _Watch(2)
    reports = _two_workers(
        lite,
        sd.session,
        "eval",
        [_Watched(Owns.MACHINE, eval_watch, eval="try") for _ in range(2)],
    )
    assert sum(r.done for r in reports) == 6
    assert eval_watch.most == 1
    assert sum(r.waited_seconds for r in reports) > 0  # one of them did wait its turn


def test_evaluations_that_own_nothing_may_overlap(lite):
    sd = seed(lite, configs=2, solvers=["NoopDirect"])
    run_worker(lite, sd.session, "compile", backend=NoopBackend(), burst=True,
               handle_signals=False)  # fmt: skip
    watch = _Watch(2)
    _two_workers(
        lite, sd.session, "eval", [_Watched(Owns.NOTHING, watch, eval="must") for _ in range(2)]
    )
    assert watch.most == 2


def test_device_locks_are_per_gpu_and_the_machine_lock_is_one():
    assert lock_name(Owns.NOTHING, 0) is None
    assert lock_name(Owns.MACHINE, 0) == lock_name(Owns.MACHINE, 1) == "evaluate-machine"
    assert lock_name(Owns.DEVICE, 0) != lock_name(Owns.DEVICE, 1)


def test_a_machine_lock_held_elsewhere_is_waited_for(tmp_path):
    held = threading.Event()
    release = threading.Event()

    def holder() -> None:
        with owning(Owns.MACHINE, None):
            held.set()
            release.wait(DEADLINE_S)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(DEADLINE_S)
    threading.Timer(0.2, release.set).start()
    with owning(Owns.MACHINE, None) as waited:
        assert release.is_set()
    t.join(DEADLINE_S)
    assert waited >= 0.1


NOBODY = 65534


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_a_lock_file_another_user_created_is_still_a_lock(monkeypatch):
    """A container's worker (root) creates the lock file; a worker of another user on the
    same machine cannot open it for writing, and still takes the same lock."""
    locks = Path(tempfile.mkdtemp(prefix="tuna-test-locks-"))  # not tmp_path: that is 0700
    try:
        locks.chmod(0o1777)
        monkeypatch.setenv("TUNA_LOCK_DIR", str(locks))
        with owning(Owns.MACHINE, None):
            pass
        lock_file = next(locks.iterdir())
        lock_file.chmod(0o644)
        os.setegid(NOBODY)
        os.seteuid(NOBODY)
        try:
            with pytest.raises(PermissionError):
                os.open(lock_file, os.O_RDWR)
            with owning(Owns.MACHINE, None):
                os.seteuid(0)
                fd = os.open(lock_file, os.O_RDONLY)
                try:
                    with pytest.raises(BlockingIOError):  # the other user's lock holds
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                finally:
                    os.close(fd)
        finally:
            os.seteuid(0)
            os.setegid(0)
    finally:
        shutil.rmtree(locks, ignore_errors=True)
