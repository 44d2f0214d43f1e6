from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tuna.dashboard.svg import (
    Series,
    Validated,
    front_chart,
    nice_ticks,
    step_chart,
    validation_chart,
)

NS = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (0, 10, [0, 2, 4, 6, 8, 10]),
        (3.2, 9.7, [2, 4, 6, 8, 10]),
        (0, 1, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (120, 480, [100, 200, 300, 400, 500]),
        (5, 5, [4.4, 4.6, 4.8, 5.0, 5.2, 5.4, 5.6]),
    ],
)
def test_nice_ticks_are_round_and_cover_the_range(lo, hi, expected):
    assert nice_ticks(lo, hi) == pytest.approx(expected)


@given(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6))
@example(0.0, 5e-324)  # a span that underflows to a zero step
@example(6.0, -5e-324)  # lo / step underflows to -0.0: the first tick must still be below
@example(1e6, 1e6 + 1e-7)  # ends closer than the axis can tell apart
def test_nice_ticks_always_cover_the_range(a, b):
    ticks = nice_ticks(a, b)
    assert ticks[0] <= min(a, b) and ticks[-1] >= max(a, b)
    assert ticks == sorted(ticks) and 2 <= len(ticks) <= 13


def test_a_step_chart_has_a_title_axis_labels_a_legend_and_one_step_line_per_series():
    svg = step_chart(
        [
            Series("random <seeded>", [(1, 10.0), (4, 6.0)], until=8, dots=[(1, 10.0), (2, 12.0)]),
            Series("bisect", [(2, 9.0)], until=5),
        ],
        title="Best p95 so far",
        xlabel="measurements (count)",
        ylabel="p95 (ms)",
        chart_id="best",
    )
    root = ET.fromstring(svg)  # well-formed, labels escaped
    texts = {t.get("class"): t.text for t in root.iter(f"{NS}text") if t.get("class")}
    assert texts["title"] == "Best p95 so far"
    assert texts["xlabel"] == "measurements (count)" and texts["ylabel"] == "p95 (ms)"
    legend = [t.text for g in root.iter(f"{NS}g") for t in g.iter(f"{NS}text")]
    assert legend == ["random <seeded>", "bisect"]
    paths = {p.get("data-label"): p for p in root.iter(f"{NS}path")}
    assert set(paths) == {"random <seeded>", "bisect"}
    assert paths["random <seeded>"].get("data-best") == "6.0"
    assert paths["random <seeded>"].get("data-until") == "8"
    # M first corner, then H to the next x and V to its y, then on to `until`.
    d = paths["random <seeded>"].get("d")
    assert re.fullmatch(r"M[\d.]+,[\d.]+H[\d.]+V[\d.]+H[\d.]+", d), d
    xs = [float(v) for v in re.findall(r"[MH]([\d.]+)", d)]
    assert xs == sorted(xs) and len(xs) == 3
    # The lower best is drawn lower (SVG's y grows downwards).
    y_first, y_last = float(d.split(",")[1].split("H")[0]), float(d.rsplit("V", 1)[1].split("H")[0])
    assert y_last > y_first
    assert len(list(root.iter(f"{NS}circle"))) == 2


def test_a_chart_with_nothing_that_counts_says_so():
    svg = step_chart([Series("s", [], until=3)], title="t", xlabel="x (count)", ylabel="y (ms)")
    root = ET.fromstring(svg)
    assert [t.text for t in root.iter(f"{NS}text") if t.get("class") == "empty"] == [
        "no measurement counts yet"
    ]
    assert not list(root.iter(f"{NS}path"))


def test_a_long_legend_label_is_cut_to_the_margin_with_its_full_text_as_a_title():
    long = "strategy:annealing-with-a-very-long-descriptive-name-" + "x" * 80
    svg = ET.fromstring(step_chart(
        [Series(long, [(0.0, 5.0), (3.0, 2.0)], until=4.0), Series("short", [(0.0, 4.0)], 1.0)],
        title="t", xlabel="x", ylabel="y", width=760,
    ))  # fmt: skip
    legends = svg.findall(f"{NS}g[@class='legend']")
    assert [g.find(f"{NS}title").text for g in legends] == [long, "short"]
    cut, short = (g.find(f"{NS}text") for g in legends)
    assert short.text == "short" and cut.text.endswith("…") and long.startswith(cut.text[:-1])
    # The text starts at x and its characters are at most CHAR_PX wide: it ends inside.
    from tuna.dashboard.svg import CHAR_PX

    assert float(cut.get("x")) + CHAR_PX * len(cut.text) <= 760
    path = svg.find(f"{NS}path[@class='series']")
    assert path.get("data-label") == long


def test_a_best_so_far_chart_spanning_orders_of_magnitude_is_on_a_log_axis():
    """A first measurement of 900 flattened 3, 2.5 and 2 into one line on a linear axis."""
    svg = ET.fromstring(step_chart(
        [Series("s", [(1.0, 900.0), (2.0, 3.0), (3.0, 2.5), (4.0, 2.0)], until=4.0)],
        title="t", xlabel="x", ylabel="best time_ms (ms)",
    ))  # fmt: skip
    texts = {t.get("class"): t.text for t in svg.iter(f"{NS}text") if t.get("class")}
    assert texts["ylabel"] == "best time_ms (ms) (log scale)"
    ticks = [t.text for t in svg.iter(f"{NS}text") if t.get("class") == "ytick"]
    assert ticks[0] == "1" and ticks[-1] == "1000" and "10" in ticks and "100" in ticks
    d = svg.find(f"{NS}path[@class='series']").get("d")
    ys = [float(v) for v in re.findall(r"V([\d.]+)", d)]
    assert ys[1] - ys[0] > 5 and ys[2] - ys[1] > 5  # 3 -> 2.5 -> 2 apart (0.1 px when linear)
    xs = [t.text for t in svg.iter(f"{NS}text") if t.get("class") == "xtick"]
    assert all(float(x).is_integer() for x in xs)


def test_a_front_chart_places_the_front_within_its_axes_and_escapes_labels():
    markup = front_chart(
        [(30.0, 80.0), (50.0, 85.0)],
        [(10.0, 82.0, "run 1: a=<1>"), (40.0, 90.0, "run 2: a=2")],
        baseline=(40.0, 90.0),
        title="front",
        xlabel="time_ms",
        ylabel="accuracy",
    )
    svg = ET.fromstring(markup)
    ns = "{http://www.w3.org/2000/svg}"
    front = svg.findall(f"{ns}circle[@class='front-run']")
    assert [c.find(f"{ns}title").text for c in front] == ["run 1: a=<1>", "run 2: a=2"]
    xs = [float(c.get("cx")) for c in front]
    ys = [float(c.get("cy")) for c in front]
    assert 70 <= xs[0] < xs[1] <= 730 and 30 <= ys[1] < ys[0] <= 292  # up is more accurate
    ring = svg.find(f"{ns}circle[@class='baseline']")
    assert ring is not None and (float(ring.get("cx")), float(ring.get("cy"))) == (xs[1], ys[1])
    assert len(svg.findall(f"{ns}circle[@class='run']")) == 2
    assert svg.find(f"{ns}path[@class='front']") is not None


def test_a_front_chart_of_nothing_says_so():
    svg = ET.fromstring(front_chart([], [], title="t", xlabel="x", ylabel="y"))
    empty = svg.find("{http://www.w3.org/2000/svg}text[@class='empty']")
    assert empty is not None and empty.text == "no run counts yet"


def test_a_validation_chart_puts_predicted_across_and_measured_up_on_one_scale():
    runs = [
        Validated(10.0, 10.0, 12.0, True, "run 1 <a>"),  # measured more than predicted
        Validated(20.0, 18.0, 30.0, False, "run 2"),  # not kept there
        Validated(15.0, 15.0, None, False, "run 3"),  # failed on the second inputs
    ]
    svg = ET.fromstring(validation_chart(runs, title="t", xlabel="x", ylabel="y", inputs="test"))
    tuned = svg.findall(f"{NS}circle[@class='tuned']")
    assert [c.find(f"{NS}title").text for c in tuned] == [
        "run 1 <a>: tuning inputs", "run 2: tuning inputs", "run 3: tuning inputs"]  # fmt: skip
    kept = svg.findall(f"{NS}circle[@class='kept']")
    lost = svg.findall(f"{NS}path[@class='lost']")
    assert len(kept) == 1 and len(lost) == 1  # run 3 has no second measurement to draw
    assert kept[0].get("cx") == tuned[0].get("cx")  # the same run, across
    assert float(kept[0].get("cy")) < float(tuned[0].get("cy"))  # measured higher: drawn up
    equal = svg.find(f"{NS}line[@class='equal']")
    assert equal is not None
    x1, y1, x2, y2 = (float(equal.get(k)) for k in ("x1", "y1", "x2", "y2"))
    assert x2 > x1 and y2 < y1  # up and to the right
    # y = x is the diagonal: a run measured as predicted lies on it
    on = Validated(20.0, 20.0, 20.0, True, "r")
    one = ET.fromstring(validation_chart([on], title="t", xlabel="x", ylabel="y", inputs="i"))
    line, dot = one.find(f"{NS}line[@class='equal']"), one.find(f"{NS}circle[@class='tuned']")
    lx1, ly1, lx2, ly2 = (float(line.get(k)) for k in ("x1", "y1", "x2", "y2"))
    cx, cy = float(dot.get("cx")), float(dot.get("cy"))
    assert cy == pytest.approx(ly1 + (cx - lx1) * (ly2 - ly1) / (lx2 - lx1))


def test_a_validation_chart_of_nothing_says_so():
    svg = ET.fromstring(validation_chart([], title="t", xlabel="x", ylabel="y", inputs="i"))
    empty = svg.find(f"{NS}text[@class='empty']")
    assert empty is not None and empty.text == "nothing measured"
