"""The pure translations of a strategy's ``search_build.params`` (tuna/jobs/search_values.py)."""

from __future__ import annotations

import pytest

from tuna.jobs.search_values import final_runs, round_candidates


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"candidates": ["1,2", "3,4"], "final": True, "runs": [5, -1]}, {5: "1,2", -1: "3,4"}),
        ({"candidates": ["1,2"], "final": True}, {}),  # a final job stored before the runs
        ({"candidates": ["1,2"], "seqs": [7], "round": 7}, {}),  # a round
    ],
)
def test_a_final_jobs_runs_pair_with_its_candidates(params, expected) -> None:
    assert final_runs(params) == expected


def test_a_final_job_with_more_runs_than_candidates_is_refused() -> None:
    with pytest.raises(ValueError):
        final_runs({"candidates": ["1,2"], "final": True, "runs": [1, 2]})


def test_a_rounds_candidates_pair_with_their_seqs_or_count_from_its_round() -> None:
    assert round_candidates({"candidates": ["a", "b"], "seqs": [4, 9]}) == {4: "a", 9: "b"}
    assert round_candidates({"candidates": ["a", "b"], "round": 3}) == {3: "a", 4: "b"}
