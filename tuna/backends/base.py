"""The backend contract: what "compile" and "evaluate" mean for one kernel library.

A backend answers, for its library: which solvers exist (:meth:`Backend.solvers`), which
apply to a problem (:meth:`Backend.applicability`), what a tunable solver's parameter space
is (:meth:`Backend.tuning_space`, a :class:`TuningSpace` with the features a cost model
reads), how to build a job's candidates without a device (:meth:`Backend.compile`, the
compile phase), how to check and time them on the device (:meth:`Backend.evaluate`, the
evaluate phase) and what that timing must own (:meth:`Backend.owns`). A backend that runs
searches over benchmarks also checks a search's settings (:meth:`Backend.check_spec`), says
whether its runs need a build (:meth:`Backend.needs_build`) and builds and runs them.

This module is the whole contract: services see a backend only through it and the registry
(:mod:`tuna.backends`), never by importing one, so a new backend is a new folder under
``tuna/backends/`` and one line of the registry.

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
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from tuna.errors import BackendError
from tuna.problems.conv import ConvProblem


@dataclass(frozen=True)
class SolverInfo:
    """A solver as its backend knows it; ``numeric_id`` is the library's id where it has one."""

    name: str
    tunable: bool = False
    numeric_id: int | None = None
    algorithm: str | None = None


@dataclass(frozen=True)
class TuningSpace:
    """A tunable solver's parameter space on one problem: what a search strategy searches.

    ``names`` are the parameters, in the order a candidate writes its values;
    ``candidates`` every valid candidate as a perf-db row holds its parameters, its integer
    values comma-separated in ``names``' order (``"4,1,8"``), distinct and in a fixed
    order; ``features`` the problem's numbers a cost model reads, by name
    (:meth:`Backend.problem_features`). Empty (no candidates): nothing to search.
    """

    names: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()
    features: Mapping[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.candidates)


RUNTIMES = ("HIP", "OpenCL")
"""MIOpen's GPU runtimes, as its find db names carry them (an export's ``.HIP.``/``.OpenCL.``)."""


@dataclass(frozen=True)
class SessionSpec:
    """What a tuning session records: its target, library build and environment (what a
    backend uses), and image, label, ticket, history rules and defaults (bookkeeping).

    A new session is created from one (``tuna.sessions.create_session``); a recorded one is
    a :class:`SessionInfo`.
    """

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
    runtime: str | None = None  # MIOpen's GPU runtime, HIP or OpenCL; None: HIP, its default
    # Which history counts (``HistoryRules.to_json()``); not part of the fingerprint.
    history_rules: Mapping[str, Any] = field(default_factory=dict)
    # Added to the platform of every measurement of the session (not to its fingerprint:
    # which platforms count as the same is for the compatibility rules to say).
    user_platform: Mapping[str, Any] = field(default_factory=dict)
    # load_jobs' strategy when none is given (tuna.searches.strategy); empty: perf jobs
    default_strategy: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SessionInfo(SessionSpec):
    """A recorded tuning session, as everyone outside the database sees it: its identity
    (id, fingerprint, creation, retirement) on top of the recorded fields
    (``tuna.sessions`` loads it)."""

    id: int
    fingerprint: str = ""
    created: dt.datetime | None = None
    retired: dt.datetime | None = None
    retired_reason: str | None = None


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


#: A candidate's valid timings further apart than this (slowest over fastest) mean the
#: machine was disturbed while it timed: a backend that re-times its finalists says so, and
#: wherever a stored winner is shown it is marked unstable (:mod:`tuna.library.stability`).
UNSTABLE_SPREAD = 1.25

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
    ``report``, set on a run of a search with a pruner, takes each intermediate value
    (step, value) as the run reports it, stores it with the run and answers why to stop
    the run (its pruner's verdict), or None to go on.
    """

    job_id: int
    attempt: int
    step: str
    search_id: int
    spec: Mapping[str, Any]
    config: Mapping[str, Any]
    build_dir: Any = None  # pathlib.Path of the unpacked artifact (runs)
    scratch: Any = None
    report: Callable[[int, float], str | None] | None = field(
        default=None, compare=False, repr=False
    )


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
    ``intermediate`` holds the values it reported by step; ``pruned`` says its search's
    pruner stopped it (``valid=False``, ``failure`` the pruner's reason).
    """

    stats: Mapping[str, Any] = field(default_factory=dict)
    valid: bool = True
    failure: str | None = None
    intermediate: Mapping[int, float] = field(default_factory=dict)
    pruned: bool = False


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
      :meth:`owns` declares to itself (the worker holds a lock around it).
    * A time limit is enforced from outside: the worker may kill the process running
      :meth:`compile`, :meth:`evaluate`, :meth:`build` or :meth:`run` (a backend that
      runs native code keeps nothing it needs only in that process).
    * A backend that declares spaces (:attr:`declares_spaces`) can be searched by every
      strategy (:mod:`tuna.searches.strategy`): :meth:`tuning_space` gives each tunable
      solver's candidates; :meth:`compile` builds ``JobWork.candidates`` when they are
      given instead of its own choice; :meth:`evaluate` times them, reusing what
      ``JobWork.measured`` holds, reports every candidate timed in
      ``EvalOutcome.measurements`` (with ``JobWork.strategy`` and ``budget``) and, when
      ``JobWork.choose`` is False, writes no perf-db or find-db row.
    """

    name: ClassVar[str]
    evaluation_owns: ClassVar[Owns] = Owns.NOTHING
    """What an evaluation must own (:class:`Owns`) unless :meth:`owns` says otherwise."""
    declares_spaces: ClassVar[bool] = False
    """True when :meth:`tuning_space` gives the space of every tunable solver (see the
    contract above): a strategy search then works on this backend."""

    @abc.abstractmethod
    def solvers(self) -> list[SolverInfo]:
        """Every solver of the library, tunable or not."""

    @abc.abstractmethod
    def applicability(self, problem: ConvProblem, solver: str) -> str | None:
        """None when ``solver`` applies to ``problem``, otherwise the reason it does not."""

    @abc.abstractmethod
    def compile(self, work: JobWork) -> CompileOutcome:
        """Build the job's kernels (every candidate, for a tunable solver's perf step)."""

    @abc.abstractmethod
    def evaluate(self, work: JobWork) -> EvalOutcome:
        """Check and time the job's compiled kernels; pick the best parameters."""

    def owns(self, work: JobWork | SearchWork) -> Owns:
        """What the device phase of ``work`` (an :meth:`evaluate`, a search's :meth:`run`)
        must have to itself; the worker takes it before and gives it back after, so timings
        never overlap where they would disturb each other. The compile phase owns nothing."""
        return self.evaluation_owns

    # -- The tuning space of a tunable solver (search strategies, cost models) ----------

    def tuning_space(self, problem: ConvProblem, solver: str) -> TuningSpace:
        """The space of tunable ``solver`` on ``problem``, with the problem's features
        (:meth:`problem_features`); empty for a solver that is not tunable or does not
        apply."""
        return TuningSpace()

    def problem_features(self, problem: ConvProblem, solver: str, /) -> dict[str, float]:
        """The numbers of ``problem`` that decide which candidates of ``solver`` are fast,
        by name, for a cost model (which knows nothing of convolutions). None by default.
        (This and the next two take their arguments by position: a backend may bind its
        module's functions to them.)"""
        return {}

    def candidate_features(
        self, features: Mapping[str, float], params: Mapping[str, Any], /
    ) -> dict[str, float]:
        """What a candidate's parameter values mean on a problem (``features`` from
        :meth:`problem_features`), for a cost model: ratios of a parameter and a problem
        size that a tree cannot form itself. None by default."""
        return {}

    def candidate_stats(
        self, problem: ConvProblem, solver: str, params: Mapping[str, Any], /
    ) -> dict[str, float]:
        """What a candidate costs besides its time, known from its parameters without
        measuring it (e.g. threads, workspace bytes): a strategy search's runs carry them
        beside ``time_ms``, so its objectives and constraints may name them. None by
        default."""
        return {}

    def default_params(self, problem: ConvProblem, solver: str) -> str:
        """The untuned parameters of tunable ``solver`` on ``problem``, as a perf-db row
        holds them (what the library runs when nothing is tuned): a strategy search's
        baseline. ``""``: it names none (the default)."""
        return ""

    def parse_params(self, solver: str, text: str, /) -> dict[str, int]:
        """A candidate's parameter string (a perf-db row's) as values by name; raises
        ``ValueError`` saying what is wrong when it is not one of ``solver``'s. A string of
        an older space may be read into today's names."""
        raise ValueError(f"backend {self.name} reads no parameters of {solver}")

    # -- Searches over benchmarks (issue #15): a backend that runs them overrides these ---

    def check_spec(
        self, spec: Mapping[str, Any], parameters: Sequence[str], runtime: Collection[str]
    ) -> None:
        """Raise a :class:`~tuna.errors.BackendError` saying what is wrong unless ``spec``
        (a search's backend settings, ``search.spec``) is one this backend runs, for
        configs with ``parameters``; ``runtime`` are those that change per run without a
        rebuild. Nothing is stored before this passes."""
        raise BackendError(
            f"backend {self.name!r} runs no searches over benchmarks; name a backend that "
            "does (tuna search create --backend)"
        )

    def needs_build(self, spec: Mapping[str, Any]) -> bool:
        """True when a search's runs need a build job first (its artifact reaches each run
        as ``SearchWork.build_dir``)."""
        return False

    def runtime_only(self, spec: Mapping[str, Any]) -> bool:
        """True when every parameter of a search with ``spec`` changes per run without a
        rebuild, whatever its parameter file says (one build serves every point). False:
        the file's ``META_get_no_rebuild_params`` decides."""
        return False

    def search_sources(self, spec: Mapping[str, Any]) -> bytes | None:
        """The sources a search's builds start from, packed
        (:func:`tuna.backends.artifact.pack`) to reach any build machine through the
        database; a build gets them unpacked as ``SearchWork.build_dir``. None: none."""
        return None

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

    # -- The machine an evaluation runs on ------------------------------------------------

    def evaluation_blocked(self, session: SessionInfo) -> str | None:
        """Why this machine cannot run ``session``'s evaluate phase at all (no driver, no
        device, another device than the session targets), in one line; None when it can.
        Asked before an evaluation worker claims anything (it then refuses to start, and
        go_fish to start it), so the jobs stay compiled for a machine that can."""
        return None

    def platform_facts(self, session: SessionInfo) -> dict[str, Any]:
        """What this backend knows of the device its evaluations run on (a GPU, its driver,
        the compiler), added under the backend's name to the platform an evaluation worker
        records, so that history rules can select on it (``cuda.gpu.name=...``). None by
        default."""
        return {}
