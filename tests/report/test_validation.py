"""The validation figure (tuna.report.validation): predicted against measured, one panel
per stat, drawn from a Validation as values (no database)."""

from __future__ import annotations

import pytest

from tuna.errors import TunaError
from tuna.report.validation import draw_validation, figure_path
from tuna.searches.validation import ValidatedRun, Validation


def validation() -> Validation:
    chosen = ValidatedRun(3, {"x": 1}, {"mflop": 400.0, "accuracy": 90.5},
                          {"mflop": 420.0, "accuracy": 90.4}, {"mflop": 420.0, "accuracy": 89.1},
                          None, False)  # fmt: skip
    seed = ValidatedRun(0, {"x": 2}, None, {"mflop": 600.0, "accuracy": 91.0},
                        {"mflop": 600.0, "accuracy": 91.2}, None, True)  # fmt: skip
    base = ValidatedRun(-1, {"x": 0}, None, {"mflop": 1000.0, "accuracy": 91.3},
                        {"mflop": 1000.0, "accuracy": 91.4}, None, True)  # fmt: skip
    return Validation(7, "net", "test", ("mflop", "accuracy"), [chosen, seed], base)


def test_an_svg_has_a_panel_per_stat_and_says_what_was_not_predicted(tmp_path) -> None:
    out = draw_validation(validation(), tmp_path / "v.svg")
    text = out.read_text()
    assert "search 7 'net': its front on the 'test' inputs, 1 of 2 kept" in text
    for stat in ("mflop", "accuracy"):
        assert f"{stat}, predicted when chosen" in text and f"{stat}, measured" in text
        assert f"{stat}: 3 runs; 2 not predicted (drawn at their tuning value)" in text
    assert "measured, 'test' inputs (not kept)" in text  # run 3 lost the threshold


def test_a_png_is_drawn_and_another_suffix_is_refused_before_drawing(tmp_path) -> None:
    png = draw_validation(validation(), tmp_path / "v.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(TunaError, match=r"v\.pdf: draw the validation to a \.png or \.svg file"):
        figure_path(tmp_path / "v.pdf")
    assert not (tmp_path / "v.pdf").exists()
