"""The dashboard's warm counts: stale-while-revalidate, freshness following the cost."""

from __future__ import annotations

import threading

from tests.support.clock import FakeClock
from tests.support.wait import wait_until
from tuna.dashboard.cache import WarmCache


class Counter:
    """A compute function that takes ``cost`` fake seconds and counts its calls."""

    def __init__(self, clock: FakeClock, cost: float) -> None:
        self.clock, self.cost, self.calls = clock, cost, 0
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self) -> int:
        self.gate.wait(10)
        self.calls += 1
        self.clock.advance(self.cost)
        return self.calls


def test_first_get_computes_then_a_stale_value_is_served_while_a_new_one_is_counted():
    clock = FakeClock()
    cache = WarmCache(min_age_s=1.0, cost_factor=10.0, clock=clock)
    count = Counter(clock, cost=0.5)  # a count that takes 0.5 s is fresh for 5 s
    assert cache.get("s1", count) == 1 and count.calls == 1
    assert cache.max_age("s1") == 5.0
    clock.advance(4.0)
    assert cache.get("s1", count) == 1 and count.calls == 1  # fresh: no recount
    clock.advance(2.0)
    count.gate.clear()
    assert cache.get("s1", count) == 1  # stale: the old value now, a recount behind it
    assert cache.get("s1", count) == 1  # one recount at a time
    count.gate.set()
    wait_until(lambda: cache.get("s1", count) == 2, "the background recount")
    assert count.calls == 2
    cache.close()


def test_cheap_values_are_recounted_now_once_older_than_min_age():
    clock = FakeClock()
    cache = WarmCache(min_age_s=1.0, cost_factor=10.0, clock=clock)
    count = Counter(clock, cost=0.01)
    assert cache.get("s2", count) == 1
    assert cache.max_age("s2") == 1.0
    clock.advance(0.5)
    assert cache.get("s2", count) == 1 and cache.age("s2") == 0.5
    clock.advance(1.0)
    assert cache.get("s2", count) == 2  # no stale value served: a cheap count is just redone
    assert cache.age("s2") == 0.0 and cache.age("never") is None
    cache.close()


def test_an_old_value_is_never_served_however_expensive_its_count():
    """The issue's page showed new=12 20 s after every job had compiled: the first view
    after a quiet spell served the value of the view before it."""
    clock = FakeClock()
    cache = WarmCache(min_age_s=1.0, cost_factor=10.0, stale_factor=3.0, clock=clock)
    count = Counter(clock, cost=0.5)  # fresh for 5 s, served stale up to 15 s
    assert cache.get("s3", count) == 1
    clock.advance(14.0)
    count.gate.clear()
    assert cache.get("s3", count) == 1  # stale within bounds: served, recounted behind it
    count.gate.set()
    wait_until(lambda: count.calls == 2, "the background recount")
    clock.advance(20.0)
    assert cache.get("s3", count) == 3  # 20 s old: counted again before the page is served
    cache.close()


def test_a_failed_background_recount_keeps_the_last_value():
    clock = FakeClock()
    cache = WarmCache(min_age_s=1.0, cost_factor=10.0, clock=clock)
    count = Counter(clock, cost=0.2)  # fresh for 2 s
    cache.get("s2", count)
    clock.advance(2.5)

    def broken() -> int:
        raise RuntimeError("server gone")

    assert cache.get("s2", broken) == 1
    wait_until(lambda: not cache._entries["s2"].refreshing, "the failed recount to finish")
    assert cache.get("s2", count) == 1  # still the last good value, and a new recount starts
    wait_until(lambda: cache.get("s2", count) == 2, "the next recount")
    cache.close()


def test_peek_never_computes_in_the_caller_and_wait_takes_the_same_computation():
    clock = FakeClock()
    cache = WarmCache(min_age_s=1.0, cost_factor=10.0, clock=clock)
    fit = Counter(clock, cost=1.0)  # fresh for 10 s
    fit.gate.clear()
    assert cache.peek("fit", fit) is None  # started in the background, not waited for
    assert cache.peek("fit", fit) is None  # the same one, still running
    fit.gate.set()
    assert cache.wait("fit", fit) == 1 and fit.calls == 1  # waited for, not started again
    assert cache.peek("fit", fit) == 1
    clock.advance(15.0)  # stale, within 3x its freshness: the old value, a refit behind it
    fit.gate.clear()
    assert cache.peek("fit", fit) == 1
    fit.gate.set()
    wait_until(lambda: cache.peek("fit", fit) == 2, "the background refit")
    clock.advance(100.0)  # far too old to show: like no value at all
    fit.gate.clear()
    assert cache.peek("fit", fit) is None
    fit.gate.set()
    assert cache.wait("fit", fit) == 3 and fit.calls == 3
    cache.close()


def test_a_failed_background_computation_is_raised_by_wait_and_tried_again():
    cache = WarmCache()
    failing = [True]

    def fit() -> int:
        if failing[0]:
            raise ValueError("no model")
        return 7

    assert cache.peek("fit", fit) is None
    try:
        cache.wait("fit", fit)
    except ValueError as e:
        assert str(e) == "no model"
    else:
        raise AssertionError("wait did not raise the computation's error")
    failing[0] = False
    assert cache.peek("fit", fit) is None  # nothing kept of the failure: started again
    assert cache.wait("fit", fit) == 7
    cache.close()
