from __future__ import annotations

import datetime as dt
import random

import pytest
from sqlalchemy import select

from tests.support.history import add_find, make_configs, session
from tuna.db.models import FindDb
from tuna.errors import NotFoundError, TunaError
from tuna.sessions import get_session
from tuna.sessions.history import (
    RetiredSessionError,
    Target,
    check_not_retired,
    eligibility,
    retire,
    rules_of,
    set_rules,
    unretire,
)
from tuna.sessions.rules import HistoryRules, excluded_by, parse_max_age


def test_retire_and_unretire_keep_the_rows(db):
    h = make_configs(db)
    s1 = session(db)
    add_find(db, s1, h.configs[0], h.solvers["NoopDirect"], 1.0)
    row = retire(db, s1, "bad clocks")
    assert row.retired is not None and row.retired_reason == "bad clocks"
    assert get_session(db, s1).retired is not None
    with pytest.raises(TunaError, match=f"already retired.*tuna session unretire -s {s1}"):
        retire(db, s1)
    with pytest.raises(RetiredSessionError, match=f"retired \\(bad clocks\\).*unretire -s {s1}"):
        check_not_retired(get_session(db, s1), "export")
    with db.session() as s:
        assert s.scalar(select(FindDb.time_ms).where(FindDb.session == s1)) == 1.0
    back = unretire(db, s1)
    assert back.retired is None and back.retired_reason is None
    check_not_retired(back, "export")
    with pytest.raises(TunaError, match="not retired"):
        unretire(db, s1)


def test_retiring_an_unknown_session_is_a_clear_error(db):
    with pytest.raises(NotFoundError, match="session 42 does not exist.*tuna session list"):
        retire(db, 42)
    with pytest.raises(NotFoundError, match="session 42 does not exist"):
        unretire(db, 42)


def test_rules_are_stored_with_the_session(db):
    make_configs(db)
    s1 = session(db)
    assert rules_of(get_session(db, s1)) == HistoryRules()
    rules = HistoryRules(library="version", max_age=parse_max_age("30d"), platform={"gpu": "x"})
    set_rules(db, s1, rules)
    assert rules_of(get_session(db, s1)) == rules
    assert get_session(db, s1).history_rules == {
        "library": "version", "max_age": "30d", "platform": {"gpu": "x"},
    }  # fmt: skip


def test_eligibility_says_which_rule_excluded_each_session(db):
    make_configs(db)
    target = session(db)
    same = session(db)
    other_commit = session(db, library_commit="def")
    other_arch = session(db, arch="gfx942")
    retired = session(db)
    retire(db, retired)
    with db.session() as s:
        found = eligibility(s, get_session(db, target))
        assert target in found.sessions and same in found.sessions
        assert found.excluded[other_commit] == "library"
        assert found.excluded[other_arch] == "arch"
        assert found.excluded[retired] == "retired"
        assert found.since is None
        lines = "\n".join(found.explain())
        assert f"retired: session(s) {retired}" in lines
        loose = eligibility(s, get_session(db, target), HistoryRules(library="version"),
                            include_target=False)  # fmt: skip
        assert other_commit in loose.sessions and target not in loose.sessions
        with pytest.raises(TunaError, match="--library any"):
            eligibility(s, Target("gfx90a", 104, "noop"), HistoryRules(library="same"))
        anyone = eligibility(s, Target("gfx90a", 104, "noop"))
        assert set(anyone.sessions) >= {target, same, other_commit}
        assert anyone.excluded[other_arch] == "arch"


def test_sql_and_python_agree_on_every_row(db):
    """Eligibility.where (SQL) selects exactly the rows excluded_by (Python) lets count."""
    h = make_configs(db)
    rng = random.Random(7)
    sessions = [session(db), session(db, library_commit="def"), session(db), session(db)]
    retire(db, sessions[3])
    solver = h.solvers["NoopDirect"]
    for i, sid in enumerate(sessions):
        for j, config in enumerate(h.configs):
            add_find(db, sid, config, solver, 1.0 + i + j, age_s=rng.choice([0, 3600, 5 * 86400]))
    target = get_session(db, sessions[0])
    for rules in (
        HistoryRules(),
        HistoryRules(library="any", max_age=parse_max_age("2d")),
        HistoryRules(library="same", max_age=parse_max_age("30m")),
    ):
        with db.session() as s:
            found = eligibility(s, target, rules)
            chosen = set(
                s.execute(
                    select(FindDb.id).where(*found.where(FindDb.session, FindDb.created))
                ).scalars()
            )
            expected = set()
            for fid, sid, created in s.execute(select(FindDb.id, FindDb.session, FindDb.created)):
                src = get_session(db, sid)
                rule = excluded_by(
                    rules, target, src, retired=src.retired is not None, taken=created,
                    now=found.now,
                )  # fmt: skip
                if rule is None:
                    expected.add(fid)
                assert found.counts(sid, created) == (rule is None)
        assert chosen == expected, rules
        assert chosen, rules  # each case selects something and leaves something out
        assert len(chosen) < 4 * len(h.configs), rules


def test_max_age_cutoff_comes_from_the_database_clock(db):
    make_configs(db)
    sid = session(db)
    with db.session() as s:
        found = eligibility(s, get_session(db, sid), HistoryRules(max_age=parse_max_age("1h")))
    assert found.since is not None
    # the start of the day an hour ago (ages count in whole days)
    assert found.since == dt.datetime.combine((found.now - dt.timedelta(hours=1)).date(), dt.time())
