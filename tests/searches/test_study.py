"""tuna.study: the ask/tell form of tuna.tune, a loop the user drives over a stored study."""

from __future__ import annotations

import functools
import json
import multiprocessing
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

import tuna
from tuna.db import Database
from tuna.db.models import Search, SearchRun
from tuna.errors import TunaError
from tuna.searches.query import find_search

SPACE = {"x": [1, 2, 3, 4, 5], "y": ["a", "b"]}


def quadratic(params):
    return (params["x"] - 3) ** 2 + (0.5 if params["y"] == "b" else 0.0)


def _rows(db: Database) -> list[SearchRun]:
    """The runs recorded (a trial asked and not told yet is a claim, valid NULL: left out)."""
    with db.session() as s:
        finished = select(SearchRun).where(SearchRun.valid.is_not(None))
        return list(s.execute(finished.order_by(SearchRun.seq)).scalars())


def _state(db: Database) -> tuple[str, str | None]:
    with db.session() as s:
        row = s.execute(select(Search)).scalar_one()
        return row.state, row.reason


def test_every_told_trial_is_a_finished_run_and_the_study_ends_done(db):
    with tuna.study("loop", SPACE, storage=db) as study:
        told = 0
        while (trial := study.ask()) is not None:
            study.tell(trial, quadratic(trial.params))
            told += 1
            assert len(_rows(db)) == told  # stored as it is told, not at the end
    assert told == 10 and study.state == "done"
    result = study.result()
    assert result.best_params == {"x": 3, "y": "a"} and result.best_value == 0.0
    rows = _rows(db)
    assert [r.seq for r in rows] == list(range(10))
    assert all(r.valid and r.finished is not None for r in rows)
    assert rows[0].point == {"x": 1, "y": "a"} and rows[0].value == 4.0
    summary = find_search(db, result.search)  # what `tuna search show` reads
    assert (summary.name, summary.state, summary.best) == ("loop", "done", 0.0)


def test_a_static_strategy_takes_several_trials_told_in_any_order(lite):
    study = tuna.study("batch", SPACE, storage=lite, strategy="Random(space, 6, seed=2)")
    batch = [study.ask() for _ in range(4)]
    assert [t.number for t in batch] == [0, 1, 2, 3]
    for trial in reversed(batch):
        study.tell(trial, {"value": quadratic(trial.params), "note": 1})
    assert sorted(r.seq for r in _rows(lite)) == [0, 1, 2, 3]
    assert {r.seq: r.point for r in _rows(lite)} == {t.number: t.params for t in batch}
    rest = [study.ask(), study.ask()]
    assert study.ask() is None and study.state == "active"  # two are still out
    for trial in rest:
        study.tell(trial, error="the benchmark crashed")
    assert study.state == "done" and _state(lite) == ("done", None)
    bad = [r for r in _rows(lite) if not r.valid]
    assert [r.reason for r in bad] == ["the benchmark crashed"] * 2 and len(_rows(lite)) == 6
    study.close()


def test_a_dynamic_strategy_needs_each_trial_told_before_the_next(lite):
    step = 'Step("t", 1, 64, lambda t: t * 2, lambda r: r.stats["value"] < 300)'
    study = tuna.study("steps", {"t": []}, storage=lite, strategy=step, direction="maximize")
    first = study.ask()
    assert first is not None and first.params == {"t": 1}
    with pytest.raises(TunaError, match="tell trial 0 before asking another"):
        study.ask()
    seen = []
    trial = first
    while trial is not None:
        seen.append(trial.params["t"])
        study.tell(trial, trial.params["t"] * 10)
        trial = study.ask()
    assert seen == [1, 2, 4, 8, 16, 32]  # 32 * 10 is where the predicate says stop
    assert study.result().best_params == {"t": 32} and study.state == "done"
    study.close()


def test_a_study_reopened_by_name_goes_on_and_asks_no_point_twice(db):
    first = tuna.study("resume", SPACE, storage=db)
    measured = []
    for _ in range(3):
        trial = first.ask()
        measured.append(trial.params)
        first.tell(trial, quadratic(trial.params))
    untold = first.ask()  # asked, never told: not stored, asked again on reopening
    first.close()
    assert _state(db)[0] == "stopped" and "tuna.study and the same name" in _state(db)[1]
    assert len(_rows(db)) == 3

    with tuna.study("resume", SPACE, storage=db) as again:
        assert len(again.runs) == 3  # the recorded runs, replayed
        trial = again.ask()
        assert trial.params == untold.params and trial.number == untold.number
        while trial is not None:
            measured.append(trial.params)
            again.tell(trial, quadratic(trial.params))
            trial = again.ask()
    assert len(measured) == 10 == len({tuple(sorted(p.items())) for p in measured})
    assert [r.seq for r in _rows(db)] == list(range(10))
    assert again.result().best_params == {"x": 3, "y": "a"} and _state(db)[0] == "done"


def test_a_budget_ends_the_study(lite):
    with tuna.study("short", SPACE, storage=lite, budget=3) as study:
        while (trial := study.ask()) is not None:
            study.tell(trial, quadratic(trial.params))
    assert len(_rows(lite)) == 3 and study.state == "done"


def test_leaving_the_with_block_on_an_exception_marks_the_study_stopped(lite):
    with pytest.raises(KeyboardInterrupt), tuna.study("ctrl-c", SPACE, storage=lite) as study:
        trial = study.ask()
        study.tell(trial, 1.0)
        study.ask()
        raise KeyboardInterrupt
    assert _state(lite)[0] == "stopped" and len(_rows(lite)) == 1
    with pytest.raises(TunaError, match="is closed"):
        study.ask()


@pytest.mark.parametrize(
    "how, message",
    [
        ("twice", "is not a trial waiting for its result"),
        ("text", "returned 'fast'; return a number or a dict of stats, or error="),
        ("object", "not JSON data"),
        ("other study", "is not a trial waiting for its result"),
        ("not a trial", "is not a trial waiting for its result"),
    ],
)
def test_a_wrong_tell_is_one_clear_error_and_stores_nothing(lite, how, message):
    study = tuna.study("tells", SPACE, storage=lite)
    trial = study.ask()
    if how == "twice":
        study.tell(trial, 1.0)
        with pytest.raises(TunaError, match=message):
            study.tell(trial, 2.0)
        assert [r.value for r in _rows(lite)] == [1.0]
        return
    with pytest.raises(TunaError, match=message):
        if how == "text":
            study.tell(trial, "fast")
        elif how == "object":
            study.tell(trial, {"value": 1.0, "when": object()})
        elif how == "other study":
            other = tuna.study("other", SPACE, storage=lite)
            study.tell(other.ask(), 1.0)
        else:
            study.tell({"x": 1, "y": "a"}, 1.0)
    assert _rows(lite) == []  # the trial stays claimed, nothing recorded
    study.tell(trial, 1.0)  # the trial still waits for its result
    assert len(_rows(lite)) == 1


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"name": ""}, "study name ''"),
        ({"space": {"x": []}}, "list no values"),
        ({"direction": "up"}, "use 'minimize' or 'maximize'"),
        ({"budget": -1}, "give at least 1 run"),
    ],
)
def test_bad_study_input_is_one_clear_error_and_stores_nothing(lite, kw, message):
    args = {"name": "s", "space": SPACE, "storage": lite, **kw}
    with pytest.raises(TunaError, match=message):
        tuna.study(**args)
    with lite.session() as s:
        assert s.execute(select(func.count()).select_from(Search)).scalar_one() == 0


def test_a_study_and_tune_share_one_stored_study(lite):
    """tuna.tune finishes what an ask/tell loop began under the same name, and back."""
    study = tuna.study("shared", SPACE, storage=lite)
    for _ in range(4):
        trial = study.ask()
        study.tell(trial, quadratic(trial.params))
    study.close()
    calls = []

    def objective(p):
        calls.append(p)
        return quadratic(p)

    result = tuna.tune(objective, SPACE, storage=lite, name="shared")
    assert len(calls) == 6 and len(result.runs) == 10
    with tuna.study("shared", SPACE, storage=lite) as done:
        assert done.ask() is None and len(done.runs) == 10


def test_two_opens_of_one_study_never_ask_the_same_trial(db):
    """Two opens of one study (two processes, say) propose the same points: a trial one
    asked is claimed, so the other passes it over; each records its own, none twice."""
    first = tuna.study("twice", SPACE, storage=db)
    second = tuna.study("twice", SPACE, storage=db)
    mine, theirs = first.ask(), second.ask()
    assert (mine.number, theirs.number) == (0, 1)
    assert mine.params != theirs.params
    second.tell(theirs, 2.0)
    first.tell(mine, 1.0)
    assert [(r.seq, r.value) for r in _rows(db)] == [(0, 1.0), (1, 2.0)]
    again = first.ask()  # passes over what the other recorded too
    assert again.number == 2
    second.close()  # another process still measures: the study stays active
    assert _state(db) == ("active", None)
    first.close()  # the last to close stops it, and drops its claim of trial 2
    assert _state(db)[0] == "stopped" and len(_rows(db)) == 2
    with tuna.study("twice", SPACE, storage=db) as third:
        assert third.ask().number == 2  # asked again


def test_a_claim_of_a_process_gone_is_asked_again(lite, monkeypatch):
    """A process killed while measuring leaves its trial claimed; the next process to open
    the study on this host drops the claim (its pid is gone) and asks the trial again."""
    from tuna.searches import studystore

    with tuna.study("killed", SPACE, storage=lite) as study:
        search = study.search
    point = {"x": 1, "y": "a"}
    dead = studystore.CLAIM.format(pid=_exited_pid(), host=socket.gethostname())
    with monkeypatch.context() as m:  # the claim as that process made it
        m.setattr(studystore, "claim_owner", lambda: dead)
        assert studystore.claim_trial(lite, search, 0, point, point)
    assert not studystore.claim_trial(lite, search, 0, point, point)  # held
    with tuna.study("killed", SPACE, storage=lite) as study:
        assert study.ask().number == 0


def _exited_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


WIDE = {"x": list(range(10)), "y": ["a", "b", "c", "d"]}  # 40 points


def _measure_logged(log: Path, barrier: Any, params: dict[str, Any]) -> float:
    """The objective of one process: its first call waits for the other process's first
    (so the two overlap), each call is logged."""
    if not log.exists():
        barrier.wait(timeout=120)
    with log.open("a") as f:
        f.write(json.dumps(params, sort_keys=True) + "\n")
    return float(params["x"]) + 0.1 * "abcd".index(params["y"])


def _tune_in_process(url: str, log: Path, barrier: Any, strategy: str | None) -> None:
    objective = functools.partial(_measure_logged, log, barrier)
    budget = None if strategy is None else 12
    tuna.tune(objective, WIDE, strategy=strategy, budget=budget, storage=url, name="shared")


@pytest.mark.parametrize("strategy", [None, "Strategy('tpe', space, round_size=1)"])
def test_two_processes_on_one_study_measure_every_point_once(db, tmp_path, strategy):
    """Issue #28: tuna.tune from two processes at once, the same storage and study name:
    every trial measured by exactly one of them, none lost; the study ends done. A
    searcher that needs each result (tpe, one trial a round) waits for the other's."""
    url = db.url.render_as_string(hide_password=False)
    fork = multiprocessing.get_context("fork")
    barrier = fork.Barrier(1 if strategy else 2)  # a dynamic searcher's second process
    logs = [tmp_path / "first.log", tmp_path / "second.log"]  # waits: no rendezvous
    procs = [fork.Process(target=_tune_in_process, args=(url, p, barrier, strategy))
             for p in logs]  # fmt: skip
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    calls = [line for p in logs if p.exists() for line in p.read_text().splitlines()]
    assert len(calls) == len(set(calls))  # no point measured twice
    rows = _rows(db)
    assert sorted(r.seq for r in rows) == list(range(40 if strategy is None else 12))
    assert len(calls) == len(rows)  # no trial lost, none left claimed
    with db.session() as s:
        assert s.execute(select(func.count()).select_from(SearchRun)).scalar_one() == len(rows)
    assert _state(db) == ("done", None)
    if strategy is None:  # both took part
        assert all(p.exists() for p in logs)
