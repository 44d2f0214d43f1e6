"""tuna.tune with several objectives, constraints and a baseline; the stored answer (the
Pareto front) read back as `tuna search show` and the dashboard read it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import func, select

import tuna
from tuna.db import Database
from tuna.db.models import Search, SearchRun, TuningSession
from tuna.errors import TunaError
from tuna.searches import query

SPACE = {"level": [0, 1, 2, 3, 4], "width": [1, 2]}
EXACT = {"level": 0, "width": 2}


def approximate(p):
    """Faster and less accurate the higher the level; a wider unit costs time, buys accuracy."""
    return {
        "time_ms": 20.0 - 4 * p["level"] + 3 * p["width"],
        "accuracy": 90.0 - p["level"] ** 2 * 0.5 + 0.2 * p["width"],
        "calls": 1,
    }


TWO = {"time_ms": "min", "accuracy": "max"}
WITHIN_3 = ["accuracy >= baseline.accuracy - 3"]


def _counts(db: Database) -> tuple[int, int, int]:
    with db.session() as s:
        return tuple(  # type: ignore[return-value]
            s.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (TuningSession, Search, SearchRun)
        )


def _configs(runs) -> list[dict]:
    return [dict(r.config) for r in runs]


def test_the_front_of_valid_runs_agrees_with_what_search_show_reads(db):
    result = tuna.tune(approximate, SPACE, directions=TWO, constraints=WITHIN_3,
                       baseline=EXACT, storage=db)  # fmt: skip
    assert result.baseline is not None and result.baseline.stats["accuracy"] == 90.4
    # level 3 loses 4.5 accuracy: ineligible; every other point with width 1 is dominated
    # by nothing (it is faster), with width 2 it is more accurate: all on the front.
    expected = [
        {"level": 2, "width": 1}, {"level": 2, "width": 2}, {"level": 1, "width": 1},
        {"level": 1, "width": 2}, {"level": 0, "width": 1}, EXACT, EXACT,
    ]  # fmt: skip
    assert _configs(result.pareto) == expected
    assert result.best is not None and dict(result.best.config) == {"level": 2, "width": 1}
    assert len(result.runs) == 10  # the baseline is not a proposal
    summary = query.find_search(db, result.search)
    assert summary.objectives_text == "time_ms:min, accuracy:max"
    stored = query.pareto(db, summary)
    # The baseline (seq -1) is a measured run like the others: first of its equals.
    assert [r.point for r in stored] == expected
    assert [r.seq for r in stored][-2:] == [-1, 1]
    top = query.best_run(db, summary)
    assert top is not None and top.point == {"level": 2, "width": 1}
    assert summary.best == 15.0  # the best time among the runs that count (level 4 does not)
    rows = {r.seq: r for r in query.runs(db, summary, limit=None)}
    assert not summary.counts(rows[8].valid, rows[8].value, rows[8].stats)  # level 4, width 1
    assert summary.objective.unmet(tuna.searchers.Run({}, rows[8].stats)) == (
        "accuracy >= baseline.accuracy - 3: not met"
    )


def test_the_study_resumes_without_measuring_the_baseline_again(lite):
    calls = []

    def counted(p):
        calls.append(dict(p))
        if len(calls) == 4:
            raise KeyboardInterrupt
        return approximate(p)

    kw = {"directions": TWO, "constraints": WITHIN_3, "baseline": EXACT, "storage": lite}
    with pytest.raises(KeyboardInterrupt):
        tuna.tune(counted, SPACE, name="resumed", **kw)
    assert calls[0] == EXACT
    result = tuna.tune(counted, SPACE, name="resumed", **kw)
    assert calls.count(EXACT) == 2  # the baseline, then its own point of the space
    assert len(calls) == 1 + 10 + 1  # each point once (the interrupted one again)
    assert _configs(result.pareto)[-1] == EXACT
    with pytest.raises(TunaError, match="another space, strategy or objective"):
        tuna.tune(counted, SPACE, name="resumed", **{**kw, "constraints": ["accuracy >= 80"]})


def test_one_objective_is_the_special_case(lite):
    result = tuna.tune(lambda p: p["level"] * 1.0 + p["width"], SPACE, storage=lite, name="one")
    assert _configs(result.pareto) == [{"level": 0, "width": 1}]
    assert result.best == result.pareto[0]
    summary = query.find_search(lite, result.search)
    assert not summary.reads_stats
    assert [r.point for r in query.pareto(lite, summary)] == [{"level": 0, "width": 1}]
    with lite.session() as s:  # stored as single objectives always were
        assert s.execute(select(Search.objective)).scalar_one() == {
            "stat": "value", "goal": "min", "valid": None,
        }  # fmt: skip


def test_a_constraint_without_a_baseline(lite):
    result = tuna.tune(approximate, SPACE, directions=TWO, constraints=["time_ms <= 14"],
                       storage=lite)  # fmt: skip
    assert all(r.stats["time_ms"] <= 14 for r in result.pareto)
    # Each a trade-off: (7, 82.2), (10, 82.4), (11, 85.7), (14, 85.9); level 2 takes 15 ms.
    assert _configs(result.pareto) == [
        {"level": 4, "width": 1}, {"level": 4, "width": 2},
        {"level": 3, "width": 1}, {"level": 3, "width": 2},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        (
            {"directions": {"time_ms": "down"}},
            "objective 'time_ms': direction 'down'; use 'min' or 'max'",
        ),
        ({"directions": {}}, "no objective: name at least one stat"),
        ({"directions": TWO, "stat": "t"}, "as directions= or as stat=, not both"),
        ({"constraints": ["accuracy >="]}, "constraint 'accuracy >=': not an expression"),
        ({"constraints": ["accuracy >= baseline.accuracy"]}, "but no baseline is given"),
        ({"baseline": {"level": 0}}, "misses 'width'"),
        ({"baseline": {"level": 0, "width": 1, "depth": 3}}, "names no parameter 'depth'"),
        (
            {"directions": {"time": "min"}, "baseline": EXACT},
            "the objective's stat 'time' is not in the baseline's output (the baseline printed: "
            "accuracy, calls, time_ms)",
        ),
        (
            {"directions": TWO, "constraints": ["qos_loss <= 3"], "baseline": EXACT},
            "the objective's stat 'qos_loss' is not in the baseline's output",
        ),
        (
            {"directions": TWO, "constraints": ["accuracy >= baseline.acc - 1"], "baseline": EXACT},
            "the constraint's stat 'acc' is not in the baseline's output",
        ),
        (
            {"directions": TWO, "baseline": {"level": 9, "width": 9}},
            "the baseline {'level': 9, 'width': 9} is invalid (objective raised KeyError",
        ),
    ],
)
def test_bad_input_is_one_clear_error_and_stores_nothing(lite, kw, message):
    def picky(p):
        if p["level"] == 9:
            raise KeyError("level 9")
        return approximate(p)

    with pytest.raises(TunaError) as e:
        tuna.tune(picky, SPACE, storage=lite, **kw)
    assert message in str(e.value)
    assert "\n" not in str(e.value)
    assert _counts(lite) == (0, 0, 0)


def test_a_constraint_stat_no_run_prints_fails_the_search(lite):
    with pytest.raises(TunaError, match="the objective's stat 'qos' is in no run's output"):
        tuna.tune(approximate, SPACE, directions=TWO, constraints=["qos < 1"], storage=lite)


def test_ask_and_tell_asks_the_baseline_first(lite):
    kw = {"directions": TWO, "constraints": WITHIN_3, "baseline": EXACT, "storage": lite}
    with tuna.study("loop", SPACE, **kw) as s:
        first = s.ask()
        assert first is not None and (first.number, first.params) == (-1, EXACT)
        with pytest.raises(TunaError, match="tell the baseline \\(trial -1\\) before asking"):
            s.ask()
        with pytest.raises(TunaError, match="the objective's stat 'accuracy' is not in the "):
            s.tell(first, {"time_ms": 1.0})  # refused: stores nothing, asked again
        s.tell(first, approximate(first.params))
        while (trial := s.ask()) is not None:
            s.tell(trial, approximate(trial.params))
    result = s.result()
    assert result.baseline is not None and result.baseline.stats["accuracy"] == 90.4
    assert len(result.runs) == 10 and len(result.pareto) == 7
    with lite.session() as db:
        seqs = db.execute(select(SearchRun.seq).order_by(SearchRun.seq)).scalars().all()
    assert seqs == list(range(-1, 10))


def test_the_docs_example_runs_and_prints_what_the_page_says(tmp_path, monkeypatch, capsys):
    page = (Path(__file__).parents[2] / "docs/tutorials/benchmark-search.md").read_text()
    section = page.split("### Several objectives, constraints and a baseline", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    shown = re.search(r"It prints `([^`]*)`", section)
    assert shown is not None
    monkeypatch.setenv("TUNA_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("TUNA_DB_URL", raising=False)
    for _ in range(2):  # the second run resumes the study: the same answer, nothing re-run
        exec(compile(code, "benchmark-search.md", "exec"), {"__name__": "docs"})
        assert capsys.readouterr().out.strip() == shown.group(1)


def test_the_budget_counts_the_runs_of_the_space_not_the_baseline(lite):
    result = tuna.tune(approximate, SPACE, directions=TWO, constraints=WITHIN_3,
                       baseline=EXACT, budget=3, storage=lite, name="budget")  # fmt: skip
    assert len(result.runs) == 3 and result.baseline is not None
    assert _counts(lite)[2] == 4  # the baseline's run and three others
