"""Where a study lives (tuna.searches.studystore): its session, its search row, its runs."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tuna.db.models import Search, TuningSession
from tuna.searchers import Run
from tuna.searchers.errors import SearchError
from tuna.searches.studyspec import check_study
from tuna.searches.studystore import (
    LABEL,
    end_search,
    open_search,
    record_run,
    recorded,
    stored_runs,
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
