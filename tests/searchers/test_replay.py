"""Resume by replay: after k recorded runs, the next proposal is the uninterrupted search's."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from tuna.searchers import (
    Bisect,
    CartesianProduct,
    Composer,
    ParameterSpace,
    Proposer,
    Random,
    ReplayError,
    Run,
    SearcherInterface,
    Step,
    replay,
)

SPACE = ParameterSpace(
    {"qps": [], "streams": [1, 2, 3], "batch": [256, 512, 1024]}, no_rebuild=("qps", "streams")
)
BASE = {"qps": 400, "streams": 1, "batch": 1024, "mode": "server"}


def bench(config: dict[str, Any]) -> Run:
    """A deterministic benchmark: valid while qps stays under a capacity."""
    capacity = 500 * config["streams"] * (1024 / config["batch"]) ** 0.5
    if config["batch"] == 512 and config["streams"] == 2:
        return Run.invalid(config, "run exited with status 1")
    return Run(config, {"valid": config["qps"] <= capacity, "qps": config["qps"]})


def ok(r: Run) -> bool:
    return r.valid and bool(r.stats["valid"])


SEARCHERS: dict[str, Callable[[], SearcherInterface]] = {
    "product": lambda: CartesianProduct(SPACE),
    "random": lambda: Random(SPACE, 6, seed=7),
    "step": lambda: Step("streams", 1, 3, lambda s: s + 1, predicate=ok),
    "bisect": lambda: Bisect("qps", 100, 3000, 100, predicate=ok),
    "composer": lambda: Composer(
        [
            Bisect("qps", 100, 3000, 100, predicate=ok),
            Step("streams", 1, 3, lambda s: s + 1),
            Step("batch", 1024, 256, lambda b: b // 2),
        ],
        timeout=40,
    ),
}


def uninterrupted(make: Callable[[], SearcherInterface]) -> list[tuple[dict[str, Any], Run]]:
    proposer = Proposer(SPACE, make(), BASE)
    out = []
    p = proposer.start()
    while p is not None:
        run = bench(p.config)
        out.append((p.point, run))
        p = proposer.send(run)
    return out


@pytest.mark.parametrize("name", sorted(SEARCHERS))
def test_replay_resumes_exactly_where_the_search_stopped(name: str) -> None:
    full = uninterrupted(SEARCHERS[name])
    assert len(full) >= 3
    for k in range(len(full) + 1):
        resumed = replay(SPACE, [run for _, run in full[:k]], SEARCHERS[name](), BASE)
        rest = []
        p = resumed.next
        while p is not None:
            run = bench(p.config)
            rest.append((p.point, run))
            p = resumed.proposer.send(run)
        assert rest == full[k:], f"{name}: resumed after {k} runs"


@pytest.mark.parametrize("name", ["product", "random"])
def test_static_replay_takes_recorded_runs_in_any_order(name: str) -> None:
    full = uninterrupted(SEARCHERS[name])
    done = [run for _, run in full]
    random.Random(3).shuffle(done)
    recorded = done[: len(done) // 2]
    resumed = replay(SPACE, recorded, SEARCHERS[name](), BASE)
    rest = []
    p = resumed.next
    while p is not None:
        rest.append(p.point)
        p = resumed.proposer.send(None)
    assert rest == [pt for pt, run in full if run not in recorded]


def test_replay_refuses_runs_the_searcher_would_not_have_proposed() -> None:
    full = uninterrupted(SEARCHERS["bisect"])
    runs = [run for _, run in full]
    changed = Bisect("qps", 100, 5000, 100, predicate=ok)  # the file changed since
    with pytest.raises(ReplayError, match="recorded run 0 ran \\{'qps': 1500\\} but the searcher"):
        replay(SPACE, runs, changed, BASE)
    with pytest.raises(ReplayError, match="runs are recorded but the searcher ends after"):
        replay(SPACE, runs + runs[-1:], SEARCHERS["bisect"](), BASE)


def test_resuming_a_large_static_search_is_one_pass(monkeypatch) -> None:
    # Counted, not timed: a scan of the recorded Runs per proposal would compare 20,000
    # proposals with up to 10,000 Runs each; one pass compares each recorded Run once.
    compared = 0
    matches = Run.matches

    def counting(run: Run, point) -> bool:
        nonlocal compared
        compared += 1
        return matches(run, point)

    monkeypatch.setattr(Run, "matches", counting)
    space = ParameterSpace({"a": list(range(100)), "b": list(range(100)), "c": [True, 1]})
    recorded = [
        Run({"a": a, "b": b, "c": c})
        for a in range(100)
        for b in range(0, 100, 2)
        for c in (True, 1)
    ]
    resumed = replay(space, recorded)
    rest = []
    p = resumed.next
    while p is not None:
        rest.append(p)
        p = resumed.proposer.send(None)
    assert compared <= len(recorded)
    assert len(rest) == 10_000 and all(p.point["b"] % 2 == 1 for p in rest)
    assert [p.index for p in rest[:3]] == [2, 3, 6]  # indices as in the uninterrupted search
    assert len(resumed.proposer.skip) == 0
