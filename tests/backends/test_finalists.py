"""Which candidates are re-timed before a winner is stored, and in which order
(``tuna.backends.finalists``): the fastest few, and a baseline beside them (issue #30)."""

from __future__ import annotations

from dataclasses import dataclass

from tuna.backends.finalists import FINALISTS, RETIME_TURNS, finalists, retime


@dataclass(frozen=True)
class Timed:
    params: str
    time_ms: float | None


MEASURED = [Timed("d", 9.0), Timed("a", 1.0), Timed("b", 2.0), Timed("x", None), Timed("c", 3.0)]
MEASURED += [Timed("e", 4.0), Timed("a", 0.5)]  # "a" timed twice: one finalist


def test_the_fastest_few_with_a_time_are_the_finalists():
    assert FINALISTS == 3
    assert finalists(MEASURED, lambda p: True) == ["a", "b", "c"]
    assert finalists(MEASURED, lambda p: p != "b") == ["a", "c", "e"]  # no kernel for "b"


def test_the_baseline_is_re_timed_beside_them_once():
    assert finalists(MEASURED, lambda p: True, "d") == ["a", "b", "c", "d"]
    assert finalists(MEASURED, lambda p: True, "b") == ["a", "b", "c"]  # one of them already


def test_a_baseline_that_failed_or_has_no_kernel_is_not_re_timed():
    assert finalists(MEASURED, lambda p: True, "x") == ["a", "b", "c"]  # it failed
    assert finalists(MEASURED, lambda p: p != "d", "d") == ["a", "b", "c"]
    assert finalists(MEASURED, lambda p: True, "nowhere") == ["a", "b", "c"]


def test_each_turn_times_every_one_the_order_rotated_and_a_cut_turn_ends_the_turns():
    orders: list[list[str]] = []

    def measure(order: list[str]) -> tuple[list[Timed], bool]:
        orders.append(order)
        return [Timed(p, 1.0) for p in order], True

    assert len(retime(["a", "b", "c", "d"], measure)) == 4 * RETIME_TURNS
    assert orders == [["a", "b", "c", "d"], ["b", "c", "d", "a"], ["c", "d", "a", "b"]]

    def cut(order: list[str]) -> tuple[list[Timed], bool]:  # a time budget ran out
        return [Timed(order[0], 1.0)], False

    assert [m.params for m in retime(["a", "b"], cut)] == ["a"]
    assert retime([], cut) == []
