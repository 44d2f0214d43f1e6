from __future__ import annotations

import datetime as dt

import pytest

from tests.support.history import ARCH, NUM_CU, add_find, make_configs, session
from tuna.errors import NotFoundError, TunaError
from tuna.library.best import best_configs, best_report, target_history, why_none
from tuna.sessions.history import retire, set_rules
from tuna.sessions.rules import HistoryRules, parse_max_age


def test_best_is_the_fastest_row_across_compatible_sessions(db):
    h = make_configs(db)
    a, b = session(db), session(db)
    direct, tunable = h.solvers["NoopDirect"], h.solvers["NoopTunable"]
    add_find(db, a, h.configs[0], direct, 2.0)
    add_find(db, b, h.configs[0], tunable, 1.5, perf_params="tile=8")  # find row has no params
    add_find(db, a, h.configs[1], tunable, 0.7, params="tile=4", perf_params="tile=2")
    add_find(db, b, h.configs[1], direct, 0.9)
    report = best_report(db, session=a)
    got = {(b.key, b.solver, b.params, b.time_ms, b.session) for b in report.best}
    assert got == {
        (h.keys[0], "NoopTunable", "tile=8", 1.5, b),
        (h.keys[1], "NoopTunable", "tile=4", 0.7, a),  # the find row's params win
    }
    doc = report.document()
    assert doc["target"] == {"session": a, "arch": ARCH, "num_cu": NUM_CU, "backend": "noop"}
    assert [p["key"] for p in doc["problems"]] == sorted(h.keys[:2])


def test_a_retired_session_leaves_best_and_unretire_brings_it_back(db):
    h = make_configs(db)
    a, b = session(db), session(db)
    add_find(db, a, h.configs[0], h.solvers["NoopDirect"], 2.0)
    add_find(db, b, h.configs[0], h.solvers["NoopTunable"], 1.0)
    assert best_report(db, session=a).best[0].session == b
    retire(db, b)
    assert best_report(db, session=a).best[0].session == a
    report = best_report(db, arch=ARCH, num_cu=NUM_CU)
    assert [x.session for x in report.best] == [a]
    assert report.document()["excluded_sessions"][str(b)] == "retired"


def test_rules_decide_and_nothing_compatible_says_which_rule_excluded_what(db):
    h = make_configs(db)
    target = session(db)
    old = session(db, library_commit="old")
    add_find(db, old, h.configs[0], h.solvers["NoopDirect"], 1.0, age_s=3 * 86400)
    with pytest.raises(NotFoundError, match=r"rule library excluded 1 find row\(s\).*--library"):
        best_report(db, session=target)
    set_rules(db, target, HistoryRules(library="same"))
    with pytest.raises(NotFoundError, match="rule library excluded 1"):
        best_report(db, session=target)
    set_rules(db, target, HistoryRules(library="any", max_age=parse_max_age("1d")))
    with pytest.raises(NotFoundError, match=r"rule max_age excluded 1 find row\(s\)"):
        best_report(db, session=target)
    # the command line's rules override the stored ones
    found = best_report(db, session=target, rule_changes={"max_age": parse_max_age("7d")})
    assert [x.session for x in found.best] == [old]
    retire(db, old)
    with pytest.raises(NotFoundError, match="rule retired excluded 1 find row.*unretire"):
        best_report(db, arch=ARCH, num_cu=NUM_CU)


def test_no_find_rows_and_bad_targets_are_clear_errors(db):
    h = make_configs(db)
    a = session(db)
    with pytest.raises(NotFoundError, match="no find rows at all"):
        best_report(db, session=a)
    with pytest.raises(NotFoundError, match="no config is tagged 'nope'"):
        best_report(db, session=a, tag="nope")
    with pytest.raises(TunaError, match="-s SESSION, or -a ARCH and -n CUS"):
        best_report(db, arch=ARCH)
    with pytest.raises(TunaError, match="-a gfx942: session"):
        best_report(db, session=a, arch="gfx942")
    with pytest.raises(NotFoundError, match="session 99 does not exist"):
        best_report(db, session=99)
    session(db, backend="cpuconv")
    with pytest.raises(TunaError, match="backends cpuconv, noop: give --backend"):
        best_report(db, arch=ARCH, num_cu=NUM_CU)
    add_find(db, a, h.configs[2], h.solvers["NoopDirect"], 3.0)
    found = best_report(db, arch=ARCH, num_cu=NUM_CU, backend="noop", tag="net")
    assert [x.key for x in found.best] == [h.keys[2]]


def test_ties_go_to_the_solver_miopen_orders_first(db):
    h = make_configs(db)
    a, b = session(db), session(db)
    add_find(db, a, h.configs[0], h.solvers["NoopTunable"], 1.0)
    add_find(db, b, h.configs[0], h.solvers["NoopDirect"], 1.0)
    with db.session() as s:
        history = target_history(s, session=a, rules=HistoryRules(library="any"))
        found = best_configs(s, history, [h.configs[0]])
    assert found[h.configs[0]].solver == "NoopDirect"  # numeric id 1 before 2


def test_best_applies_the_sessions_platform_rules_as_effort_and_load_jobs_do(db):
    """Issue #24: with a rule user.cooling=liquid, `tuna best -s N` and the library returned
    a time measured on an air-cooled platform; a find row counts when its time was measured
    on a platform that counts (a row with no such measurement, e.g. imported, does not)."""
    import tuna.library
    from tests.support.history import add_measurements, add_platform

    h = make_configs(db)
    a, b = session(db), session(db)
    liquid = add_platform(db, {"user": {"cooling": "liquid"}})
    air = add_platform(db, {"user": {"cooling": "air"}})
    direct, tunable = h.solvers["NoopDirect"], h.solvers["NoopTunable"]
    add_measurements(db, a, h.configs[0], direct, [2.0], platform=liquid)
    add_find(db, a, h.configs[0], direct, 2.0, params="p0")
    add_measurements(db, b, h.configs[0], tunable, [1.0], platform=air)
    add_find(db, b, h.configs[0], tunable, 1.0, params="p0")
    add_find(db, b, h.configs[1], tunable, 0.5, params="imported")  # measured nowhere known
    assert sorted(x.time_ms for x in best_report(db, session=a).best) == [0.5, 1.0]  # no rule
    set_rules(db, a, HistoryRules(platform={"user.cooling": "liquid"}))
    assert [(x.session, x.time_ms) for x in best_report(db, session=a).best] == [(a, 2.0)]
    with tuna.library.open(db.url.render_as_string(hide_password=False), session=a) as lib:
        found = lib.best(h.keys[0])
        assert found is not None and (found.session, found.time_ms) == (a, 2.0)
        assert lib.best(h.keys[1]) is None
    with db.session() as s:
        history = target_history(s, session=a)
        assert why_none(s, history, [h.configs[1]]) == {"platform user.cooling": 1}


def test_max_age_is_one_definition_for_best_and_the_skips(db):
    """Issue #24: with --max-age 1m, `best` left rows out by the exact time while load_jobs
    --min-trials still counted them by day. Ages count in whole days everywhere: a row
    counts when it was taken on or after the cutoff's date."""
    from tests.support.history import add_measurements, add_platform
    from tuna.library.effort import tuned_enough

    h = make_configs(db)
    a = session(db)
    direct = h.solvers["NoopDirect"]
    add_measurements(db, a, h.configs[0], direct, [1.0] * 3, platform=add_platform(db, {}))
    add_find(db, a, h.configs[0], direct, 1.0, params="p0", age_s=120)
    set_rules(db, a, HistoryRules(max_age=parse_max_age("1m")))
    with db.session() as s:
        history = target_history(s, session=a)
        skipped = tuned_enough(s, history, 3, [h.configs[0]])
        best = best_configs(s, history, [h.configs[0]])
        today = history.since is not None and history.since.date() == history.now.date()
    assert bool(skipped) == bool(best) == today  # both count the row, or neither
    assert history.since is not None and history.since.time() == dt.time(0)
