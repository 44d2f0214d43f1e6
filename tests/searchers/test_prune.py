"""Pruners and intermediate lines (issue #28): pure, table-driven, with a property test of
the line format."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuna.searchers.errors import SearchError
from tuna.searchers.prune import (
    HalvingPruner,
    MedianPruner,
    Peer,
    as_pruner,
    parse_intermediate,
    parse_pruner,
    pruner_from_json,
)


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("tuna:intermediate 3 0.25", (3, 0.25)),
        ("  tuna:intermediate 0 -1e3\n", (0, -1000.0)),
        ("tuna:intermediate 12 7", (12, 7.0)),
        ("loss: 0.3", None),
        ("tuna:intermediates 1 2", None),
        ("# tuna:intermediate 1 2", None),
        ("", None),
    ],
)
def test_intermediate_lines(line: str, found: tuple[int, float] | None) -> None:
    assert parse_intermediate(line) == found


@pytest.mark.parametrize(
    "line",
    [
        "tuna:intermediate",
        "tuna:intermediate 3",
        "tuna:intermediate x 0.5",
        "tuna:intermediate 1.5 0.5",
        "tuna:intermediate -1 0.5",
        "tuna:intermediate 2 nan",
        "tuna:intermediate 2 inf",
        "tuna:intermediate 2 0.5 extra",
    ],
)
def test_a_malformed_intermediate_line_is_one_clear_error(line: str) -> None:
    with pytest.raises(SearchError) as e:
        parse_intermediate(line)
    message = str(e.value)
    assert "\n" not in message and "tuna:intermediate STEP VALUE" in message
    assert repr(line.strip()) in message


@given(
    st.integers(min_value=0, max_value=10**9),
    st.floats(allow_nan=False, allow_infinity=False),
)
def test_every_step_and_value_reads_back(step: int, value: float) -> None:
    assert parse_intermediate(f"tuna:intermediate {step} {value!r}") == (step, value)


def completed(*values: float) -> Peer:
    return Peer(dict(enumerate(values)), completed=True)


def test_median_prunes_a_run_worse_than_the_completed_runs_median_at_its_step() -> None:
    pruner = MedianPruner(warmup_runs=3)
    peers = [completed(5, 4), completed(6, 3), completed(7, 2)]
    assert pruner.judge(0, 5.5, {}, peers, "min") is None  # median 6: better
    assert pruner.judge(1, 3.0, {0: 5.5}, peers, "min") is None  # equal to the median
    reason = pruner.judge(1, 3.5, {0: 5.5}, peers, "min")
    assert reason == (
        "pruned at step 1 by the median pruner: 3.5 is worse than the median 3 of 3 "
        "completed run(s) at that step"
    )
    assert pruner.judge(1, 3.5, {}, peers, "max") is None  # maximising: above is better
    assert pruner.judge(1, 2.5, {}, peers, "max") is not None


def test_median_waits_for_its_warm_up_runs_and_steps() -> None:
    peers = [completed(5, 4), completed(6, 3)]
    assert MedianPruner(warmup_runs=3).judge(1, 100.0, {}, peers, "min") is None
    assert MedianPruner(warmup_runs=2).judge(1, 100.0, {}, peers, "min") is not None
    assert MedianPruner(warmup_runs=2, warmup_steps=2).judge(1, 100.0, {}, peers, "min") is None
    # runs still running or pruned are not the median's reference
    others = [Peer({1: 0.0}), Peer({1: 0.0}, completed=False), *peers]
    assert MedianPruner(warmup_runs=3).judge(1, 100.0, {}, others, "min") is None


def test_halving_rungs() -> None:
    pruner = HalvingPruner(min_step=2, factor=3)
    assert [pruner.rung_step(k) for k in range(3)] == [2, 6, 18]
    assert [pruner.rung_of(s) for s in (0, 1, 2, 5, 6, 17, 18, 53, 54)] == [
        None, None, 0, 0, 1, 1, 2, 2, 3,
    ]  # fmt: skip
    assert pruner.value_at({1: 9.0, 3: 4.0, 7: 2.0}, 0) == 4.0  # first at or past step 2
    assert pruner.value_at({1: 9.0, 3: 4.0, 7: 2.0}, 1) == 2.0
    assert pruner.value_at({1: 9.0}, 0) is None


def test_halving_keeps_the_best_third_at_each_rung() -> None:
    pruner = HalvingPruner(min_step=1, factor=3)
    # the first run to reach a rung is the best there: it goes on
    assert pruner.judge(1, 5.0, {}, [], "min") is None
    # of two, only the better goes on (at least one is kept)
    assert pruner.judge(1, 6.0, {}, [Peer({1: 5.0})], "min") is not None
    assert pruner.judge(1, 4.0, {}, [Peer({1: 5.0})], "min") is None
    # six runs at rung 0: the best two go on
    peers = [Peer({1: v}) for v in (1.0, 2.0, 3.0, 4.0, 5.0)]
    assert pruner.judge(1, 1.5, {}, peers, "min") is None
    reason = pruner.judge(1, 2.5, {}, peers, "min")
    assert reason == (
        "pruned at step 1 by successive halving: 2.5 at rung 0 (step 1) is not among the "
        "best 2 of 6 run(s) there"
    )
    assert pruner.judge(1, 4.5, {}, peers, "max") is None  # maximising


def test_halving_judges_a_run_once_per_rung() -> None:
    pruner = HalvingPruner(min_step=1, factor=2)
    peers = [Peer({1: 0.0, 2: 0.0})]
    assert pruner.judge(1, 9.0, {}, peers, "min") is not None  # reaching rung 0
    # steps between rungs reach no new rung: nothing to judge
    assert pruner.judge(3, 9.0, {1: 0.0, 2: 0.0}, peers, "min") is None
    assert pruner.judge(4, 9.0, {1: 0.0, 2: 0.0, 3: 9.0}, peers, "min") is None  # alone at 4


@pytest.mark.parametrize(
    ("text", "pruner"),
    [
        ("median", MedianPruner()),
        ("median(warmup_runs=3, warmup_steps=2)", MedianPruner(3, 2)),
        (" median ( warmup_runs = 1 ) ", MedianPruner(1)),
        ("halving", HalvingPruner()),
        ("halving(min_step=4, factor=2)", HalvingPruner(4, 2)),
    ],
)
def test_written_pruners(text: str, pruner: object) -> None:
    found = parse_pruner(text)
    assert found == pruner
    assert pruner_from_json(found.to_json()) == found
    assert as_pruner(text) == found and as_pruner(found) is found
    assert parse_pruner(found.text) == found  # what tuna search show prints reads back


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("mean", "pruner 'mean': write 'median'"),
        ("median(warmup=3)", "'warmup=3' is not a setting of median (its settings: warmup_runs"),
        ("median(3)", "'3' is not a setting of median"),
        ("median(warmup_runs=x)", "warmup_runs='x': give an integer"),
        ("median(warmup_runs=0)", "pruner median: warmup_runs 0: give an integer >= 1"),
        ("halving(factor=1)", "pruner halving: factor 1: give an integer >= 2"),
        ("halving(min_step=0)", "pruner halving: min_step 0: give an integer >= 1"),
    ],
)
def test_a_bad_pruner_is_one_clear_error(text: str, says: str) -> None:
    with pytest.raises(SearchError) as e:
        parse_pruner(text)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_as_pruner_refuses_what_is_not_one() -> None:
    assert as_pruner(None) is None
    with pytest.raises(SearchError, match="pruner 3: give 'median', 'halving'"):
        as_pruner(3)
    with pytest.raises(SearchError, match="stored pruner"):
        pruner_from_json({"name": "nope"})


@pytest.mark.parametrize(
    ("pruner", "step", "curve", "judges"),
    [
        (MedianPruner(warmup_steps=2), 1, {}, False),
        (MedianPruner(warmup_steps=2), 2, {0: 1.0}, True),
        (HalvingPruner(1, 3), 0, {}, False),
        (HalvingPruner(1, 3), 1, {0: 1.0}, True),
        (HalvingPruner(1, 3), 2, {0: 1.0, 1: 1.0}, False),
        (HalvingPruner(1, 3), 3, {1: 1.0, 2: 1.0}, True),
        (HalvingPruner(1, 3), 5, {}, True),  # a first report past rung 0: reaches rung 1
    ],
)
def test_which_reports_can_stop_a_run(pruner, step, curve, judges) -> None:
    assert pruner.judges(step, curve) is judges
