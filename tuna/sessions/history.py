"""Which sessions' rows count for a session, from the database: rules, retirement, eligibility.

:func:`eligibility` evaluates :func:`tuna.sessions.rules.excluded_by` over every session
row (and every platform row, when the rules name platform fields) and returns an
:class:`Eligibility`: the sessions and platforms whose rows count, why each other one does
not, and the time cutoff of ``max_age``. :meth:`Eligibility.where` turns that into the SQL
conditions that skip (``load_jobs``), resume and transfer (searches), ``tuna best`` and
exports put on their large tables, so the one rule decides everywhere.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import ColumnElement, or_, select, update
from sqlalchemy.orm import Session as OrmSession

from tuna.backends.base import SessionInfo
from tuna.db import Database
from tuna.db.clock import db_now
from tuna.db.models import TuningSession
from tuna.errors import TunaError
from tuna.sessions.rules import HistoryRules, HistorySession, excluded_by
from tuna.sessions.session import session_info, session_row


class RetiredSessionError(TunaError):
    """Raised when a retired session's results are asked for (an export, a golden version)."""


def rules_of(info: SessionInfo) -> HistoryRules:
    """The rules stored with a session (the defaults when none)."""
    return HistoryRules.from_json(info.history_rules)


def set_rules(db: Database, session_id: int, rules: HistoryRules) -> SessionInfo:
    """Store ``rules`` with the session (they replace the old ones)."""
    with db.session() as s:
        row = session_row(s, session_id)
        row.history_rules = rules.to_json() or None
        s.flush()
        return session_info(row)


def retire(db: Database, session_id: int, reason: str | None = None) -> SessionInfo:
    """Take the session's results out of every later decision; its rows stay."""
    if reason is not None and len(reason) > 255:
        raise TunaError("--reason: at most 255 characters")
    with db.session() as s:
        row = session_row(s, session_id)
        if row.retired is not None:
            raise TunaError(
                f"session {session_id} is already retired (since {row.retired:%Y-%m-%d %H:%M}); "
                f"`tuna session unretire -s {session_id}` brings it back"
            )
        s.execute(
            update(TuningSession)
            .where(TuningSession.id == session_id)
            .values(retired=db_now(), retired_reason=reason)
        )
        s.refresh(row)
        return session_info(row)


def unretire(db: Database, session_id: int) -> SessionInfo:
    """Let a retired session's results count again."""
    with db.session() as s:
        row = session_row(s, session_id)
        if row.retired is None:
            raise TunaError(f"session {session_id} is not retired; nothing to undo")
        row.retired, row.retired_reason = None, None
        s.flush()
        return session_info(row)


def check_not_retired(info: SessionInfo, what: str) -> None:
    """:class:`RetiredSessionError` naming the way back when ``info`` is retired."""
    if info.retired is not None:
        why = f" ({info.retired_reason})" if info.retired_reason else ""
        raise RetiredSessionError(
            f"session {info.id} is retired{why}: its results leave every {what}; "
            f"`tuna session unretire -s {info.id}` brings them back"
        )


@dataclass(frozen=True)
class Target:
    """A target that is not a session (``tuna best -a ARCH -n CUS``): no library of its own,
    so only the ``any`` library rule (with ``library_min``) applies."""

    arch: str
    num_cu: int
    backend: str
    id: int = 0
    library_version: str | None = None
    library_commit: str | None = None
    fingerprint: str = ""


@dataclass(frozen=True)
class Eligibility:
    """The sessions (and platforms) whose rows count for a target, and why the rest do not."""

    target: HistorySession
    rules: HistoryRules
    sessions: tuple[int, ...]
    excluded: Mapping[int, str]  # session id -> the rule that excluded it
    since: dt.datetime | None  # rows taken before this (a midnight) stop counting (max_age)
    now: dt.datetime
    platforms: tuple[int, ...] | None = None  # None: any platform counts
    excluded_platforms: Mapping[int, str] = field(default_factory=dict)

    def where(
        self, session: Any, taken: Any = None, platform: Any = None
    ) -> list[ColumnElement[bool]]:
        """SQL conditions selecting the rows that count, on a table's session, time and
        platform columns (``taken``/``platform`` None: that table has none)."""
        conds: list[ColumnElement[bool]] = [session.in_(self.sessions)]
        if taken is not None and self.since is not None:
            cond = taken >= self.since
            nullable = getattr(getattr(taken, "expression", taken), "nullable", False)
            conds.append(or_(taken.is_(None), cond) if nullable else cond)
        if platform is not None and self.platforms is not None:
            conds.append(platform.in_(self.platforms))
        return conds

    def where_day(self, session: Any, day: Any, platform: Any) -> list[ColumnElement[bool]]:
        """:meth:`where` on a table kept per day (``measurement_effort``): ``max_age`` cuts
        at day granularity there, so a day counts whole when its date is the cutoff's."""
        conds = self.where(session, None, platform)
        if self.since is not None:
            conds.append(day >= self.since.date())
        return conds

    def counts(self, session: int, taken: dt.datetime | None = None) -> bool:
        """Whether a row of ``session`` taken at ``taken`` counts (Python side of :meth:`where`)."""
        if session not in self.sessions:
            return False
        return self.since is None or taken is None or taken >= self.since

    def exclusions(self) -> Counter[str]:
        """Rule -> how many sessions (and platforms) it excluded."""
        found = Counter(self.excluded.values())
        found.update(self.excluded_platforms.values())
        return found

    def explain(self) -> list[str]:
        """Lines saying which rule excluded which sessions, for messages."""
        by_rule: dict[str, list[int]] = {}
        for sid, rule in sorted(self.excluded.items()):
            by_rule.setdefault(rule, []).append(sid)
        lines = [f"{rule}: session(s) {', '.join(map(str, ids))}" for rule, ids in by_rule.items()]
        if self.excluded_platforms:
            by_rule = {}
            for pid, rule in sorted(self.excluded_platforms.items()):
                by_rule.setdefault(rule, []).append(pid)
            lines += [
                f"{rule}: platform(s) {', '.join(map(str, ids))}" for rule, ids in by_rule.items()
            ]
        if self.since is not None:
            lines.append(
                f"max_age: rows taken before {self.since:%Y-%m-%d %H:%M:%S} "
                f"(--max-age {self.rules.max_age.text if self.rules.max_age else ''})"
            )
        return lines


def eligibility(
    s: OrmSession,
    target: SessionInfo | Target,
    rules: HistoryRules | None = None,
    *,
    include_target: bool = True,
) -> Eligibility:
    """Which sessions' rows count for ``target`` under ``rules`` (default: the target
    session's own rules). ``include_target``: whether the target's own rows count."""
    if rules is None:
        rules = rules_of(target) if isinstance(target, SessionInfo) else HistoryRules(library="any")
    if isinstance(target, Target) and rules.library in ("fingerprint", "same", "version"):
        raise TunaError(
            f"the library rule {rules.library!r} compares with a session's library: give "
            "--session S, or --library any (with --library-min V for the oldest that counts)"
        )
    now = s.scalar(select(db_now()))
    assert now is not None
    counting: list[int] = []
    excluded: dict[int, str] = {}
    for row in s.scalars(select(TuningSession).order_by(TuningSession.id)):
        if row.id == target.id and not include_target:
            continue
        rule = excluded_by(rules, target, session_info(row), retired=row.retired is not None)
        if rule is None:
            counting.append(row.id)
        else:
            excluded[row.id] = rule
    since = rules.max_age.cutoff(now) if rules.max_age is not None else None
    found = Eligibility(target, rules, tuple(counting), excluded, since, now)
    if rules.platform:
        found = _with_platforms(s, found)
    return found


def _with_platforms(s: OrmSession, found: Eligibility) -> Eligibility:
    """Restrict ``found`` to the platforms whose JSON holds the rule's fields."""
    from tuna.db.models import Platform  # the platform table (issue #17's measurements)

    counting: list[int] = []
    excluded: dict[int, str] = {}
    for pid, info in s.execute(select(Platform.id, Platform.info)):
        target = found.target
        rule = excluded_by(found.rules, target, target, platform=info or {})
        if rule is None:
            counting.append(pid)
        else:
            excluded[pid] = rule
    return replace(found, platforms=tuple(counting), excluded_platforms=excluded)
