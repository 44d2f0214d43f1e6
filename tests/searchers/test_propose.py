"""The Proposer: points checked, merged over the base, filtered by META_is_config_valid."""

from __future__ import annotations

from typing import Any

import pytest

from tuna.searchers import (
    Bisect,
    CartesianProduct,
    HookError,
    ParameterSpace,
    Proposer,
    Run,
    SearcherError,
    SearcherInterface,
    Step,
    UnknownParameterError,
    default_searcher,
)
from tuna.searchers.builtin import Proposals
from tuna.searchers.propose import REFUSED
from tuna.searchers.space import parse_python_space


class Yields(SearcherInterface):
    """A user's searcher that yields the points it is given."""

    def __init__(self, *points: Any) -> None:
        self.points = points

    @property
    def is_dynamic(self) -> bool:
        return False

    def generate(self) -> Proposals:
        yield from self.points


def test_points_merge_over_the_base_config() -> None:
    space = ParameterSpace({"a": [1, 2]})
    got = Proposer(space, base={"a": 0, "mode": "fast"}).proposals()
    assert [(p.index, p.point, p.config) for p in got] == [
        (0, {"a": 1}, {"a": 1, "mode": "fast"}),
        (1, {"a": 2}, {"a": 2, "mode": "fast"}),
    ]


def test_searcher_yielding_unknown_parameters_is_refused_before_anything_runs() -> None:
    space = ParameterSpace({"a": [1]}, source="p.py")
    proposer = Proposer(space, Yields({"a": 1}, {"a": 1, "threads": 4}))
    with pytest.raises(UnknownParameterError) as e:
        proposer.proposals()
    assert str(e.value).startswith("p.py: Yields yielded 'threads', which is not a parameter")


def test_searcher_that_raises_is_a_searcher_error() -> None:
    space = ParameterSpace({"a": []}, source="p.py")
    proposer = Proposer(space, Bisect("a", 0, 10, 1, predicate=lambda r: r.stats["nope"]))
    first = proposer.start()
    assert first is not None
    with pytest.raises(SearcherError, match="p.py: searcher Bisect raised KeyError: 'nope'"):
        proposer.send(Run(first.config))


def test_refused_configs_are_skipped_for_static_and_sent_back_for_dynamic() -> None:
    text = "a = [1, 2, 3, 4]\ndef META_is_config_valid(c):\n    return c['a'] % 2 == 0\n"
    space = parse_python_space(text, "p.py")
    static = Proposer(space)
    assert [p.point["a"] for p in static.proposals()] == [2, 4]
    assert [r.config["a"] for r in static.refused] == [1, 3]
    assert all(not r.valid and r.reason == REFUSED for r in static.refused)

    seen: list[Run] = []

    def pred(r: Run) -> bool:
        seen.append(r)
        return True

    dynamic = Proposer(space, Step("a", 1, 4, lambda v: v + 1, predicate=pred))
    p = dynamic.start()
    assert p is not None and p.point == {"a": 2}  # 1 was refused and sent back as invalid
    assert [(r.config["a"], r.valid) for r in seen] == [(1, False)]


def test_step_with_predicate_ends_on_a_refused_config() -> None:
    text = "a = []\ndef META_is_config_valid(c):\n    return c['a'] != 3\n"
    space = parse_python_space(text, "p.py")
    proposer = Proposer(space, Step("a", 1, 5, lambda v: v + 1, predicate=lambda r: r.valid))
    points = []
    p = proposer.start()
    while p is not None:
        points.append(p.point["a"])
        p = proposer.send(Run(p.config))
    assert points == [1, 2]


def test_dynamic_proposer_needs_runs() -> None:
    proposer = Proposer(ParameterSpace({"a": []}), Bisect("a", 0, 8, 1, lambda r: True))
    proposer.start()
    with pytest.raises(SearcherError, match="is dynamic: send the Run"):
        proposer.send(None)
    with pytest.raises(SearcherError, match="its points depend on the Runs"):
        Proposer(ParameterSpace({"a": []}), Bisect("a", 0, 8, 1, lambda r: True)).proposals()


def test_default_searcher() -> None:
    assert isinstance(default_searcher(ParameterSpace({"a": [1]})), CartesianProduct)
    with pytest.raises(SearcherError, match="parameter\\(s\\) 'q' list no values"):
        default_searcher(ParameterSpace({"a": [1], "q": []}))
    space = parse_python_space(
        "from tuna.searchers import Step\nx = []\n"
        "def META_search_callback():\n    return Step('x', 1, 3, lambda v: v + 1)\n",
        "p.py",
    )
    assert [p.point for p in Proposer(space).proposals()] == [{"x": 1}, {"x": 2}, {"x": 3}]
    bad = parse_python_space("x = [1]\ndef META_search_callback():\n    return 3\n", "p.py")
    with pytest.raises(HookError, match="META_search_callback: returned 3; return a searcher"):
        default_searcher(bad)
    raising = parse_python_space("x = [1]\ndef META_search_callback():\n    1/0\n", "p.py")
    with pytest.raises(HookError, match="META_search_callback: raised ZeroDivisionError"):
        default_searcher(raising)


def test_past_runs_callback_from_a_file() -> None:
    text = (
        "x = []\n"
        "def META_search_callback(past_runs):\n"
        "    return None if len(past_runs) == 3 else {'x': len(past_runs) * 10}\n"
    )
    proposer = Proposer(parse_python_space(text, "p.py"))
    assert proposer.dynamic
    got = []
    p = proposer.start()
    while p is not None:
        got.append(p.point["x"])
        p = proposer.send(Run(p.config, {"t": 1}))
    assert got == [0, 10, 20]


def test_a_past_runs_callback_that_returns_a_searcher_is_the_search() -> None:
    """Issue #24: the MLPerf autotuner's own Bisect example failed with "PastRunsCallback
    yielded Bisect(...), not a dict"; a callback taking past_runs and returning a searcher
    is the document's form."""
    text = (
        "from library import Bisect\n"
        "qps = []\n"
        "def META_search_callback(past_runs):\n"
        "    return Bisect('qps', 100, 1000, 100, lambda r: r.stats['valid'])\n"
    )
    proposer = Proposer(parse_python_space(text, "p.py"))
    got = []
    p = proposer.start()
    while p is not None:
        got.append(p.point["qps"])
        p = proposer.send(Run(p.config, {"valid": p.point["qps"] <= 700}))
    assert got == [500, 800, 600, 700]
    assert proposer.searcher.get_best() == {"qps": 700}
