"""Searches over the job queue (issue #15): creating them, driving them, reading them.

:mod:`tuna.searches.create` checks a search and stores it; :mod:`tuna.searches.drive`
turns its searcher's proposals into build and run jobs (written by
:mod:`tuna.searches.enqueue`) and feeds finished Runs back (read by
:mod:`tuna.searches.runrows`); :mod:`tuna.searches.active` drives a session's active
searches inside go_fish or ``tuna search run``; :mod:`tuna.searches.query` is the read side
of what the driver records (:mod:`tuna.searches.curve`: its best-so-far curve).
:mod:`tuna.searches.tune` is ``tuna.tune`` and ``tuna.study``, a study stored as a search
and driven in this process. The pure half (parameter files, searchers, replay) is
:mod:`tuna.searchers`; the benchmark half the ``bench`` backend.
"""

from __future__ import annotations

from tuna.searches.active import SessionSearches
from tuna.searches.create import SearchRequest, check_request, create_search, make_searcher
from tuna.searches.drive import SearchDriver

__all__ = [
    "SearchDriver",
    "SearchRequest",
    "SessionSearches",
    "check_request",
    "create_search",
    "make_searcher",
]
