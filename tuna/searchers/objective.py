"""What a search optimises: one stat or several, each minimised or maximised, among the runs
that count (valid, and meeting the constraints); with several, the answer is a Pareto front."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tuna.searchers.constraints import StatConstraint, parse_stat_constraint
from tuna.searchers.errors import ObjectiveError
from tuna.searchers.pareto import Goal, Target, front
from tuna.searchers.run import Run

VALID_WORDS = frozenset({"valid", "true", "yes", "ok", "pass", "passed"})


@dataclass(frozen=True)
class Objective:
    """Minimise or maximise the stat ``stat`` over the runs that count.

    A run counts when it is valid, printed ``stat`` as a number, and passes ``validity``:
    either a function of the Run, or the name of a stat that must say so (true, a non-zero
    number, or one of the words valid/true/yes/ok/pass/passed in any case — the tool's
    ``result_validity: VALID``).

    Several objectives: ``more`` holds the objectives after the first (``stat``/``goal``,
    the one a search's ``value`` column and best-so-far curve follow); a run counts only
    when it has each of their stats as a number, and :meth:`front` is the answer. A run
    counts only when it meets every one of ``constraints`` too, the ``baseline.NAME`` of
    which are read from ``baseline`` (the baseline run's stats; None: not measured yet).
    """

    stat: str
    goal: Goal = "min"
    validity: str | Callable[[Run], bool] | None = None
    more: tuple[Target, ...] = ()
    constraints: tuple[StatConstraint, ...] = ()
    baseline: Mapping[str, Any] | None = None

    @property
    def targets(self) -> tuple[Target, ...]:
        """Every objective, the first one first."""
        return (Target(self.stat, self.goal), *self.more)

    @property
    def reads_stats(self) -> bool:
        """Whether a run's ``value`` alone cannot say that it counts: its stats must be read
        (a validity stat, more objectives, or constraints)."""
        return self.validity is not None or bool(self.more) or bool(self.constraints)

    def counts(self, run: Run) -> bool:
        return self.unmet(run) is None

    def unmet(self, run: Run) -> str | None:
        """None when the run counts, else why not in a few words (e.g. the constraint it
        fails, with the run's stats that make it fail)."""
        if not run.valid:
            return run.reason or "invalid"
        for t in self.targets:
            if not _is_number(run.stats.get(t.stat)):
                return f"no number {t.stat!r}"
        if callable(self.validity) and not self.validity(run):
            return "its validity check says invalid"
        if isinstance(self.validity, str) and not _says_valid(run.stats.get(self.validity)):
            return f"{self.validity} says invalid"
        for c in self.constraints:
            why = c.unmet(run.stats, self.baseline)
            if why is not None:
                return why
        return None

    def with_baseline(self, stats: Mapping[str, Any] | None) -> Objective:
        """This objective, the baseline's stats being ``stats``."""
        return replace(self, baseline=None if stats is None else dict(stats))

    @property
    def baseline_stats(self) -> list[str]:
        """The baseline's stats the constraints name (``baseline.NAME``), sorted: when any,
        a search measures its baseline before it judges a run."""
        return sorted({n for c in self.constraints for n in c.baseline_stats})

    def named_stats(self) -> list[str]:
        """Every stat a run must print: the objectives', the validity stat, the constraints'."""
        names = [t.stat for t in self.targets]
        names += [self.validity] if isinstance(self.validity, str) else []
        names += sorted({n for c in self.constraints for n in c.stats})
        return list(dict.fromkeys(names))

    def check_stats(self, printed: Sequence[Mapping[str, Any]], whose: str = "run") -> None:
        """An :class:`ObjectiveError` when stats were printed (``printed`` not all empty) but
        none holds a stat the objective names: it names something the benchmark does not
        print. ``baseline.NAME`` are checked against the baseline's stats, when measured."""
        printed = [p for p in printed if p]
        missing, who = (
            ("not in the baseline's output", "the baseline")
            if whose == "baseline"
            else (f"in no {whose}'s output", f"the {whose}s")
        )
        for name in self.named_stats():
            _printed(name, "objective's", printed, missing, who)
        for name in self.baseline_stats:
            if self.baseline is not None:
                _printed(name, "constraint's", [self.baseline], "not in the baseline's output",
                         "the baseline")  # fmt: skip

    def best(self, runs: Sequence[Run]) -> Run | None:
        """The best run that counts; None when none does. With several objectives, the
        first of :meth:`front` (the best by the first objective, ties by the next).

        An :class:`ObjectiveError` when runs printed stats but never ``stat`` (or another
        stat the objective names): it names something the benchmark does not print.
        """
        self.check_stats([r.stats for r in runs])
        counting = [r for r in runs if self.counts(r)]
        if not counting:
            return None
        if self.more:
            return self.front(counting)[0]
        key: Callable[[Run], Any] = lambda r: r.stats[self.stat]  # noqa: E731
        return max(counting, key=key) if self.goal == "max" else min(counting, key=key)

    def front(self, runs: Sequence[Run]) -> list[Run]:
        """The Pareto front of the runs that count (:mod:`tuna.searchers.pareto`), in
        priority order; with one objective, the best run and any equal to it."""
        return front([r for r in runs if self.counts(r)], self.targets, lambda r: r.stats)

    def stored(self) -> dict[str, Any]:
        """As a search row's ``objective`` JSON (a callable validity is not stored). One
        objective without constraints is stored as it always was."""
        out: dict[str, Any] = {
            "stat": self.stat,
            "goal": self.goal,
            "valid": self.validity if isinstance(self.validity, str) else None,
        }
        if self.more:
            out["objectives"] = [{"stat": t.stat, "goal": t.goal} for t in self.targets]
        if self.constraints:
            out["constraints"] = [c.text for c in self.constraints]
        return out

    @classmethod
    def from_stored(cls, raw: Mapping[str, Any]) -> Objective:
        """The objective a search row's ``objective`` JSON holds (:meth:`stored`)."""
        goal: Goal = "max" if raw.get("goal") == "max" else "min"
        valid = raw.get("valid")
        targets = [
            Target(str(t["stat"]), "max" if t.get("goal") == "max" else "min")
            for t in raw.get("objectives") or []
        ]
        return cls(
            stat=str(raw.get("stat", "?")),
            goal=goal,
            validity=valid if isinstance(valid, str) and valid else None,
            more=tuple(targets[1:]),
            constraints=tuple(parse_stat_constraint(c) for c in raw.get("constraints") or []),
        )


def make_objective(
    targets: Sequence[Target] | Mapping[str, str],
    constraints: Sequence[str] = (),
    validity: str | None = None,
) -> Objective:
    """An objective of one or several targets (a mapping: stat -> "min"/"max", or
    "minimize"/"maximize", in priority order) and constraint texts, each checked: an
    :class:`ObjectiveError` of one line says what is wrong."""
    if isinstance(targets, Mapping):
        targets = [Target(str(k), _goal(str(k), v)) for k, v in targets.items()]
    targets = list(targets)
    if not targets:
        raise ObjectiveError("no objective: name at least one stat and its direction (time_ms:min)")
    for t in targets:
        if not isinstance(t.stat, str) or not t.stat.strip():
            raise ObjectiveError(f"objective {t.stat!r}: name a stat")
    seen = [t.stat for t in targets]
    twice = sorted({s for s in seen if seen.count(s) > 1})
    if twice:
        raise ObjectiveError(f"objective {twice[0]!r} is given twice; give each stat once")
    if isinstance(constraints, str):
        constraints = [constraints]
    parsed = tuple(parse_stat_constraint(c) for c in constraints)
    first = targets[0]
    return Objective(first.stat, first.goal, validity, tuple(targets[1:]), parsed)


GOAL_WORDS: dict[str, Goal] = {
    "min": "min",
    "minimize": "min",
    "minimise": "min",
    "max": "max",
    "maximize": "max",
    "maximise": "max",
}


def _goal(stat: str, word: object) -> Goal:
    goal = GOAL_WORDS.get(str(word).strip().lower()) if isinstance(word, str) else None
    if goal is None:
        raise ObjectiveError(f"objective {stat!r}: direction {word!r}; use 'min' or 'max'")
    return goal


def parse_target(text: str) -> Target:
    """``time_ms:min`` (``STAT`` alone: minimise) as a :class:`Target`."""
    stat, _, word = text.rpartition(":") if ":" in text else (text, "", "min")
    if not stat.strip():
        raise ObjectiveError(f"objective {text!r}: write STAT:min or STAT:max, e.g. time_ms:min")
    return Target(stat.strip(), _goal(stat.strip(), word))


def _printed(
    name: str, what: str, outputs: Sequence[Mapping[str, Any]], missing: str, who: str
) -> None:
    if outputs and not any(name in p for p in outputs):
        seen = sorted({k for p in outputs for k in p})
        raise ObjectiveError(
            f"the {what} stat {name!r} is {missing} ({who} printed: {', '.join(seen)}); "
            "name one of those, or make the benchmark print it"
        )


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _says_valid(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in VALID_WORDS
    return bool(value) if isinstance(value, bool | int | float) else False
