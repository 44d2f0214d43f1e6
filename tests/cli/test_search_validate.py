"""`tuna search validate`: a tuna.tune study's front measured on its test inputs, printed,
stored, given as JSON and drawn; bad input is one Error line."""

from __future__ import annotations

import json

import pytest

from tests.searches.test_validation import study
from tuna.cli import main
from tuna.config import load_settings

FN = "tests.searches.test_validation:net"


@pytest.fixture
def search(runner) -> int:
    return study(load_settings().db_url).search


def test_it_prints_predicted_tuned_and_test_values_per_stat(runner, search) -> None:
    r = runner.invoke(main, ["search", "validate", "-s", "1", "net", "--objective-fn", FN])
    assert r.exit_code == 0, r.output
    lines = [x.rstrip() for x in r.output.splitlines()]
    assert lines[0] == "search 1 'net': front of 11 run(s) measured on the 'test' inputs; 10 kept"
    assert lines[1].split() == [
        "seq", "params", "mflop", "predicted", "mflop", "tuned", "mflop", "test", "accuracy",
        "predicted", "accuracy", "tuned", "accuracy", "test", "kept",
    ]  # fmt: skip
    cheapest = lines[2].split()
    assert cheapest[1] == "layer0=3,layer1=3,layer2=3"
    assert cheapest[3:5] == ["288", "288"] and cheapest[6:] == ["90.05", "89.15", "no"]
    baseline = next(x.split() for x in lines if x.split()[0] == "-1")
    assert baseline[2:] == ["-", "768", "768", "-", "92", "92", "yes"]
    assert len(lines) == 2 + 11


def test_json_holds_both_values_for_every_run(runner, search) -> None:
    r = runner.invoke(main, ["search", "validate", str(search), "--objective-fn", FN, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["inputs"] == "test" and doc["stats"] == ["mflop", "accuracy"]
    assert len(doc["front"]) == 11 and doc["baseline"]["seq"] == -1
    predicted = [f for f in doc["front"] if f["predicted"] is not None]
    assert len(predicted) == 8
    assert all(set(f["measured"]) == {"mflop", "accuracy"} for f in doc["front"])


def test_search_show_says_where_the_front_was_validated(runner, search) -> None:
    for inputs in ("test", "holdout"):
        r = runner.invoke(main, ["search", "validate", str(search), "--objective-fn", FN,
                                 "--inputs", inputs])  # fmt: skip
        assert r.exit_code == 0, r.output
    shown = runner.invoke(main, ["search", "show", str(search), "--limit", "1"])
    assert shown.exit_code == 0, shown.output
    lines = [x.strip() for x in shown.output.splitlines()]
    assert "validated on 'holdout': 11 runs (the front and the baseline), 11 kept (tuna search " \
        "validate)" in lines  # fmt: skip
    assert "validated on 'test': 11 runs (the front and the baseline), 10 kept (tuna search " \
        "validate)" in lines  # fmt: skip
    doc = json.loads(runner.invoke(main, ["search", "show", str(search), "--json"]).output)
    assert doc["validations"] == [{"inputs": "holdout", "runs": 11, "kept": 11},
                                  {"inputs": "test", "runs": 11, "kept": 10}]  # fmt: skip


def test_png_draws_predicted_against_measured(runner, search, tmp_path) -> None:
    out = tmp_path / "val.png"
    r = runner.invoke(main, ["search", "validate", str(search), "--objective-fn", FN,
                             "--png", str(out)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[-1] == f"figure: {out}"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Error: search 1 ('net'): give --objective-fn MODULE:FUNCTION, a function of "
         "(params, trial)"),
        (["--objective-fn", FN, "--stat", "acc"], "Error: stat 'acc' is not a stat of search "
         "1's front (its runs hold: accuracy, mflop); name one of those"),
        (["--objective-fn", FN, "--inputs", "tune"], "Error: inputs 'tune' is the set the study "
         "was tuned on"),
        (["--objective-fn", FN, "--png", "val.pdf"], "Error: val.pdf: draw the validation to a "
         ".png or .svg file"),
    ],
)  # fmt: skip
def test_bad_input_is_one_error_line(runner, search, args, message) -> None:
    r = runner.invoke(main, ["search", "validate", str(search), *args])
    assert r.exit_code == 1
    assert r.output.startswith(message) and r.output.count("\n") == 1


def test_a_command_search_is_validated_with_another_value_of_its_setting(runner, tmp_path):
    """`tuna search validate ID --set n=2`: the front built and run again here with the
    setting its command reads changed, printed and stored like a function's validation."""
    from tests.searches.helpers import drain, driving
    from tuna.db import open_database

    params = tmp_path / "params.json"
    params.write_text('{"a": [1, 2, 3]}')
    assert runner.invoke(main, ["session", "create", "--arch", "cpu", "--num-cu", "1",
                                "--backend", "bench"]).exit_code == 0  # fmt: skip
    r = runner.invoke(main, ["search", "create", str(params), "n=1", "-s", "1", "--name", "cmd",
                             "--run", 'echo "t: $(( {a} * {n} ))"; echo "acc: $(( 9 + {a} ))"',
                             "--objective", "t:min", "--objective", "acc:max"])  # fmt: skip
    assert r.exit_code == 0, r.output
    db = open_database(load_settings().db_url)
    try:
        with driving(db, 1):
            drain(db, 1)
    finally:
        db.dispose()
    r = runner.invoke(main, ["search", "validate", "1", "--set", "n=2", "--inputs", "double"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "search 1 'cmd': front of 3 run(s) measured on the 'double' inputs; 3 kept"
    assert lines[2].split() == ["0", "n=2,a=1", "-", "1", "2", "-", "10", "10", "yes"]
    r = runner.invoke(main, ["search", "validate", "1", "--set", "n=2", "--objective-fn", FN])
    assert r.exit_code == 1
    assert r.output.startswith("Error: --set goes with a search whose runs are commands")
    r = runner.invoke(main, ["search", "validate", "1"])
    assert r.exit_code == 1 and r.output.count("\n") == 1
    assert r.output.startswith("Error: search 1 ('cmd') runs commands: give the second input "
                               "set as other values of its settings (n)")  # fmt: skip
