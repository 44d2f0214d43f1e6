from __future__ import annotations

import csv
import xml.etree.ElementTree as ET

from tuna.report import figures
from tuna.report.figures import Curve

NS = "{http://www.w3.org/2000/svg}"


def test_a_best_so_far_chart_draws_a_line_per_curve_with_title_labels_legend_and_csv(tmp_path):
    a = Curve("bisect-rate (Bisect)", [5.0, None, 3.0, 4.0], [5.0, 5.0, 3.0, 3.0])
    b = Curve("random <seed 1>", [None, 9.0], [None, 9.0])
    fig = figures.best_so_far_chart(
        tmp_path, "progress", "Best p95 so far", [a, b],
        xlabel="measurements (count)", ylabel="best p95 (ms)",
        csv_header=["curve", "n", "best"], csv_rows=[("a", 1, 5.0), ("b", 2, 9.0)],
    )  # fmt: skip
    assert set(fig.files) == {"png", "svg", "csv"}
    svg = (tmp_path / fig.files["svg"]).read_text()
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter(f"{NS}text") if t.text]
    labels = ["Best p95 so far", "measurements (count)", "best p95 (ms)"]
    labels += ["bisect-rate (Bisect)", "random <seed 1>", "a measurement that counts"]
    for label in labels:
        assert label in texts, label
    assert 'id="legend_1"' in svg
    with (tmp_path / fig.files["csv"]).open() as f:
        assert list(csv.reader(f)) == [["curve", "n", "best"], ["a", "1", "5.0"], ["b", "2", "9.0"]]
