"""``tuna.search``, the name parameter files import searchers by, is tuna.searchers."""

from __future__ import annotations

import tuna.search
import tuna.searchers


def test_tuna_search_offers_every_public_name_of_tuna_searchers_as_the_same_object():
    assert tuna.search.__all__ == tuna.searchers.__all__
    for name in tuna.searchers.__all__:
        assert getattr(tuna.search, name) is getattr(tuna.searchers, name), name
