"""The tuning library: what history a target has, how much effort it holds, what is best.

* :mod:`tuna.library.effort`: measurements spent per (problem, solver, platform, strategy);
  what ``load_jobs --min-trials`` skips;
* :mod:`tuna.library.best`: the best known configuration per problem across sessions;
* :mod:`tuna.library.prune`: ``tuna history prune --keep-best K``;
* :func:`open`: the Python API (``with tuna.library.open(url, ...) as lib: lib.best(p)``).

Which rows count is decided by the session rules (:mod:`tuna.sessions.rules`).
"""

from __future__ import annotations

from tuna.library.api import Library, open
from tuna.library.best import Best

__all__ = ["Best", "Library", "open"]
