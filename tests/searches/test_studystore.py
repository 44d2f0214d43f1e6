"""Where a study lives (tuna.searches.studystore): its session, its search row, its runs."""

from __future__ import annotations

import pytest
from sqlalchemy import select

import tuna
from tests.support.wait import wait_until
from tuna.db.models import Search, SearchRun, TuningSession
from tuna.searchers import Run
from tuna.searchers.errors import SearchError
from tuna.searches import studystore
from tuna.searches.studyspec import check_study
from tuna.searches.studystore import (
    LABEL,
    ClaimHeartbeat,
    claim_trial,
    end_search,
    extend_trials,
    finish_trial,
    open_search,
    record_run,
    recorded,
    stored_runs,
    trial_state,
)


def _spec(space=None, name="s"):
    return check_study(None, space or {"x": [1, 2, 3]}, "min", None, None, name, "value")


def test_studies_share_one_bench_session_and_are_found_again_by_name(db):
    first, second = open_search(db, _spec(name="a")), open_search(db, _spec(name="b"))
    assert first != second and open_search(db, _spec(name="a")) == first
    with db.session() as s:
        sessions = s.execute(select(TuningSession.label, TuningSession.backend)).all()
        assert [tuple(r) for r in sessions] == [(LABEL, "bench")]


def test_a_study_opened_again_with_another_space_is_refused(lite):
    open_search(lite, _spec())
    with pytest.raises(SearchError, match="was made with another space, strategy or objective"):
        open_search(lite, _spec({"x": [1, 2]}))


def test_recorded_runs_read_back_and_an_ended_search_is_reopened_active(lite):
    spec = _spec()
    search = open_search(lite, spec)
    assert not recorded(lite, search, 0)
    record_run(lite, search, -1, {"x": 3}, Run({"x": 3}, {"value": 0.0}), spec.objective)
    record_run(lite, search, 0, {"x": 1}, Run({"x": 1}, {"value": 4.0}), spec.objective)
    record_run(lite, search, 1, {"x": 2}, Run.invalid({"x": 2}, "boom"), spec.objective)
    assert recorded(lite, search, 0) and recorded(lite, search, 1)
    end_search(lite, search, "stopped", "interrupted")
    with lite.session() as s:
        row = s.get(Search, search)
        assert (row.state, row.reason) == ("stopped", "interrupted")
    runs, _ = stored_runs(lite, search)  # the baseline (-1) left out
    assert [(r.valid, r.reason) for r in runs] == [(True, None), (False, "boom")]
    assert runs[0].stats == {"value": 4.0}
    assert open_search(lite, spec) == search
    with lite.session() as s:
        assert s.get(Search, search).state == "active"


ELSEWHERE = "asked by pid 4242 on another-host"  # a process this host cannot see
POINT = {"x": 1}


def _as(monkeypatch, owner):
    """Act as the process ``owner`` names (its claims carry that name)."""
    monkeypatch.setattr(studystore, "claim_owner", lambda: owner)


def _claims(db, search):
    with db.session() as s:
        rows = s.execute(
            select(SearchRun.seq, SearchRun.reason).where(
                SearchRun.search == search, SearchRun.valid.is_(None)
            )
        )
        return {int(seq): reason for seq, reason in rows}


def test_a_claim_whose_lease_lapsed_is_taken_over_and_a_live_one_is_not(db, monkeypatch):
    """A process on another host that died holding trials: its claims are never released by
    the pid check (this host cannot see it). The one whose lease lapsed (no heartbeat for a
    minute) is taken over by the next process that asks it; the one still on its lease is
    not, and the process that lost its claim cannot fill it any more."""
    search = open_search(db, _spec())
    mine = studystore.claim_owner()
    with monkeypatch.context() as m:
        _as(m, ELSEWHERE)
        assert claim_trial(db, search, 0, POINT, POINT, lease_seconds=-60)  # lapsed
        assert claim_trial(db, search, 1, POINT, POINT, lease_seconds=3600)  # alive
    assert trial_state(db, search, 0) is None  # nobody's: the next to ask takes it
    assert trial_state(db, search, 1) == ELSEWHERE
    assert claim_trial(db, search, 0, POINT, POINT)
    assert not claim_trial(db, search, 1, POINT, POINT)
    assert _claims(db, search) == {0: mine, 1: ELSEWHERE}
    assert trial_state(db, search, 0) == mine
    objective = _spec().objective
    with monkeypatch.context() as m:
        _as(m, ELSEWHERE)  # the first owner comes back: trial 0 is not its own any more
        assert not finish_trial(db, search, 0, Run(POINT, {"value": 9.0}), objective)
    assert finish_trial(db, search, 0, Run(POINT, {"value": 1.0}), objective)
    runs, _ = stored_runs(db, search)
    assert [(r.config, r.stats) for r in runs] == [(POINT, {"value": 1.0})]


def test_opening_a_study_drops_lapsed_claims_and_keeps_live_ones(db, monkeypatch):
    space = {"x": [1, 2, 3]}
    with tuna.study("held", space, storage=db) as study:
        search = study.search
    with monkeypatch.context() as m:
        _as(m, ELSEWHERE)
        assert claim_trial(db, search, 0, POINT, POINT, lease_seconds=-60)
        assert claim_trial(db, search, 1, {"x": 2}, {"x": 2}, lease_seconds=3600)
    with tuna.study("held", space, storage=db) as study:
        assert _claims(db, search) == {1: ELSEWHERE}  # the lapsed claim dropped on open
        assert [study.ask().number, study.ask().number] == [0, 2]  # 1 is the other's


def test_the_heartbeat_keeps_a_claim_alive(db, monkeypatch):
    """A claim near its end (here past it) is extended by its own process's heartbeat, and
    then no other process can take it; another process's claim is not extended."""
    search = open_search(db, _spec())
    assert claim_trial(db, search, 0, POINT, POINT, lease_seconds=-60)
    with monkeypatch.context() as m:
        _as(m, ELSEWHERE)
        assert claim_trial(db, search, 1, POINT, POINT, lease_seconds=-60)
    beat = ClaimHeartbeat(db, search, lease_seconds=3600, interval=0.01)
    beat.start()
    try:
        wait_until(lambda: trial_state(db, search, 0) is not None, "the heartbeat's extension")
    finally:
        beat.stop()
    assert trial_state(db, search, 1) is None  # not this process's: left to lapse
    assert extend_trials(db, search, 3600) == 1  # holds one claim
    with monkeypatch.context() as m:
        _as(m, ELSEWHERE)
        assert not claim_trial(db, search, 0, POINT, POINT)


def test_a_study_dropped_without_closing_stops_its_heartbeat(lite):
    """Its claims then lapse as a dead process's would; no thread beats on for ever."""
    import gc
    import threading

    def beats():
        return {t for t in threading.enumerate() if t.name == "tuna-study-beat"}

    before = beats()
    study = tuna.study("dropped", {"x": [1, 2]}, storage=lite)
    (mine,) = beats() - before
    del study
    gc.collect()
    wait_until(lambda: not mine.is_alive(), "the dropped study's heartbeat to end")
