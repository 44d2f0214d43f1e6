"""A validation stage drawn: predicted against measured, one panel per stat (issue #28).

Each run of the validated front is a point per panel: across, what the ``predictive``
strategy's model predicted of the stat when it chose the run; up, what was measured, on
the tuning inputs (filled) and on the validation inputs (hollow), with the line where
measured equals predicted. A run the model did not choose (a seed run, the baseline, a
search of another strategy) has no prediction: it is drawn at its tuning measurement
across (its tuning point on the line) and counted in the panel's title. A run measured
on the validation inputs past the constraints (not kept) is crossed out. PNG or SVG by the
path's suffix, with matplotlib (``pip install 'tuna[report]'``).

    from tuna.report.validation import draw_validation
    draw_validation(tuna.validate(result, objective), "validation.png")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuna.errors import TunaError
from tuna.report.figures import pyplot
from tuna.searches.validation import ValidatedRun, Validation


def figure_path(path: str | Path) -> Path:
    """``path`` checked to name a figure this module draws (.png or .svg)."""
    out = Path(path)
    if out.suffix.lower() not in (".png", ".svg"):
        raise TunaError(f"{out}: draw the validation to a .png or .svg file")
    return out


def draw_validation(validation: Validation, path: str | Path) -> Path:
    """Draw ``validation`` (module docstring) to ``path`` (``.png`` or ``.svg``)."""
    out = figure_path(path)
    runs = validation.runs
    if validation.baseline is not None and validation.baseline not in runs:
        runs = [*runs, validation.baseline]
    plt = pyplot()
    stats = validation.stats
    fig, axes = plt.subplots(1, len(stats), figsize=(5.2 * len(stats), 4.6), squeeze=False)
    for ax, stat in zip(axes[0], stats, strict=True):
        _panel(ax, stat, runs, validation.inputs)
    fig.suptitle(
        f"search {validation.search} {validation.name!r}: its front on the '{validation.inputs}' "
        f"inputs, {len(validation.kept)} of {len(validation.runs)} kept"
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _panel(ax: Any, stat: str, runs: list[ValidatedRun], inputs: str) -> None:
    xs: list[float] = []
    tuned: list[float] = []
    again: list[tuple[float, float, bool]] = []
    unpredicted = 0
    for r in runs:
        if stat not in r.tuned:
            continue
        guess = (r.predicted or {}).get(stat)
        unpredicted += guess is None
        x = float(guess if guess is not None else r.tuned[stat])
        xs.append(x)
        tuned.append(float(r.tuned[stat]))
        if r.measured is not None and stat in r.measured:
            again.append((x, float(r.measured[stat]), r.kept))
    values = [*xs, *tuned, *(y for _, y, _ in again)]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    pad = (hi - lo) * 0.05 or 1.0
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="0.6", linewidth=1,
            linestyle="--", label="measured = predicted")  # fmt: skip
    ax.scatter(xs, tuned, s=22, color="#1f77b4", label="measured, tuning inputs")
    kept = [(x, y) for x, y, k in again if k]
    lost = [(x, y) for x, y, k in again if not k]
    ax.scatter([x for x, _ in kept], [y for _, y in kept], s=40, facecolors="none",
               edgecolors="#2ca02c", label=f"measured, '{inputs}' inputs (kept)")  # fmt: skip
    if lost:
        ax.scatter([x for x, _ in lost], [y for _, y in lost], s=40, marker="x",
                   color="#d62728", label=f"measured, '{inputs}' inputs (not kept)")  # fmt: skip
    ax.set_xlabel(f"{stat}, predicted when chosen")
    ax.set_ylabel(f"{stat}, measured")
    note = f"; {unpredicted} not predicted (drawn at their tuning value)" if unpredicted else ""
    ax.set_title(f"{stat}: {len(xs)} runs{note}", fontsize=8)
    ax.legend(fontsize=7, loc="best")
