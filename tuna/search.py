"""``tuna.search``: the name parameter files and the README import searchers by, for
:mod:`tuna.searchers` (the pure half of searches)::

    from tuna.search import Bisect, Composer, Step
"""

from __future__ import annotations

from tuna.searchers import *  # noqa: F403
from tuna.searchers import __all__ as __all__
