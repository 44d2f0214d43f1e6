"""``tpe``, ``cmaes``, ``gp``, ``nsga2``: Optuna's samplers behind Tuna's rounds (issue #28).

Optuna keeps well-tested implementations of these samplers; Tuna uses them as a dependency
(``pip install 'tuna[optuna]'``; ``gp`` also needs PyTorch and SciPy: ``tuna[gp]``)
instead of writing them again. Each search keeps an **in-memory Optuna study** of its own:

* a parameter of the space is one Optuna distribution over the **positions** of its sorted
  values (the axis :class:`~tuna.searchers.strategies.base.CandidateSpace` defines, which
  hill climbing and the genetic search step along): an ``IntDistribution`` when its values
  are numbers (cpuconv's ``MR = 1, 2, 4, 6, 8`` are positions 0-4, so neighbours stay
  neighbours whatever their spacing), a ``CategoricalDistribution`` otherwise; a parameter
  with one value is left out;
* a round of N candidates is N ``study.ask()`` before any result (the N parallel workers of
  a round); TPE is made with ``constant_liar`` so that the N do not pile onto one point;
* a proposal that is not a candidate (the space has holes: cpuconv's constraints) or is one
  already taken this round is **repaired** to the nearest free candidate (axis steps); the
  trial is told the value of the candidate measured for it, so each sampler's own
  bookkeeping (CMA-ES's and NSGA-II's generations) stays whole. A proposal of a candidate
  measured earlier is told that measurement at once (nothing measured twice) and asked
  again, :data:`ASKS` times at most, then repaired;
* a candidate that failed (did not verify, did not run) is told as a failed trial: no
  sampler learns a value from it;
* the value told is the objective's score (what the base minimises: the stat, or its
  negative for a stat to maximise).

Seeded: each sampler gets the strategy's seed, so the same Runs give the same proposals,
and a search resumed after a restart replays its stored runs into a fresh study
(:mod:`tuna.searchers.replay`) to the same place.

Several objectives (a strategy search's ``--objective time_ms:min --objective threads:min``):
the study has one direction per objective and each trial is told every objective's value,
so ``nsga2`` (NSGA-II) and ``tpe`` search for the Pareto front; ``cmaes`` optimises one
objective and is refused. With one objective, ``nsga2`` is an elitist genetic search.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from tuna.searchers.errors import SearchError
from tuna.searchers.run import Run
from tuna.searchers.strategies.base import CandidateSpace, Plan, RoundSearcher

EXTRA = "optuna"
GP_EXTRA = "gp"
#: Asks per slot of a round while the sampler proposes candidates measured before.
ASKS = 4
SAMPLED = ("tpe", "cmaes", "gp", "nsga2")


class SamplerLibraryMissing(SearchError):
    """Raised when Optuna (or, for ``gp``, PyTorch or SciPy) is not installed."""


def optuna_module() -> Any:
    """The ``optuna`` module, quiet (its INFO line per trial is not Tuna's log), or
    :class:`SamplerLibraryMissing` naming the extra to install."""
    try:
        import optuna
    except ImportError as e:
        raise SamplerLibraryMissing(
            f"the tpe, cmaes, gp and nsga2 strategies need Optuna, which is not installed "
            f"({e}); install Tuna's '{EXTRA}' extra: pip install 'tuna[{EXTRA}]' (or pick "
            "another strategy)"
        ) from e
    _quiet(optuna)
    return optuna


@functools.cache
def _quiet(optuna: Any) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def check_sampler(name: str) -> None:
    """Raise :class:`SamplerLibraryMissing` when strategy ``name`` cannot run here: Optuna
    for all four, and the libraries of Optuna's Gaussian process (PyTorch, SciPy) for gp."""
    optuna_module()
    if name == "cmaes":
        _need("cmaes", "the cmaes strategy needs the cmaes package", EXTRA)
    if name == "gp":
        for module in ("torch", "scipy"):
            _need(module, "the gp strategy needs PyTorch and SciPy (Optuna's Gaussian process)",
                  GP_EXTRA)  # fmt: skip


def _need(module: str, what: str, extra: str) -> None:
    try:
        __import__(module)
    except ImportError as e:
        raise SamplerLibraryMissing(
            f"{what}, and {module} is not installed ({e}); install Tuna's '{extra}' extra: "
            f"pip install 'tuna[{extra}]' (or pick another strategy)"
        ) from e


def check_objectives(name: str, count: int) -> None:
    """Refuse several objectives to a sampler that optimises one (``cmaes``)."""
    if name == "cmaes" and count > 1:
        raise SearchError(
            f"strategy 'cmaes' optimises one objective, and this search has {count}; use "
            "nsga2 or tpe for a Pareto front"
        )


def make_sampler(name: str, *, seed: int, round_size: int, population: int | None = None) -> Any:
    """Optuna's sampler of strategy ``name``, seeded: TPE multivariate (the parameters'
    joint density, not one at a time) with a constant liar for a round's pending trials;
    CMA-ES with margin (for integer axes: it keeps the search from collapsing onto one value
    too early); the Gaussian process, on one PyTorch thread (:func:`_one_thread_gp`);
    NSGA-II with generations of ``population`` trials (default: two rounds)."""
    samplers = optuna_module().samplers
    if name == "tpe":
        return samplers.TPESampler(seed=seed, multivariate=True, constant_liar=True)
    if name == "cmaes":
        return samplers.CmaEsSampler(seed=seed, with_margin=True, warn_independent_sampling=False)
    if name == "gp":
        return _one_thread_gp(samplers.GPSampler)(seed=seed, warn_independent_sampling=False)
    if name == "nsga2":
        size = population or 2 * round_size
        if size < 2:
            raise SearchError(f"nsga2: population must be at least 2, not {size}")
        return samplers.NSGAIISampler(seed=seed, population_size=size)
    raise SearchError(f"{name!r} is not one of Optuna's samplers ({', '.join(SAMPLED)})")


@functools.cache
def _one_thread_gp(gp_sampler: type) -> type:
    """Optuna's GPSampler whose proposals (the Gaussian process's fit and the acquisition's
    optimisation, all of its PyTorch work) run on one PyTorch thread, the thread count before
    put back after each. Its matrices are a few hundred trials at most, where a second
    thread only costs: on this project's 2-core machine under load, one gp search of 24
    trials took 5-14 s of CPU with PyTorch's default 2 threads against 0.5-0.8 s on one
    (bench/search.md's gp runs already set OMP_NUM_THREADS=1). Workers share the machine, as
    the cost model's one thread says too."""
    import torch

    class OneThreadGPSampler(gp_sampler):
        def sample_relative(self, *args: Any, **kwargs: Any) -> Any:
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                return super().sample_relative(*args, **kwargs)
            finally:
                torch.set_num_threads(threads)

    return OneThreadGPSampler


class SampledSearch(RoundSearcher):
    """An Optuna sampler over the candidates; see the module docstring. Subclasses name
    which sampler (:func:`make_sampler`)."""

    name = "sampled"

    def __init__(self, space: CandidateSpace, **kwargs: Any) -> None:
        super().__init__(space, **kwargs)
        check_sampler(self.name)  # a missing library is an error now, not in the first round
        check_objectives(self.name, len(self.objective.targets))
        self._optuna = optuna_module()
        dist = self._optuna.distributions
        self._axes: dict[str, Any] = {}
        for n in space.names:
            values = space.values[n]
            if len(values) < 2:
                continue
            if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                self._axes[n] = dist.IntDistribution(0, len(values) - 1)
            else:
                self._axes[n] = dist.CategoricalDistribution(list(range(len(values))))
        #: Proposals the sampler made that were not free candidates, repaired to the nearest.
        self.repaired = 0

    def _sampler(self) -> Any:
        population = getattr(self, "population", None)
        return make_sampler(
            self.name, seed=self.seed, round_size=self.round_size, population=population
        )

    @property
    def several(self) -> bool:
        """Whether the study has several objectives (a Pareto front, not one best)."""
        return len(self.objective.targets) > 1

    def _reset(self) -> None:
        super()._reset()
        #: candidate index -> every objective's value (None: it did not count).
        self.vectors: dict[int, list[float] | None] = {}

    def _note(self, i: int, run: Run) -> None:
        super()._note(i, run)
        counts = self.objective.counts(run)
        self.vectors[i] = (
            [float(run.stats[t.stat]) for t in self.objective.targets] if counts else None
        )

    def _plan(self) -> Plan:
        optuna = self._optuna
        with warnings.catch_warnings():  # "experimental" notes of samplers and options
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            if self.several:  # the objectives' own directions: values are told as measured
                directions = [
                    "maximize" if t.goal == "max" else "minimize" for t in self.objective.targets
                ]
                study = optuna.create_study(directions=directions, sampler=self._sampler())
            else:  # the score: the stat, or its negative for a stat to maximise
                study = optuna.create_study(direction="minimize", sampler=self._sampler())
        #: The in-memory study of the last :meth:`rounds` (what the sampler was told).
        self.study = study
        self.repaired = 0
        while len(self.measured) < len(self.space):
            want = min(self.round_size, self.budget - len(self.measured))
            taken = set(self.measured)
            asked: list[tuple[Any, int]] = []
            for _ in range(want):
                slot = self._ask(study, taken)
                if slot is None:
                    break
                asked.append(slot)
                taken.add(slot[1])
            if not asked:
                return
            yield [i for _, i in asked]
            for trial, i in asked:
                self._tell(study, trial, i)

    def _ask(self, study: Any, taken: set[int]) -> tuple[Any, int] | None:
        """One slot of a round: a trial and the free candidate measured for it (None: no
        candidate is free)."""
        asks = 0
        while True:
            asks += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", self._optuna.exceptions.ExperimentalWarning)
                trial = study.ask(self._axes)
            positions = [trial.params.get(n, 0) for n in self.space.names]
            i = self.space.at(positions)
            if i is not None and i in self.measured and asks < ASKS:
                self._tell(study, trial, i)  # measured before: its value, and ask again
                continue
            if i is None or i in taken:
                self.repaired += 1
                i = self.space.nearest(positions, exclude=taken)
                if i is None:
                    study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
                    return None
            return trial, i

    def _tell(self, study: Any, trial: Any, i: int) -> None:
        told: Any = self.vectors.get(i) if self.several else self.measured.get(i)
        if told is None:  # failed, invalid, or cut from the round by the budget
            study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, told)


class TPESearch(SampledSearch):
    """Optuna's tree-structured Parzen estimator (:func:`make_sampler`)."""

    name = "tpe"


class CmaEsSearch(SampledSearch):
    """Optuna's CMA-ES with margin (:func:`make_sampler`)."""

    name = "cmaes"


class GPSearch(SampledSearch):
    """Optuna's Gaussian-process Bayesian optimisation (PyTorch, SciPy: ``tuna[gp]``)."""

    name = "gp"


class NSGA2Search(SampledSearch):
    """Optuna's NSGA-II: a Pareto front of the strategy's objectives (with one, an elitist
    genetic search); its generations are ``population`` (default: two rounds) trials."""

    name = "nsga2"

    def __init__(
        self, space: CandidateSpace, *, population: int | None = None, **kwargs: Any
    ) -> None:
        self.population = population
        super().__init__(space, **kwargs)
        make_sampler(self.name, seed=self.seed, round_size=self.round_size, population=population)
