"""Tuning sessions: what is tuned, where, with which library build; its solvers and their
applicability.

:mod:`tuna.sessions.session` holds the session (its one loader :func:`get_session`, its one
existence check :func:`session_row`) and the solver table a session's backend defines;
:mod:`tuna.sessions.applicability` what that backend's library says applies to which config.
A session is seen outside the database as :class:`tuna.backends.SessionInfo`.
"""

from __future__ import annotations

from tuna.backends.base import SessionInfo
from tuna.sessions.session import (
    RUNTIMES,
    SessionSpec,
    SolverRow,
    SolverUpdate,
    add_session,
    create_session,
    fingerprint,
    get_session,
    list_sessions,
    list_solvers,
    no_session,
    session_info,
    session_row,
    sync_solvers,
    update_solvers,
)

__all__ = [
    "RUNTIMES",
    "SessionInfo",
    "SessionSpec",
    "SolverRow",
    "SolverUpdate",
    "add_session",
    "create_session",
    "fingerprint",
    "get_session",
    "list_sessions",
    "list_solvers",
    "no_session",
    "session_info",
    "session_row",
    "sync_solvers",
    "update_solvers",
]
