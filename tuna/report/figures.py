"""Figures as files: each one a PNG, an SVG and the CSV of the data it draws.

matplotlib is an optional dependency (``pip install 'tuna[report]'``); it is imported on
first use, with the Agg backend (no display needed), and its absence is a clear error.
Every figure has a title, axis labels with units and a legend.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuna.errors import MissingExtraError

FORMATS = ("png", "svg")


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, or a :class:`MissingExtraError`."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise MissingExtraError(
            "`tuna report` draws with matplotlib, which is not installed; "
            "install the report extra: pip install 'tuna[report]'"
        ) from e
    # Text stays text in the SVGs (searchable, selectable, smaller than glyph paths).
    plt.rcParams.update(
        {"svg.hashsalt": "tuna", "svg.fonttype": "none", "figure.dpi": 100, "font.size": 9}
    )
    return plt


@dataclass(frozen=True)
class Figure:
    """A drawn figure: its files (relative to the report directory) and its title, and what
    was drawn (axes' scales, limits and tick labels, bars, text labels): what a test of a
    figure's honesty reads."""

    name: str
    title: str
    files: dict[str, str]
    xlabel: str = ""
    ylabel: str = ""
    scales: tuple[str, str] = ("linear", "linear")
    limits: tuple[tuple[float, float], tuple[float, float]] = ((0.0, 1.0), (0.0, 1.0))
    ticks: tuple[list[str], list[str]] = ([], [])
    bars: list[tuple[float, float]] = field(default_factory=list)
    """Each bar's extent along its value axis (start, end)."""
    texts: list[str] = field(default_factory=list)
    """The text drawn inside the axes (value labels, point labels)."""


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def save(
    fig: Any,
    out: Path,
    name: str,
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
) -> Figure:
    """Write ``fig`` as ``figures/NAME.{png,svg}`` and its data as ``figures/NAME.csv``."""
    plt = pyplot()
    folder = out / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for fmt in FORMATS:
        path = folder / f"{name}.{fmt}"
        # No creation date in the files: the same data gives the same bytes.
        metadata = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(path, format=fmt, bbox_inches="tight", metadata=metadata)
        files[fmt] = f"figures/{path.name}"
    (ax,) = fig.axes
    drawn = _drawn(ax)
    plt.close(fig)
    write_csv(folder / f"{name}.csv", header, rows)
    files["csv"] = f"figures/{name}.csv"
    return Figure(name, title, files, **drawn)


def _drawn(ax: Any) -> dict[str, Any]:
    from matplotlib.patches import Rectangle

    horizontal = ax.yaxis_inverted() or any(
        isinstance(p, Rectangle) and p.get_height() < p.get_width() * 0.5 for p in ax.patches[:1]
    )
    bars = []
    for p in ax.patches:
        if isinstance(p, Rectangle):
            lo, size = (p.get_x(), p.get_width()) if horizontal else (p.get_y(), p.get_height())
            bars.append((float(lo), float(lo + size)))
    ticks = tuple([t.get_text() for t in axis.get_ticklabels() if t.get_text()]
                  for axis in (ax.xaxis, ax.yaxis))  # fmt: skip
    return {
        "xlabel": ax.get_xlabel(),
        "ylabel": ax.get_ylabel(),
        "scales": (ax.get_xscale(), ax.get_yscale()),
        "limits": (tuple(map(float, ax.get_xlim())), tuple(map(float, ax.get_ylim()))),
        "ticks": ticks,
        "bars": bars,
        "texts": [t.get_text() for t in ax.texts],
    }


def bar_chart(
    out: Path,
    name: str,
    title: str,
    labels: Sequence[str],
    series: dict[str, Sequence[float]],
    *,
    xlabel: str,
    ylabel: str,
    csv_header: Sequence[str],
    csv_rows: Sequence[Sequence[Any]],
    horizontal: bool = False,
    log: bool = False,
    stacked: bool = False,
) -> Figure:
    """Bars per label, one colour per series (stacked or side by side)."""
    plt = pyplot()
    n = max(len(labels), 1)
    size = (8, max(2.5, 0.28 * n + 1.2)) if horizontal else (max(6, 0.22 * n + 2), 4)
    fig, ax = plt.subplots(figsize=size)
    positions = list(range(len(labels)))
    width = 0.8 if stacked else 0.8 / max(len(series), 1)
    bottom = [0.0] * len(labels)
    for k, (legend, values) in enumerate(series.items()):
        offset = 0.0 if stacked else (k - (len(series) - 1) / 2) * width
        at = [p + offset for p in positions]
        if horizontal:
            ax.barh(at, values, height=width, left=bottom if stacked else None, label=legend)
        else:
            ax.bar(at, values, width=width, bottom=bottom if stacked else None, label=legend)
        if stacked:
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    if horizontal:
        ax.set_yticks(positions, labels)
        ax.invert_yaxis()
        if log:
            ax.set_xscale("log")
    else:
        ax.set_xticks(positions, labels, rotation=60, ha="right")
        if log:
            ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if horizontal:  # beside the bars, never over them
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    else:
        ax.legend(loc="best", fontsize=8)
    ax.grid(axis="x" if horizontal else "y", alpha=0.3)
    return save(fig, out, name, title, csv_header, csv_rows)


def speedup_chart(
    out: Path,
    name: str,
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    xlabel: str,
    ylabel: str,
    csv_header: Sequence[str],
    csv_rows: Sequence[Sequence[Any]],
) -> Figure:
    """Speed-ups as bars from 1x (no change) on a log axis, each labelled with its value.

    A bar's length is then the ratio itself (2x up and 2x down are as long), not its
    distance from wherever an autoscaled axis happened to start: bars from the axis floor
    made a 25x bar look 5 % of an 80x one.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.3 * len(labels) + 2), 4.2))
    at = list(range(len(labels)))
    lows = [min(v, 1.0) for v in values]
    colours = ["tab:green" if v >= 1 else "tab:red" for v in values]
    bars = ax.bar(at, [abs(v - 1.0) for v in values], bottom=lows, color=colours, width=0.7)
    ax.set_yscale("log")
    ax.bar_label(bars, labels=[_times(v) for v in values], fontsize=7, padding=2)
    ax.axhline(1.0, color="black", linewidth=0.8)
    from matplotlib.patches import Patch

    kinds = [("tab:green", "faster than the baseline"), ("tab:red", "slower than the baseline")]
    ax.legend(handles=[Patch(color=c, label=t) for c, t in kinds if c in colours],
              loc="upper right", fontsize=8)  # fmt: skip
    lo, hi = min([*values, 1.0]), max([*values, 1.0])
    ax.set_ylim(lo / 1.6, hi * 1.6)  # room for the value labels
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _times(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(at, labels, rotation=60, ha="right")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    return save(fig, out, name, title, csv_header, csv_rows)


def _times(v: float) -> str:
    """A ratio as a tick or value label: 1x, 2.5x, 40x, 0.5x (never 4x10^1)."""
    if v >= 100:
        return f"{v:.0f}x"
    return f"{v:.3g}x"


def lines_chart(
    out: Path,
    name: str,
    title: str,
    x: Sequence[float],
    series: dict[str, Sequence[float]],
    *,
    xlabel: str,
    ylabel: str,
    csv_header: Sequence[str],
    csv_rows: Sequence[Sequence[Any]],
) -> Figure:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    for legend, values in series.items():
        ax.plot(x, values, marker=".", label=legend)
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if x:
        ax.set_xlim(0, max(x) + min(x))  # the data's span, not a padded minute
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    return save(fig, out, name, title, csv_header, csv_rows)


def pareto_chart(
    out: Path,
    name: str,
    title: str,
    points: Sequence[tuple[str, float, float, bool, bool]],
    *,
    xlabel: str,
    ylabel: str,
    csv_header: Sequence[str],
    csv_rows: Sequence[Sequence[Any]],
    where: str = "post",
) -> Figure:
    """(label, x, y, optimal, near_optimal) points; the front is drawn as a step line.

    ``where`` is matplotlib's step placement: "post" draws the edge of the region the front
    dominates when x is minimised, "pre" when x is maximised.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    groups = (
        ("Pareto-optimal", [p for p in points if p[3]], "tab:red", "o", 60),
        ("near-optimal (--take-best)", [p for p in points if p[4] and not p[3]], "tab:orange",
         "D", 40),
        ("dominated", [p for p in points if not p[3] and not p[4]], "tab:gray", ".", 30),
    )  # fmt: skip
    for legend, pts, colour, marker, size in groups:
        if pts:
            ax.scatter([p[1] for p in pts], [p[2] for p in pts], c=colour, marker=marker,
                       s=size, label=legend, zorder=3)  # fmt: skip
    front = sorted((p[1], p[2]) for p in points if p[3])
    if len(front) > 1:
        ax.step([f[0] for f in front], [f[1] for f in front], where=where, color="tab:red",
                alpha=0.5, zorder=2)  # fmt: skip
    xs, ys = [p[1] for p in points], [p[2] for p in points]
    for vals, scale in ((xs, ax.set_xscale), (ys, ax.set_yscale)):
        positive = [v for v in vals if v > 0]
        # A 400 ms naive solver on a linear axis squashed 1.21 and 1.90 ms together.
        if positive and len(positive) == len(vals) and max(positive) / min(positive) > WIDE:
            scale("log")
    _sane_limits(ax, xs, ys)
    _label_points(ax, [(p[0], p[1], p[2]) for p in points if p[3] or p[4]])
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    return save(fig, out, name, title, csv_header, csv_rows)


WIDE = 30.0
"""A span (largest / smallest) past which an axis of positive values is drawn in log scale."""


def _sane_limits(ax: Any, xs: Sequence[float], ys: Sequence[float]) -> None:
    """An axis over one value (or equal values) spans a sensible range around it, from 0
    for a non-negative quantity (a one-point plot had a -0.04..0.04 MiB axis)."""
    for vals, set_, scale in ((xs, ax.set_xlim, ax.get_xscale), (ys, ax.set_ylim, ax.get_yscale)):
        if not vals or max(vals) != min(vals):
            continue
        v = vals[0]
        if scale() == "log":
            set_(v / 2, v * 2)
        elif v == 0:
            set_(0, 1)
        else:
            set_(0, v * 2) if v > 0 else set_(v * 2, 0)


def _label_points(ax: Any, points: Sequence[tuple[str, float, float]]) -> None:
    """Label each point beside it, moving a label down a line while it would overlap one
    already placed (the search Pareto's labels hid each other and the markers)."""
    fig = ax.figure
    fig.draw_without_rendering()  # lays the axes out: until then a text's extent is a unit box
    renderer = fig.canvas.get_renderer()
    placed: list[Any] = []
    for label, x, y in sorted(points, key=lambda p: (p[1], p[2])):
        for step in range(12):
            text = ax.annotate(label, (x, y), textcoords="offset points",
                               xytext=(6, 4 - 9 * step), fontsize=7)  # fmt: skip
            box = text.get_window_extent(renderer)
            if step == 11 or not any(box.overlaps(b) for b in placed):
                break
            text.remove()
        placed.append(box)


@dataclass(frozen=True)
class Curve:
    """One labelled best-so-far curve: the objective value of each measurement in the order
    they finished (None where it does not count) and the best so far after each."""

    label: str
    values: Sequence[float | None]
    best: Sequence[float | None]


def best_so_far_chart(
    out: Path,
    name: str,
    title: str,
    curves: Sequence[Curve],
    *,
    xlabel: str,
    ylabel: str,
    csv_header: Sequence[str],
    csv_rows: Sequence[Sequence[Any]],
) -> Figure:
    """A step line of the best so far per curve, its measurements as faint dots behind it."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    for k, c in enumerate(curves):
        colour = f"C{k % 10}"
        n = range(1, len(c.values) + 1)
        measured = [(i, v) for i, v in zip(n, c.values, strict=True) if v is not None]
        if measured:
            ax.scatter([i for i, _ in measured], [v for _, v in measured], s=10, alpha=0.3,
                       color=colour, zorder=2)  # fmt: skip
        drawn = [(i, b) for i, b in zip(n, c.best, strict=True) if b is not None]
        ax.step([i for i, _ in drawn], [b for _, b in drawn], where="post", color=colour,
                linewidth=2, label=c.label, zorder=3)  # fmt: skip
    if curves:
        ax.scatter([], [], s=10, alpha=0.3, color="gray", label="a measurement that counts")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 2.5 or 7.5
    values = [v for c in curves for v in c.values if v is not None]
    if values and min(values) > 0 and max(values) / min(values) > WIDE:
        ax.set_yscale("log")  # one outlier flattened the curve on a linear axis
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    return save(fig, out, name, title, csv_header, csv_rows)
