"""Figures as files: each one a PNG, an SVG and the CSV of the data it draws.

matplotlib is an optional dependency (``pip install 'tuna[report]'``); it is imported on
first use, with the Agg backend (no display needed), and its absence is a clear error.
Every figure has a title, axis labels with units and a legend.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
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
    """A drawn figure: its files (relative to the report directory) and its title."""

    name: str
    title: str
    files: dict[str, str]
    xlabel: str = ""
    ylabel: str = ""


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
    xlabel, ylabel = ax.get_xlabel(), ax.get_ylabel()
    plt.close(fig)
    write_csv(folder / f"{name}.csv", header, rows)
    files["csv"] = f"figures/{name}.csv"
    return Figure(name, title, files, xlabel, ylabel)


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
    for label, x, y, optimal, near in points:
        if optimal or near:
            ax.annotate(label, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    return save(fig, out, name, title, csv_header, csv_rows)


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
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    return save(fig, out, name, title, csv_header, csv_rows)
