"""What a search optimises: one stat to minimise or maximise, among the runs that count."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tuna.searchers.errors import ObjectiveError
from tuna.searchers.run import Run

VALID_WORDS = frozenset({"valid", "true", "yes", "ok", "pass", "passed"})


@dataclass(frozen=True)
class Objective:
    """Minimise or maximise the stat ``stat`` over the runs that count.

    A run counts when it is valid, printed ``stat`` as a number, and passes ``validity``:
    either a function of the Run, or the name of a stat that must say so (true, a non-zero
    number, or one of the words valid/true/yes/ok/pass/passed in any case — the tool's
    ``result_validity: VALID``).
    """

    stat: str
    goal: Literal["min", "max"] = "min"
    validity: str | Callable[[Run], bool] | None = None

    def counts(self, run: Run) -> bool:
        if not run.valid or not isinstance(run.stats.get(self.stat), int | float):
            return False
        if self.validity is None:
            return True
        if callable(self.validity):
            return bool(self.validity(run))
        return _says_valid(run.stats.get(self.validity))

    def best(self, runs: Sequence[Run]) -> Run | None:
        """The best run that counts; None when none does.

        An :class:`ObjectiveError` when runs printed stats but never ``stat`` (or the validity
        stat): the objective names something the benchmark does not print.
        """
        printed = [r for r in runs if r.stats]
        for name in (self.stat, self.validity):
            if isinstance(name, str) and printed and not any(name in r.stats for r in printed):
                seen = sorted({k for r in printed for k in r.stats})
                raise ObjectiveError(
                    f"the objective's stat {name!r} is in no run's output (the runs printed: "
                    f"{', '.join(seen)}); name one of those, or make the benchmark print it"
                )
        counting = [r for r in runs if self.counts(r)]
        if not counting:
            return None
        key: Callable[[Run], Any] = lambda r: r.stats[self.stat]  # noqa: E731
        return max(counting, key=key) if self.goal == "max" else min(counting, key=key)


def _says_valid(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in VALID_WORDS
    return bool(value) if isinstance(value, bool | int | float) else False
