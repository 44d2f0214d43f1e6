"""A stored winner's repeated timings and whether they were stable (issue #24): what
``tuna best``, the report and ``tuna search show`` say beside a time."""

from __future__ import annotations

import pytest

from tests.support.history import add_find, add_measurements, add_platform, make_configs, session
from tuna.library.best import best_report
from tuna.library.stability import Spread, timing_spreads, unstable_note


def test_a_winners_spread_is_of_its_valid_timings_on_the_platform_it_was_stored_from(db):
    h = make_configs(db)
    a = session(db)
    solver = h.solvers["NoopTunable"]
    here, there = add_platform(db, {"host": "here"}), add_platform(db, {"host": "there"})
    add_measurements(db, a, h.configs[0], solver, [1.0, 3.0], platform=here)  # p0 p1
    add_measurements(db, a, h.configs[0], solver, [1.1, None], platform=here)  # p0 again, p1 bad
    add_measurements(db, a, h.configs[0], solver, [9.0], platform=there)  # p0 elsewhere, slow
    add_measurements(db, a, h.configs[1], solver, [2.0], platform=here)  # timed once
    with db.session() as s:
        found = timing_spreads(
            s,
            [
                ((a, h.configs[0], solver, "p0"), 1.0),
                ((a, h.configs[0], solver, "p1"), 3.0),  # its invalid run does not count
                ((a, h.configs[1], solver, "p0"), 2.0),
                ((a, h.configs[1], solver, "p9"), 2.0),  # never measured: absent
            ],
        )
    assert found == {
        (a, h.configs[0], solver, "p0"): Spread(2, pytest.approx(1.1)),
        (a, h.configs[0], solver, "p1"): Spread(1, 1.0),
        (a, h.configs[1], solver, "p0"): Spread(1, 1.0),
    }
    with db.session() as s:  # stored from the slow platform: its own timings count
        (there_spread,) = timing_spreads(s, [((a, h.configs[0], solver, "p0"), 9.0)]).values()
    assert there_spread == Spread(1, 1.0)


def test_stable_and_unstable_say_so_in_one_line():
    assert Spread(4, 1.05).note() == "4 runs, spread 1.05x"
    assert Spread(4, 1.62).note() == "4 runs, spread 1.62x: unstable"
    assert Spread(1, 1.0).note() == "1 run"
    assert unstable_note([Spread(4, 1.05), Spread(1, 1.0)]) == ""
    assert unstable_note([Spread(4, 1.05), Spread(4, 1.62), Spread(4, 1.3)]) == (
        "timings unstable: 2 of 3 winners' repeated runs spread more than 1.25x (up to "
        "1.62x: machine busy?); each time is its fastest run"
    )


def test_best_rows_carry_their_timings(db):
    h = make_configs(db)
    a = session(db)
    solver, on = h.solvers["NoopTunable"], add_platform(db, {})
    add_measurements(db, a, h.configs[0], solver, [1.0, 1.6, 1.2], platform=on)  # p0 p1 p2
    add_measurements(db, a, h.configs[0], solver, [1.5], platform=on)  # p0 re-timed, disturbed
    add_find(db, a, h.configs[0], solver, 1.0, params="p0")
    add_measurements(db, a, h.configs[1], solver, [2.0, 2.1], platform=on)
    add_measurements(db, a, h.configs[1], solver, [2.1], platform=on)  # p0 re-timed: steady
    add_find(db, a, h.configs[1], solver, 2.0, perf_params="p0")  # params from the perf row
    add_find(db, a, h.configs[2], solver, 3.0, params="imported")  # no timings kept
    report = best_report(db, session=a)
    timings = {p["key"]: (p["timings"], p["spread"], p["unstable"])
               for p in report.document()["problems"]}  # fmt: skip
    assert timings == {
        h.keys[0]: (2, 1.5, True),
        h.keys[1]: (2, 1.05, False),
        h.keys[2]: (0, None, False),
    }
    assert report.unstable_note().startswith("timings unstable: 1 of 2 best rows' ")
