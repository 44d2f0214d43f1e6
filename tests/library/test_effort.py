from __future__ import annotations

from sqlalchemy import func, select, text

from tests.support.history import (
    add_measurements,
    add_platform,
    make_configs,
    session,
)
from tuna.db.models import Measurement
from tuna.jobs.load import load_jobs
from tuna.library.effort import counting_measurements, session_effort, tuned_enough
from tuna.sessions import get_session
from tuna.sessions.history import eligibility, retire, set_rules
from tuna.sessions.rules import HistoryRules, parse_max_age

MI250 = {"gpu": {"model": "MI250X"}, "cpu": {"cores": 64}}
MI300 = {"gpu": {"model": "MI300X"}, "cpu": {"cores": 96}}


def test_effort_counts_per_problem_solver_platform_and_strategy(db):
    h = make_configs(db)
    a, b = session(db), session(db)
    p1, p2 = add_platform(db, MI250), add_platform(db, MI300)
    direct = h.solvers["NoopDirect"]
    add_measurements(db, a, h.configs[0], direct, [3.0, None, 2.0], platform=p1)
    add_measurements(db, b, h.configs[0], direct, [1.5], platform=p1, strategy="random")
    add_measurements(db, b, h.configs[0], direct, [1.0, 4.0], platform=p2)
    rows, history = session_effort(db, a)
    got = [(r.key, r.solver, r.platform, r.strategy, r.measurements, r.valid, r.best_ms)
           for r in rows]  # fmt: skip
    assert got == [
        (h.keys[0], "NoopDirect", p1, "exhaustive", 3, 2, 2.0),
        (h.keys[0], "NoopDirect", p1, "random", 1, 1, 1.5),
        (h.keys[0], "NoopDirect", p2, "exhaustive", 2, 2, 1.0),
    ]
    assert rows[0].platform_digest and rows[0].first <= rows[0].last
    assert history.rules == HistoryRules()
    set_rules(db, a, HistoryRules(platform={"gpu.model": "MI300X"}))
    rows, history = session_effort(db, a)
    assert [(r.platform, r.measurements) for r in rows] == [(p2, 2)]
    assert history.excluded_platforms == {p1: "platform gpu.model"}
    retire(db, b)
    assert session_effort(db, a, tag="net")[0] == []


def test_tuned_enough_applies_every_rule(db):
    h = make_configs(db)
    a, b = session(db), session(db)
    p1 = add_platform(db, MI250)
    direct, tunable = h.solvers["NoopDirect"], h.solvers["NoopTunable"]
    add_measurements(db, b, h.configs[0], direct, [1.0] * 4, platform=p1)
    add_measurements(db, b, h.configs[1], direct, [1.0] * 2, platform=p1)
    # two days old: older than max_age 1h even at day granularity, whatever the hour now
    add_measurements(db, b, h.configs[1], direct, [None] * 2, platform=p1, age_s=2 * 86400)
    add_measurements(db, b, h.configs[1], tunable, [1.0] * 9, platform=p1)

    def enough(rules: HistoryRules | None = None, n: int = 4):
        with db.session() as s:
            history = eligibility(s, get_session(db, a), rules)
            return tuned_enough(s, history, n, h.configs)

    assert enough() == {(h.configs[0], direct): 4, (h.configs[1], direct): 4,
                        (h.configs[1], tunable): 9}  # fmt: skip
    assert enough(n=5) == {(h.configs[1], tunable): 9}
    young = HistoryRules(max_age=parse_max_age("1h"))
    assert enough(young) == {(h.configs[0], direct): 4, (h.configs[1], tunable): 9}
    assert enough(HistoryRules(platform={"gpu.model": "MI300X"})) == {}
    retire(db, b)
    assert enough() == {}


def test_load_jobs_min_trials_skips_what_is_tuned_enough_unless_forced(db):
    h = make_configs(db)
    a = session(db)
    p1 = add_platform(db, MI250)
    tunable = h.solvers["NoopTunable"]
    add_measurements(db, a, h.configs[0], tunable, [1.0] * 5, platform=p1)
    second = session(db)
    plain = load_jobs(db, second, step="perf", tag="net", only_tunable=True, min_trials=5)
    assert (plain.tuned_enough, plain.inserted, plain.min_trials) == (1, 2, 5)
    third = session(db)
    more = load_jobs(db, third, step="perf", tag="net", only_tunable=True, min_trials=6)
    assert (more.tuned_enough, more.inserted) == (0, 3)
    fourth = session(db)
    forced = load_jobs(db, fourth, step="perf", tag="net", only_tunable=True, min_trials=5,
                       force=True)  # fmt: skip
    assert (forced.tuned_enough, forced.inserted) == (0, 3)
    with db.session() as s:
        assert s.scalar(select(func.count()).select_from(Measurement)) == 5


def test_counting_measurements_are_what_resume_and_transfer_read(db):
    h = make_configs(db)
    a, b, old = session(db), session(db), session(db, library_commit="old")
    p1 = add_platform(db, MI250)
    direct, tunable = h.solvers["NoopDirect"], h.solvers["NoopTunable"]
    add_measurements(db, a, h.configs[0], tunable, [2.0, None], platform=p1)
    add_measurements(db, b, h.configs[1], tunable, [1.0], platform=p1, age_s=2 * 86400)
    add_measurements(db, old, h.configs[2], tunable, [0.5], platform=p1)
    add_measurements(db, b, h.configs[1], direct, [0.1], platform=p1)

    def rows(rules=None, **kw):
        with db.session() as s:
            history = eligibility(s, get_session(db, a), rules)
            return list(counting_measurements(s, history, tunable, **kw))

    assert rows() == [(h.configs[0], "p0", 2.0, True), (h.configs[0], "p1", None, False),
                      (h.configs[1], "p0", 1.0, True)]  # fmt: skip
    assert rows(valid_only=True, configs=[h.configs[1]]) == [(h.configs[1], "p0", 1.0, True)]
    assert rows(HistoryRules(max_age=parse_max_age("1d")), valid_only=True) == [
        (h.configs[0], "p0", 2.0, True)
    ]
    assert len(rows(HistoryRules(library="version"))) == 4  # the old commit counts too
    retire(db, b)
    assert [r[0] for r in rows()] == [h.configs[0], h.configs[0]]


def test_the_effort_count_reads_the_counts_by_primary_key_ranges(mysql_url):
    """On MariaDB the count reads measurement_effort alone by its primary key (session
    first), also under max_age and platform rules: no measurement row is read."""
    from tests.support.seed import open_test_db
    from tuna.library.effort import tuned_query

    db = open_test_db(mysql_url)
    try:
        h = make_configs(db)
        a = session(db)
        p1 = add_platform(db, MI250)
        for config in h.configs:
            add_measurements(db, a, config, h.solvers["NoopDirect"], [1.0] * 20, platform=p1)
        rules = HistoryRules(max_age=parse_max_age("1d"), platform={"gpu.model": "MI250X"})
        with db.session() as s:
            history = eligibility(s, get_session(db, a), rules)
            for ids in (None, h.configs[:2]):
                q = tuned_query(history, 10, ids)
                sql = str(q.compile(s.get_bind(), compile_kwargs={"literal_binds": True}))
                plan = s.execute(text("EXPLAIN " + sql)).mappings().all()
                assert [(p["table"], p["key"]) for p in plan] == [
                    ("measurement_effort", "PRIMARY")
                ], plan
                assert plan[0]["type"] == "range", plan
                assert len(tuned_enough(s, history, 10, ids or h.configs)) == len(ids or h.configs)
    finally:
        db.dispose()


def test_effort_counts_match_the_rows_and_prune_keeps_them(db):
    """Every write adds to the counts, by day and strategy; pruning rows leaves the effort
    spent (load_jobs still skips what was tuned), retiring the session takes it out."""
    from tuna.db.models import MeasurementEffort
    from tuna.library.prune import prune

    h = make_configs(db)
    a, b = session(db), session(db)
    p1 = add_platform(db, MI250)
    direct = h.solvers["NoopDirect"]
    add_measurements(db, a, h.configs[0], direct, [1.0, None, 3.0], platform=p1)
    add_measurements(db, a, h.configs[0], direct, [2.0], platform=p1)
    add_measurements(db, a, h.configs[0], direct, [5.0], platform=p1, strategy=None)
    add_measurements(db, a, h.configs[0], direct, [4.0], platform=p1, age_s=3 * 86400)
    with db.session() as s:
        counts = sorted(
            (r.strategy, r.measurements, r.valid) for r in s.scalars(select(MeasurementEffort))
        )
    assert counts == [("", 1, 1), ("exhaustive", 1, 1), ("exhaustive", 4, 3)]

    def enough():
        with db.session() as s:
            return tuned_enough(s, eligibility(s, get_session(db, b)), 6, h.configs)

    assert enough() == {(h.configs[0], direct): 6}
    assert prune(db, 1).deleted == 5
    assert enough() == {(h.configs[0], direct): 6}
    retire(db, a)
    assert enough() == {}


def test_resume_and_transfer_read_the_one_session_index(mysql_url):
    """After migration 0017 the measurement table has one secondary index, (session,
    config, solver, platform): a resume reads through it (EXPLAIN) and a transfer's read
    by sessions may (the optimizer picks it or a scan, by how many rows the sessions have)."""
    from tests.support.seed import open_test_db
    from tuna.db.models import Measurement as M

    db = open_test_db(mysql_url)
    try:
        h = make_configs(db)
        sessions = [session(db) for _ in range(4)]
        p1 = add_platform(db, MI250)
        direct = h.solvers["NoopDirect"]
        for sid in sessions:
            for config in h.configs:
                add_measurements(db, sid, config, direct, [1.0] * 20, platform=p1)
        with db.session() as s:
            s.execute(text("ANALYZE TABLE measurement"))
            resume = select(M.params).where(
                M.session == sessions[0], M.config == h.configs[0], M.solver == direct,
                M.platform == p1,
            )  # fmt: skip
            transfer = select(M.config, M.params).where(
                M.session.in_(sessions[:1]), M.solver == direct
            )
            plans = []
            for q in (resume, transfer):
                sql = str(q.compile(s.get_bind(), compile_kwargs={"literal_binds": True}))
                plans.append(s.execute(text("EXPLAIN " + sql)).mappings().one())
            index = "ix_measurement_session_config_solver_platform"
            assert plans[0]["key"] == index, plans
            assert plans[1]["possible_keys"] == index, plans
    finally:
        db.dispose()
