"""What a search's rows hold, read as values: pure translations between a search's values
and its ``search_run`` / ``search_build`` columns, for the writers of
:mod:`tuna.jobs.search_results` and for the readers (the pruner's peers, a study's store).
Nothing here touches the database."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def stored_curve(curve: Mapping[int, float]) -> list[list[float]] | None:
    """A curve as ``search_run.intermediate`` holds it (None for an empty one)."""
    return [[int(s), float(v)] for s, v in sorted(curve.items())] or None


def objective_value(objective: Mapping[str, Any], stats: Mapping[str, Any]) -> float | None:
    """The objective's stat in ``stats`` as a number, or None."""
    value = stats.get(str(objective.get("stat")))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def round_candidates(params: Mapping[str, Any]) -> dict[int, str]:
    """A round's ``search_build.params`` as run seq -> candidate text: the ``seqs`` stored
    beside the ``candidates``, one each. A round stored before the seqs were (no ``seqs``)
    took consecutive seqs from its ``round``."""
    candidates = list(params.get("candidates") or [])
    seqs = params.get("seqs")
    if seqs is None:
        first = int(params.get("round") or 0)
        seqs = range(first, first + len(candidates))
    return {int(seq): str(text) for seq, text in zip(seqs, candidates, strict=True)}


def final_runs(params: Mapping[str, Any]) -> dict[int, str]:
    """A strategy's final job's ``search_build.params`` as run seq -> candidate text: the
    runs whose candidates it re-times (``runs`` beside the ``candidates``, one each); empty
    for a round, or a final job stored before the runs were."""
    if not params.get("final") or params.get("runs") is None:
        return {}
    candidates = [str(c) for c in params.get("candidates") or []]
    return {int(seq): text for seq, text in zip(params["runs"], candidates, strict=True)}


def round_stats(params: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """A round's stats computed from each candidate (``search_build.params["stats"]``,
    beside the ``candidates``: what a strategy's objective reads besides the time), as run
    seq -> stats; empty for a round stored without them."""
    stats = params.get("stats")
    if not stats:
        return {}
    return dict(zip(round_candidates(params), (dict(s) for s in stats), strict=True))
