"""The ``model`` strategy and its cost model: learning, transfer, validation, a missing library."""

from __future__ import annotations

import builtins
import itertools
import math
import statistics
from typing import Any

import pytest

from tuna.searchers import Run, SearcherError
from tuna.searchers.costmodel import (
    HistoryEntry,
    ModelLibraryMissing,
    capped_log_times,
    centred_log_times,
)
from tuna.searchers.run import Point
from tuna.searchers.strategies import CandidateSpace, ModelSearch, make_strategy

from .test_strategies import drive, flat, to_reach


def space() -> CandidateSpace:
    points = [
        {"MR": a, "NV": b, "VW": v, "KC": c}
        for a, b, v, c in itertools.product(
            (1, 2, 4, 6, 8), (1, 2, 3, 4), (4, 8), (64, 128, 256, 512)
        )
        if a * b <= 16
    ]
    return CandidateSpace(points, source="gemm-like")


def timing(k: float) -> Any:
    """A problem's times: the best register tile depends on the problem's feature ``k``
    (a wide problem wants MR*NV large, a narrow one small), vectors of 8 are faster, and
    the cache block wants to be near k * 64."""

    def cost(p: Point) -> float:
        tile = int(p["MR"]) * int(p["NV"])
        want = 4 * k
        return (
            (1.0 + abs(tile - want) / want)
            * (0.7 if p["VW"] == 8 else 1.0)
            * (1.0 + 0.15 * abs(int(p["KC"]).bit_length() - (6 + int(k))))
            * (10.0 * k)  # problems differ in scale: the model must not care
        )

    return cost


def history(ks: list[float]) -> list[HistoryEntry]:
    s = space()
    return [({"k": k}, p, timing(k)(p)) for k in ks for p in s.points]


def test_centred_log_times_remove_the_scale() -> None:
    a = centred_log_times([1.0, 2.0, 4.0])
    b = centred_log_times([100.0, 200.0, 400.0])
    assert a == pytest.approx(b)
    assert sum(a) == pytest.approx(0.0)


def test_capped_log_times_are_relative_to_the_best_and_capped() -> None:
    ys = capped_log_times([2.0, 4.0, 8.0, 100.0], cap=4.0)
    assert ys == pytest.approx([0.0, math.log(2), math.log(4), math.log(4)])
    assert capped_log_times([1.0, 2.0], cap=None) == pytest.approx(centred_log_times([1.0, 2.0]))


def test_derived_features_reach_the_trees() -> None:
    """A cost that depends only on a ratio of a parameter and the problem: with the ratio
    derived, the model's first informed round on a new problem is right at once."""
    s = space()

    def ratio(f: Any, p: Any) -> dict[str, float]:
        return {"fit": abs(int(p["MR"]) * int(p["NV"]) - 4 * f["k"])}

    hist = history([1.0, 2.1, 4.0])
    cost = timing(3.0)  # never seen: trees alone cannot interpolate k = 3 between 2.1 and 4
    best = min(cost(p) for p in s.points)
    kw: dict[str, Any] = {"features": {"k": 3.0}, "history": hist, "transfer": True}
    with_ratio = drive(make_strategy("model", s, derive=ratio, **kw), cost)
    assert to_reach(flat(with_ratio), best * 1.05, cost) is not None
    assert min(cost(p) for p in with_ratio[0]) <= best * 1.02  # without: 1.33x the best


def test_a_derived_feature_constant_on_every_row_changes_nothing() -> None:
    """cpuconv's loop-order panels are 0 on every row of a space without loop order 1 (issue
    #30): the transfer model must then rank exactly as without them, round for round. A
    derived feature that varies with a problem's scale does change the rounds, so the
    comparison can tell the two apart."""
    s = space()
    hist = history([1.0, 2.1, 4.0])
    cost = timing(3.0)
    kw: dict[str, Any] = {"features": {"k": 3.0}, "history": hist, "transfer": True}

    def tile(f: Any, p: Any) -> dict[str, float]:
        return {"tile": float(int(p["MR"]) * int(p["NV"]))}

    def with_zero(f: Any, p: Any) -> dict[str, float]:
        return {**tile(f, p), "panel": 0.0}

    def with_scale(f: Any, p: Any) -> dict[str, float]:
        return {**tile(f, p), "panel": f["k"] * int(p["KC"])}

    rounds = drive(make_strategy("model", s, derive=tile, **kw), cost)
    assert drive(make_strategy("model", s, derive=with_zero, **kw), cost) == rounds
    assert drive(make_strategy("model", s, derive=with_scale, **kw), cost) != rounds


def test_the_model_ranks_from_its_own_measurements_better_than_random() -> None:
    cost = timing(2.0)
    best = min(cost(p) for p in space().points)

    def median(name: str, **kw: Any) -> float:
        return statistics.median(
            to_reach(
                flat(drive(make_strategy(name, space(), seed=s, **kw), cost)), best * 1.02, cost
            )
            or 999
            for s in range(5)
        )

    assert median("model", features={"k": 2.0}) < median("random")


def test_transfer_finds_the_best_in_the_first_round() -> None:
    """Trained on other problems (k = 1, 2.1, 4: trees do not interpolate, but they find the
    similar problem), its first round on k = 2 holds a candidate within 2 % of the best;
    learning from itself alone, it starts at random."""
    cost = timing(2.0)
    best = min(cost(p) for p in space().points)
    searcher = make_strategy(
        "model", space(), features={"k": 2.0}, history=history([1.0, 2.1, 4.0]), transfer=True
    )
    first = drive(searcher, cost)[0]
    assert min(cost(p) for p in first) <= best * 1.02
    assert searcher.notes == []
    alone = [
        drive(make_strategy("model", space(), features={"k": 2.0}, seed=s), cost)[0]
        for s in range(3)
    ]
    assert not all(min(cost(p) for p in r) <= best * 1.02 for r in alone)


def test_transfer_with_no_compatible_history_says_so_and_falls_back() -> None:
    other_space = [({"k": 1.0}, {"TK": 1, "TH": 2}, 3.0)]  # another solver's parameters
    cost = timing(2.0)
    searcher = make_strategy(
        "model", space(), features={"k": 2.0}, history=other_space, transfer=True, budget=24
    )
    assert len(searcher.notes) == 1
    assert "no compatible history" in searcher.notes[0]
    assert "MR,NV,VW,KC" in searcher.notes[0]
    assert len(flat(drive(searcher, cost))) == 24  # it still searches, from its own data

    nothing = make_strategy("model", space(), features={"k": 2.0}, transfer=True)
    assert "no measurements of other problems were given" in nothing.notes[0]


def test_without_transfer_other_problems_are_not_learned_from() -> None:
    cost = timing(2.0)
    plain = make_strategy("model", space(), features={"k": 2.0}, seed=4)
    given = make_strategy(
        "model", space(), features={"k": 2.0}, seed=4, history=history([1.0, 3.0])
    )
    assert given.other_history == []
    assert flat(drive(plain, cost)) == flat(drive(given, cost))


def test_final_validation_measures_the_predicted_best_before_stopping() -> None:
    cost = timing(2.0)
    searcher = make_strategy(
        "model",
        space(),
        features={"k": 2.0},
        history=history([1.0, 3.0]),
        transfer=True,
        patience=8,
        round_size=4,
        validate=3,
    )
    rounds = drive(searcher, cost)
    assert searcher.stop_reason is not None and "no improvement" in searcher.stop_reason
    # The last round is the validation round: the model's top 3 unmeasured, measured for real.
    assert len(rounds[-1]) == 3
    measured = flat(rounds)
    assert searcher.get_best() == min(measured, key=cost)  # a measured point, never a guess
    assert isinstance(searcher, ModelSearch)


def test_own_earlier_measurements_count_as_the_problems_data() -> None:
    cost = timing(2.0)
    s = space()
    earlier = [({"k": 2.0}, p, cost(p)) for p in s.points[:20]]
    fresh = drive(make_strategy("model", s, features={"k": 2.0}, seed=1), cost)[0]
    resumed = make_strategy("model", s, features={"k": 2.0}, seed=1, history=earlier)
    assert len(resumed.own_history) == 20
    assert drive(resumed, cost)[0] != fresh  # ranked by the model, not random


def test_a_missing_model_library_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_lightgbm(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "lightgbm" or name.startswith("lightgbm."):
            raise ImportError("No module named 'lightgbm'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_lightgbm)
    with pytest.raises(ModelLibraryMissing, match=r"pip install 'tuna\[model\]'"):
        make_strategy("model", space(), features={"k": 1.0})
    make_strategy("random", space())  # the other strategies need no library


def test_the_model_is_deterministic_for_a_seed() -> None:
    cost = timing(3.0)
    kw: dict[str, Any] = {"features": {"k": 3.0}, "budget": 30, "seed": 2}
    assert flat(drive(make_strategy("model", space(), **kw), cost)) == flat(
        drive(make_strategy("model", space(), **kw), cost)
    )
    assert all(isinstance(r, list) for r in drive(make_strategy("model", space(), **kw), cost))
    assert Run  # the Runs are the tuna.searchers ones


def test_the_models_importance_is_what_its_ranking_trees_split_on() -> None:
    """Sent runs whose time only VW decides, the model that would rank the next round gives
    VW nearly all its split gain; a problem feature that never varies, none."""
    s = space()
    model = make_strategy("model", s, features={"k": 2.0}, seed=1)
    assert isinstance(model, ModelSearch)
    assert set(model.importance().values()) == {0.0}  # nothing measured: no trees
    taken = s.points[::3]
    model.take([Run({**p}, {"time_ms": 1.0 if p["VW"] == 8 else 3.0}) for p in taken])
    shares = model.importance()
    assert set(shares) == {"problem.k", "MR", "NV", "VW", "KC"}
    assert max(shares, key=lambda c: shares[c]) == "VW" and shares["VW"] > 0.9
    assert shares["problem.k"] == 0.0 and sum(shares.values()) == pytest.approx(1.0)
    assert len(model.measured) == len(taken) and model.best_value == 1.0
    with pytest.raises(SearcherError, match="is not a candidate of gemm-like"):
        model.take([Run({"MR": 3, "NV": 1, "VW": 4, "KC": 64}, {"time_ms": 1.0})])


def test_with_transfer_the_importance_counts_the_base_models_trees_too() -> None:
    """The base model learnt from problems of several k: the problem's feature shows, with
    no measurement of this problem yet."""
    model = make_strategy(
        "model", space(), features={"k": 2.0}, history=history([1.0, 2.1, 4.0]), transfer=True
    )
    assert isinstance(model, ModelSearch)
    shares = model.importance()
    assert shares["problem.k"] > 0 and sum(shares.values()) == pytest.approx(1.0)
    assert max(shares, key=lambda c: shares[c]) in ("MR", "NV", "problem.k")
