"""Charts as inline SVG, drawn on the server (the dashboard has no JavaScript).

:func:`step_chart` draws best-so-far curves: one step line per labelled series (a search,
a strategy), the measurements behind it as faint dots, with a title, axis labels, ticks
and a legend, like the report's figures; :func:`parallel_coordinates`, :func:`front_chart`
and :func:`validation_chart` a search's runs, front and validation. Values in, markup out:
no database.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip
"""matplotlib's default cycle: a series has the colour it has in the report."""


@dataclass(frozen=True)
class Series:
    """A labelled best-so-far curve: its corners ``(x, y)`` (drawn as steps), drawn on to
    ``until`` (the measurements made so far), and optionally the measurements as dots."""

    label: str
    steps: Sequence[tuple[float, float]]
    until: float
    dots: Sequence[tuple[float, float]] = field(default_factory=tuple)


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round values (1, 2 or 5 times a power of ten) covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi < lo:
        lo, hi = hi, lo
    scale = max(abs(lo), abs(hi))
    # Equal ends, or ends too close to tell apart on an axis (a span below 1e-300 would
    # underflow to a zero step): pad them into a range.
    if hi - lo <= scale * 1e-9 or hi - lo < 1e-300:
        pad = max(scale * 0.1, 1e-300) if scale >= 1e-299 else 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first, last = math.floor(lo / step), math.ceil(hi / step)
    # lo / step may round (or underflow to -0.0) past the end: widen by one step where so
    if first * step > lo:
        first -= 1
    if last * step < hi:
        last += 1
    return [k * step for k in range(first, last + 1)]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        return f"{v:.3g}"
    return f"{v:.6g}"


LOG_SPAN = 30.0
"""A y span (largest / smallest, all positive) past which the axis is logarithmic."""
CHAR_PX = 7
"""The widest a character of the charts' 11 px sans-serif font is, near enough (digits and
most letters are 6 px; a label cut to fit at 7 px never runs past the margin)."""


def fit(label: str, chars: int) -> str:
    """``label`` cut to ``chars`` characters with an ellipsis (the full one is its title)."""
    return label if len(label) <= chars else label[: max(chars - 1, 1)] + "…"


def _ticks(
    xt: Sequence[float], yt: Sequence[float],
    px: Callable[[float], float], py: Callable[[float], float],
    left: int, top: int, pw: float, ph: float,
) -> list[str]:  # fmt: skip
    """The x axis's tick marks and labels, and the y axis's grid lines and labels."""
    out = []
    for t in xt:
        out.append(f'<line x1="{px(t)}" y1="{top + ph}" x2="{px(t)}" y2="{top + ph + 4}" '
                   f'stroke="#999"/><text class="xtick" x="{px(t)}" y="{top + ph + 16}" '
                   f'text-anchor="middle">{_fmt(t)}</text>')  # fmt: skip
    for t in yt:
        out.append(f'<line x1="{left}" y1="{py(t)}" x2="{left + pw}" y2="{py(t)}" '
                   f'stroke="#eee"/><text class="ytick" x="{left - 6}" y="{py(t) + 4}" '
                   f'text-anchor="end">{_fmt(t)}</text>')  # fmt: skip
    return out


def _frame(
    chart_id: str, title: str, xlabel: str, ylabel: str,
    width: int, height: int, left: int, top: int, pw: float, ph: float,
) -> list[str]:  # fmt: skip
    """A chart's opening ``<svg>`` tag, its title and axis labels, and the plot area's box."""
    e = escape
    return [
        f'<svg id="{e(chart_id)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{e(title)}" font-family="sans-serif" font-size="11">',
        f"<title>{e(title)}</title>",
        f'<text class="title" x="{left + pw / 2}" y="18" text-anchor="middle" '
        f'font-size="13" font-weight="bold">{e(title)}</text>',
        f'<text class="xlabel" x="{left + pw / 2}" y="{height - 8}" '
        f'text-anchor="middle">{e(xlabel)}</text>',
        f'<text class="ylabel" transform="translate(14 {top + ph / 2}) rotate(-90)" '
        f'text-anchor="middle">{e(ylabel)}</text>',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
    ]


def step_chart(
    series: Sequence[Series],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    width: int = 760,
    height: int = 340,
    chart_id: str = "chart",
    empty: str = "no measurement counts yet",
) -> str:
    """An ``<svg>`` element: the series as step lines over shared axes."""
    left, right, top, bottom = 70, 180, 30, 48
    pw, ph = width - left - right, height - top - bottom
    xs = [x for s in series for x, _ in (*s.steps, *s.dots)] + [s.until for s in series]
    ys = [y for s in series for _, y in (*s.steps, *s.dots)]
    log = bool(ys) and min(ys) > 0 and max(ys) / min(ys) > LOG_SPAN  # outliers flattened it
    if log:
        ylabel += " (log scale)"
    e = escape
    out = _frame(chart_id, title, xlabel, ylabel, width, height, left, top, pw, ph)
    if not ys:
        out.append(f'<text class="empty" x="{left + pw / 2}" y="{top + ph / 2}" '
                   f'text-anchor="middle" fill="#777">{e(empty)}</text>')  # fmt: skip
        out.append("</svg>")
        return "\n".join(out)
    xt = nice_ticks(min(0.0, *xs), max(1.0, *xs))
    if any(t != int(t) for t in xt):  # x counts measurements: no 2.5 or 7.5
        xt = list(range(math.floor(xt[0]), math.ceil(xt[-1]) + 1))
    if log:
        lo_e, hi_e = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        yt = [10.0**k * m for k in range(lo_e, hi_e) for m in (1, 2, 5)] + [10.0**hi_e]
    else:
        yt = nice_ticks(min(ys), max(ys))
    x0, x1, y0, y1 = xt[0], xt[-1], yt[0], yt[-1]
    ly0, ly1 = (math.log10(y0), math.log10(y1)) if log else (y0, y1)

    def px(x: float) -> float:
        return round(left + (x - x0) / (x1 - x0) * pw, 2)

    def py(y: float) -> float:
        v = math.log10(y) if log else y
        return round(top + ph - (v - ly0) / (ly1 - ly0) * ph, 2)

    out += _ticks(xt, yt, px, py, left, top, pw, ph)
    for k, s in enumerate(series):
        colour = COLOURS[k % len(COLOURS)]
        for x, y in s.dots:
            out.append(f'<circle cx="{px(x)}" cy="{py(y)}" r="2" fill="{colour}" '
                       'fill-opacity="0.3"/>')  # fmt: skip
        if s.steps:
            d = [f"M{px(s.steps[0][0])},{py(s.steps[0][1])}"]
            for xb, yb in s.steps[1:]:
                d.append(f"H{px(xb)}V{py(yb)}")
            d.append(f"H{px(max(s.until, s.steps[-1][0]))}")
            last = s.steps[-1][1]
            out.append(f'<path class="series" data-label="{e(s.label)}" data-best="{last!r}" '
                       f'data-until="{s.until:g}" d="{"".join(d)}" fill="none" '
                       f'stroke="{colour}" stroke-width="2"/>')  # fmt: skip
        ly = top + 10 + 18 * k
        shown = fit(s.label, (right - 42) // CHAR_PX)
        out.append(f'<g class="legend"><title>{e(s.label)}</title><line x1="{left + pw + 12}" '
                   f'y1="{ly}" x2="{left + pw + 32}" y2="{ly}" stroke="{colour}" '
                   f'stroke-width="2"/><text x="{left + pw + 38}" y="{ly + 4}">{e(shown)}</text>'
                   "</g>")  # fmt: skip
    out.append("</svg>")
    return "\n".join(out)


def parallel_coordinates(
    runs: Sequence[tuple[dict[str, object], float]],
    *,
    value: str,
    goal: str,
    title: str,
    width: int = 760,
    height: int = 320,
    chart_id: str = "parallel",
) -> str:
    """An ``<svg>``: one vertical axis per parameter and one for ``value``, one line per run
    through its values; the better the run, the darker its line (drawn last, on top).

    A parameter of numbers is scaled between its least and greatest; any other (text,
    lists) is a category, its values sorted and spread evenly. Parameters that never vary
    are left out (they would be a flat line through every run).
    """
    e = escape
    out = [
        f'<svg id="{e(chart_id)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{e(title)}" font-family="sans-serif" font-size="11">',
        f'<text class="title" x="{width / 2}" y="16" text-anchor="middle" '
        f'font-size="13">{e(title)}</text>',
    ]
    names = sorted({k for p, _ in runs for k in p})
    varying = [n for n in names if len({repr(p.get(n)) for p, _ in runs}) > 1]
    if not runs or not all(math.isfinite(v) for _, v in runs):
        out.append(f'<text class="empty" x="{width / 2}" y="{height / 2}" text-anchor="middle" '
                   'fill="#777">no finished run with a value yet</text></svg>')  # fmt: skip
        return "\n".join(out)
    left, right, top, bottom = 60, 60, 50, 30
    axes = [*varying, value]
    gap = (width - left - right) / max(len(axes) - 1, 1)
    ph = height - top - bottom

    def scale(name: str) -> tuple[dict[str, float] | None, float, float]:
        vals = [v for _, v in runs] if name == value else [p.get(name) for p, _ in runs]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
            nums = [float(v) for v in vals]  # type: ignore[arg-type]
            return None, min(nums), max(nums)
        cats = sorted({repr(v) for v in vals})
        return {c: i / max(len(cats) - 1, 1) for i, c in enumerate(cats)}, 0.0, 1.0

    scales = {n: scale(n) for n in axes}

    def y_of(name: str, v: object) -> float:
        cats, lo, hi = scales[name]
        if cats is not None:
            frac = cats[repr(v)]
        else:
            frac = 0.5 if hi == lo else (float(v) - lo) / (hi - lo)  # type: ignore[arg-type]
        return round(top + ph - frac * ph, 2)

    for k, name in enumerate(axes):
        x = left + k * gap
        cats, lo, hi = scales[name]
        low, high = ("", "") if cats is not None else (_fmt(lo), _fmt(hi))
        cls = "value-axis" if name == value else "axis"
        out.append(f'<g class="{cls}" data-name="{e(name)}"><line x1="{x}" y1="{top}" x2="{x}" '
                   f'y2="{top + ph}" stroke="#999"/><text class="axis-name" x="{x}" '
                   f'y="{top - 18}" text-anchor="middle">{e(fit(name, int(gap // CHAR_PX) or 4))}'
                   f'</text><text x="{x}" y="{top - 5}" text-anchor="middle" fill="#777">'
                   f'{e(high)}</text><text x="{x}" y="{top + ph + 14}" text-anchor="middle" '
                   f'fill="#777">{e(low)}</text></g>')  # fmt: skip
    values = [v for _, v in runs]
    lo, hi = min(values), max(values)
    ranked = sorted(runs, key=lambda r: r[1], reverse=(goal == "min"))  # the best last
    for p, v in ranked:
        good = 0.5 if hi == lo else (v - lo) / (hi - lo)
        if goal == "min":
            good = 1 - good
        shade = round(220 - 190 * good)
        pts = " ".join(f"{left + k * gap},{y_of(n, v if n == value else p.get(n))}"
                       for k, n in enumerate(axes))  # fmt: skip
        out.append(f'<polyline class="run" data-value="{v!r}" points="{pts}" fill="none" '
                   f'stroke="rgb({shade},{shade},255)" stroke-width="1.5"/>')  # fmt: skip
    out.append("</svg>")
    return "\n".join(out)


def front_chart(
    dots: Sequence[tuple[float, float]],
    front: Sequence[tuple[float, float, str]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    baseline: tuple[float, float] | None = None,
    width: int = 760,
    height: int = 340,
    chart_id: str = "pareto-front",
) -> str:
    """An ``<svg>`` element: runs of two objectives as faint dots, the Pareto front as
    solid points joined in order (each with its label as a tooltip), the baseline as a
    ring."""
    left, right, top, bottom = 70, 30, 30, 48
    pw, ph = width - left - right, height - top - bottom
    points = [*dots, *((x, y) for x, y, _ in front), *([baseline] if baseline else [])]
    e = escape
    out = _frame(chart_id, title, xlabel, ylabel, width, height, left, top, pw, ph)
    if not points:
        out.append(f'<text class="empty" x="{left + pw / 2}" y="{top + ph / 2}" '
                   'text-anchor="middle" fill="#777">no run counts yet</text></svg>')  # fmt: skip
        return "\n".join(out)
    xt = nice_ticks(min(p[0] for p in points), max(p[0] for p in points))
    yt = nice_ticks(min(p[1] for p in points), max(p[1] for p in points))

    def px(x: float) -> float:
        return round(left + (x - xt[0]) / (xt[-1] - xt[0]) * pw, 2)

    def py(y: float) -> float:
        return round(top + ph - (y - yt[0]) / (yt[-1] - yt[0]) * ph, 2)

    out += _ticks(xt, yt, px, py, left, top, pw, ph)
    for x, y in dots:
        out.append(f'<circle class="run" cx="{px(x)}" cy="{py(y)}" r="2" fill="{COLOURS[0]}" '
                   'fill-opacity="0.3"/>')  # fmt: skip
    if front:
        d = "".join(f"{'M' if i == 0 else 'L'}{px(x)},{py(y)}" for i, (x, y, _) in enumerate(front))
        out.append(f'<path class="front" d="{d}" fill="none" stroke="{COLOURS[1]}" '
                   'stroke-width="1.5"/>')  # fmt: skip
    for x, y, label in front:
        out.append(f'<circle class="front-run" cx="{px(x)}" cy="{py(y)}" r="4" '
                   f'fill="{COLOURS[1]}"><title>{e(label)}</title></circle>')  # fmt: skip
    if baseline is not None:
        out.append(f'<circle class="baseline" cx="{px(baseline[0])}" cy="{py(baseline[1])}" '
                   f'r="7" fill="none" stroke="#000" stroke-width="1.5"><title>baseline'
                   "</title></circle>")  # fmt: skip
    out.append("</svg>")
    return "\n".join(out)


@dataclass(frozen=True)
class Validated:
    """One run of a validated front on one stat: ``x`` what was predicted when it was
    chosen (its tuning value when nothing predicted it), ``tuned`` and ``measured`` (None:
    it failed there) its values on the tuning and the validation inputs, ``kept`` whether
    it still meets the constraints there, ``label`` its tooltip."""

    x: float
    tuned: float
    measured: float | None
    kept: bool
    label: str


def validation_chart(
    runs: Sequence[Validated],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    inputs: str,
    width: int = 380,
    height: int = 320,
    chart_id: str = "validation",
) -> str:
    """An ``<svg>`` element: predicted (across) against measured (up), as the report's
    validation figure draws it (:mod:`tuna.report.validation`): the line where they are
    equal, each run's tuning measurement as a filled dot, its measurement on the
    ``inputs`` as a ring (kept) or a cross (not kept)."""
    left, right, top, bottom = 70, 20, 30, 48
    pw, ph = width - left - right, height - top - bottom
    e = escape
    out = _frame(chart_id, title, xlabel, ylabel, width, height, left, top, pw, ph)
    values = [v for r in runs for v in (r.x, r.tuned, r.measured) if v is not None]
    if not values:
        out.append(f'<text class="empty" x="{left + pw / 2}" y="{top + ph / 2}" '
                   'text-anchor="middle" fill="#777">nothing measured</text></svg>')  # fmt: skip
        return "\n".join(out)
    ticks = nice_ticks(min(values), max(values))  # one scale across and up: y = x is diagonal

    def px(x: float) -> float:
        return round(left + (x - ticks[0]) / (ticks[-1] - ticks[0]) * pw, 2)

    def py(y: float) -> float:
        return round(top + ph - (y - ticks[0]) / (ticks[-1] - ticks[0]) * ph, 2)

    out += _ticks(ticks, ticks, px, py, left, top, pw, ph)
    lo, hi = ticks[0], ticks[-1]
    out.append(f'<line class="equal" x1="{px(lo)}" y1="{py(lo)}" x2="{px(hi)}" y2="{py(hi)}" '
               'stroke="#999" stroke-dasharray="4 3"><title>measured = predicted</title>'
               "</line>")  # fmt: skip
    for r in runs:
        out.append(f'<circle class="tuned" cx="{px(r.x)}" cy="{py(r.tuned)}" r="3" '
                   f'fill="{COLOURS[0]}"><title>{e(r.label)}: tuning inputs</title>'
                   "</circle>")  # fmt: skip
        if r.measured is None:
            continue
        x, y, tip = px(r.x), py(r.measured), f"{e(r.label)}: '{e(inputs)}' inputs"
        if r.kept:
            out.append(f'<circle class="kept" cx="{x}" cy="{y}" r="5" fill="none" '
                       f'stroke="{COLOURS[2]}" stroke-width="1.5"><title>{tip}, kept</title>'
                       "</circle>")  # fmt: skip
        else:
            out.append(f'<path class="lost" d="M{x - 4},{y - 4}L{x + 4},{y + 4}M{x - 4},{y + 4}'
                       f'L{x + 4},{y - 4}" stroke="{COLOURS[1]}" stroke-width="1.5">'
                       f"<title>{tip}, not kept</title></path>")  # fmt: skip
    out.append("</svg>")
    return "\n".join(out)
