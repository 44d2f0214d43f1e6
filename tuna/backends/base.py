"""The backend protocol: what "compile" and "evaluate" mean for one kernel library.

A backend answers, for its library: which solvers exist (:meth:`Backend.solvers`), which
apply to a problem (:meth:`Backend.applicability`), what a tunable solver's parameter space
is (:meth:`Backend.tuning_space`), how to build a job's candidates without a device
(:meth:`Backend.compile`, the compile phase) and how to check and time them on the device
(:meth:`Backend.evaluate`, the evaluate phase).

Backends never touch the database. The worker hands them a :class:`JobWork` built from the
database (the problem, the session, what the compile phase produced) and records the
outcome they return in one fenced transaction: a :class:`CompileOutcome` becomes
``kernel_cache`` rows (content-addressed) linked from the job plus an opaque payload kept
for the evaluate phase; an :class:`EvalOutcome` becomes a ``perf_db`` row (the best
parameters) and/or a ``find_db`` row (time, workspace, algorithm), linked to the kernel of
the chosen solution where the backend names it.
"""

from __future__ import annotations

import abc
import datetime as dt
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from tuna.problems.conv import ConvProblem


@dataclass(frozen=True)
class SolverInfo:
    """A solver as its backend knows it; ``numeric_id`` is the library's id where it has one."""

    name: str
    tunable: bool = False
    numeric_id: int | None = None
    algorithm: str | None = None


RUNTIMES = ("HIP", "OpenCL")
"""MIOpen's GPU runtimes, as its find db names carry them (an export's ``.HIP.``/``.OpenCL.``)."""


@dataclass(frozen=True)
class SessionInfo:
    """A tuning session as everyone outside the database sees it: the fields of its row.

    Target, library build and environment are what a backend uses; the image, label,
    ticket, fingerprint and creation time are bookkeeping (``tuna.sessions`` loads it).
    """

    id: int
    arch: str
    num_cu: int
    backend: str
    library_version: str | None = None
    library_commit: str | None = None
    toolchain: str | None = None
    docker_image: str | None = None
    docker_digest: str | None = None
    label: str | None = None
    ticket: str | None = None
    environment: Mapping[str, Any] = field(default_factory=dict)
    user_platform: Mapping[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    created: dt.datetime | None = None
    runtime: str | None = None  # MIOpen's GPU runtime, HIP or OpenCL; None: HIP, its default
    history_rules: Mapping[str, Any] = field(default_factory=dict)
    retired: dt.datetime | None = None
    retired_reason: str | None = None
    # load_jobs' strategy when none is given (tuna.searches.strategy); empty: perf jobs
    default_strategy: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class KernelBinary:
    """A compiled kernel: name, build arguments and the (uncompressed) code object bytes."""

    name: str
    args: str
    binary: bytes


@dataclass(frozen=True)
class Measurement:
    """One candidate timed: a ``measurement`` row (the worker adds where and for whom).

    ``params`` is the candidate's parameter string as a perf-db row holds it (``""``: the
    solver has none). ``valid`` means it gave the right result and ``time_ms`` is its
    time; otherwise ``reason`` says what happened (``verification failed``, ``crashed``,
    ``timed out``...) and ``time_ms`` is None. A valid one may have a ``reason`` too, a
    note on how it was timed (``raced``). ``strategy`` names what proposed it and
    ``budget`` how many candidates of this problem that strategy was allowed (a search's
    ``--budget``; None: not said): the effort counts keep the largest per session,
    problem, solver, platform, day and strategy (``tuna history effort``).
    """

    params: str
    time_ms: float | None
    valid: bool
    reason: str | None = None
    strategy: str | None = None
    budget: int | None = None


Checkpoint = Callable[[Sequence[Measurement]], bool]


@dataclass(frozen=True)
class JobWork:
    """Everything a backend needs for one job's phase, taken from the database.

    ``attempt`` is the job's fence for this claim (a backend may use it to name scratch
    directories uniquely). In the evaluate phase, ``kernels`` and ``payload`` are what the
    job's compile phase produced; in the compile phase they are empty.

    ``measured`` (evaluate phase) holds what was measured before for this problem and
    solver in this session on this platform: a resumed job (its worker was killed, its
    time budget ran out) must not time those candidates again, only reuse them.
    ``candidates``, when set, are the tunable parameters to build and time (a search
    strategy's round, :mod:`tuna.searches.strategy`) instead of the backend's own choice;
    ``strategy`` names what proposed them and ``budget`` how many measurements it may
    spend on the problem (the measurement rows and effort counts say both), and ``choose``
    False means the job only measures them: no perf-db or find-db row (a round's best is
    not the search's winner; its final job, ``choose`` True, writes those).
    ``checkpoint``, when set, saves measurements taken so far (fenced by the job's lease):
    a backend that times many candidates calls it now and then with the new ones, so
    that a worker killed midway loses little. It returns False once the job is no
    longer held (the backend may stop: nothing more it does will be recorded).
    """

    job_id: int
    attempt: int
    phase: str
    session: SessionInfo
    config_id: int
    problem: ConvProblem
    solver: str
    step: str
    kernels: tuple[KernelBinary, ...] = ()
    payload: str | None = None
    measured: tuple[Measurement, ...] = ()
    candidates: tuple[str, ...] | None = None
    strategy: str | None = None
    budget: int | None = None
    choose: bool = True
    checkpoint: Checkpoint | None = field(default=None, compare=False, repr=False)

    def save_progress(self, measurements: Sequence[Measurement]) -> bool:
        """:attr:`checkpoint` ``measurements`` if there is a checkpoint; True while held."""
        if self.checkpoint is None or not measurements:
            return True
        return self.checkpoint(measurements)


@dataclass(frozen=True)
class PerfResult:
    """The best parameters a tunable solver found: a ``perf_db`` row."""

    params: str


@dataclass(frozen=True)
class FindResult:
    """What one solver costs on a problem: a ``find_db`` row."""

    time_ms: float
    workspace: int
    algorithm: str
    params: str | None = None


OutcomeT = TypeVar("OutcomeT", bound="_Outcome")


@dataclass(frozen=True)
class _Outcome:
    ok: bool = True
    reason: str | None = None
    not_applicable: bool = False

    def __post_init__(self) -> None:
        if not self.ok and not self.reason:
            raise ValueError("a failed or not-applicable outcome needs a reason")
        if self.ok and self.not_applicable:
            raise ValueError("an outcome cannot be both ok and not applicable")

    @classmethod
    def failed(cls: type[OutcomeT], reason: str) -> OutcomeT:
        """The phase failed; the job is retried (or errored past its retry cap)."""
        return cls(ok=False, reason=reason)

    @classmethod
    def inapplicable(cls: type[OutcomeT], reason: str) -> OutcomeT:
        """The solver does not apply to the problem; the job ends ``not_applicable``."""
        return cls(ok=False, not_applicable=True, reason=reason)


@dataclass(frozen=True)
class CompileOutcome(_Outcome):
    """The compile phase's result: kernels to store and a payload for the evaluate phase."""

    kernels: tuple[KernelBinary, ...] = ()
    payload: str | None = None


@dataclass(frozen=True)
class EvalOutcome(_Outcome):
    """The evaluate phase's result: the perf-db and/or find-db row to upsert, and every
    candidate this evaluation timed (``measurements``; also on a failed outcome, whose
    measurements are recorded all the same). Those passed in ``JobWork.measured`` are
    not repeated here; those already saved through ``JobWork.checkpoint`` may be, and
    are written once.

    ``kernels`` says which of the job's compiled kernels the chosen solution runs (the
    winning candidate's, for a tunable solver's perf step): items of ``JobWork.kernels``,
    name, args and bytes unchanged, which is how the kernel cache finds them again. The
    kernel db exports those only. Empty means the backend does not say, and the kernel db
    then takes every kernel the job compiled.
    """

    perf: PerfResult | None = None
    find: FindResult | None = None
    kernels: tuple[KernelBinary, ...] = ()
    measurements: tuple[Measurement, ...] = ()


@dataclass(frozen=True)
class SearchWork:
    """One build or run of a search, as its job's worker hands it to the backend.

    ``step`` is ``build`` or ``run``; ``config`` the merged config (a build's: the config of
    its first run, whose build-time values are the build's); ``spec`` the search's backend
    settings (``search.spec``). A run gets ``build_dir``: its build's artifact, unpacked
    where the worker caches it (None when the search has no build step); a build gets
    there the search's sources, unpacked the same way (None when it has none). ``scratch`` is
    where the backend may make its per-job directories (None: the system's temp dir).
    """

    job_id: int
    attempt: int
    step: str
    search_id: int
    spec: Mapping[str, Any]
    config: Mapping[str, Any]
    build_dir: Any = None  # pathlib.Path of the unpacked artifact (runs)
    scratch: Any = None


@dataclass(frozen=True)
class BuildOutcome(CompileOutcome):
    """A search build's result. ``ok`` says the job is done (not retried); whether it
    built is ``built``: ``artifact`` holds the build directory as a compressed tar, else
    ``failure`` says why it did not build (its runs become invalid with that reason)."""

    artifact: bytes | None = None
    failure: str | None = None

    @property
    def built(self) -> bool:
        return self.ok and self.failure is None and self.artifact is not None


@dataclass(frozen=True)
class RunOutcome(EvalOutcome):
    """A search run's result: the stats it printed, and whether the Run counts.

    ``ok`` says the job is done; an invalid Run (non-zero exit, timeout, crash, missing
    stats) is ``valid=False`` with its ``failure``, recorded as such, not retried.
    """

    stats: Mapping[str, Any] = field(default_factory=dict)
    valid: bool = True
    failure: str | None = None


Outcome = CompileOutcome | EvalOutcome


class Owns(str, enum.Enum):
    """What one evaluation (a timing) must have to itself, so that timings don't disturb
    each other. Compilation never needs anything exclusively: it stays parallel.

    * ``NOTHING``: evaluations may overlap freely (a backend that times nothing).
    * ``DEVICE``: the worker's device (a GPU, ``--gpu``); evaluations on different devices
      overlap, two on one device take turns.
    * ``MACHINE``: the whole machine (a CPU backend: every core); one evaluation at a
      time per machine, whatever the number of evaluation workers.
    """

    NOTHING = "nothing"
    DEVICE = "device"
    MACHINE = "machine"


class Backend(abc.ABC):
    """One kernel library's meaning of "compile" and "evaluate".

    Contract:

    * Instances are created by :func:`tuna.backends.get_backend` with no arguments and
      used by one worker process, one job at a time; they may cache across jobs.
    * :meth:`compile` and :meth:`evaluate` report an ordinary failure (a kernel that does
      not build, a wrong result) as ``Outcome.failed(reason)`` and a solver that turns out
      not to apply as ``Outcome.inapplicable(reason)``. An exception they raise is also
      recorded as a failure of the job, with the exception as its reason.
    * They must be safe to repeat: a job whose worker died is run again, possibly on
      another host, and only the write of the run that still holds the lease counts.
    * :meth:`compile` must not need the device; :meth:`evaluate` may, and then gets what
      :attr:`evaluation_owns` declares to itself (the worker holds a lock around it).
    """

    name: ClassVar[str]
    evaluation_owns: ClassVar[Owns] = Owns.NOTHING
    """What an evaluation must own (:class:`Owns`); the worker takes it before
    :meth:`evaluate` and gives it back after, so timings never overlap where they would
    disturb each other."""

    @abc.abstractmethod
    def solvers(self) -> list[SolverInfo]:
        """Every solver of the library, tunable or not."""

    @abc.abstractmethod
    def applicability(self, problem: ConvProblem, solver: str) -> str | None:
        """None when ``solver`` applies to ``problem``, otherwise the reason it does not."""

    def tuning_space(self, problem: ConvProblem, solver: str) -> list[str]:
        """The candidate parameter strings of a tunable solver (empty for the others)."""
        return []

    @abc.abstractmethod
    def compile(self, work: JobWork) -> CompileOutcome:
        """Build the job's kernels (every candidate, for a tunable solver's perf step)."""

    @abc.abstractmethod
    def evaluate(self, work: JobWork) -> EvalOutcome:
        """Check and time the job's compiled kernels; pick the best parameters."""

    # -- Searches (issue #15): a backend that runs benchmarks overrides these -------------

    def build(self, work: SearchWork) -> BuildOutcome:
        """Build one build tuple of a search (compile phase); see :class:`BuildOutcome`."""
        return BuildOutcome.failed(f"backend {self.name} does not run searches")

    def run(self, work: SearchWork) -> RunOutcome:
        """Run one point of a search on its build (evaluate phase); see :class:`RunOutcome`."""
        return RunOutcome.failed(f"backend {self.name} does not run searches")

    # -- What a worker container of this backend needs (go_fish on a fleet) -------------

    def container_args(self, phase: str, gpu: int | None) -> list[str]:
        """Extra ``docker run`` arguments for a worker of ``phase`` using ``gpu``.

        Device flags belong here (e.g. ``--device /dev/kfd``); never ``--privileged``. A
        CPU backend needs none.
        """
        return []

    def worker_environment(
        self, session: SessionInfo, phase: str, gpu: int | None, scratch: str
    ) -> dict[str, str]:
        """Environment for one worker process of ``phase`` (e.g. per-worker cache paths
        under ``scratch``, a directory private to that worker, and device selection)."""
        return {}
